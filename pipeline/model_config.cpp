#include "pipeline/model_config.h"

namespace troupe {

std::string ModelConfig::Validate() const {
  auto positive = [](int64_t v) { return v > 0; };
  if (!positive(n_layers)) return "n_layers must be positive";
  if (!positive(hidden)) return "hidden size must be positive";
  if (!positive(n_heads)) return "n_heads must be positive";
  if (!positive(n_kv_heads)) return "n_kv_heads must be positive";
  if (n_heads % n_kv_heads != 0) return "n_heads must be a multiple of n_kv_heads";
  if (!positive(head_dim) || head_dim % 2 != 0) return "head_dim must be positive and even";
  if (!positive(intermediate)) return "intermediate size must be positive";
  if (!positive(vocab)) return "vocabulary size must be positive";
  if (!positive(max_positions)) return "max_positions must be positive";
  if (!(rms_eps > 0)) return "rms_eps must be positive";
  if (!(rope_theta > 0)) return "rope_theta must be positive";
  if (sliding_window < 0) return "sliding_window must not be negative";
  if (!sliding_layers.empty() && static_cast<int64_t>(sliding_layers.size()) != n_layers)
    return "sliding_layers must name every layer";
  if (!sliding_layers.empty() && !(rope_theta_sliding > 0)) return "rope_theta_sliding must be positive";
  return "";
}

}  // namespace troupe
