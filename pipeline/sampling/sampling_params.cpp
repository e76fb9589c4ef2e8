#include "pipeline/sampling/sampling_params.h"

#include <cmath>
#include <sstream>

namespace troupe {
namespace {

template <class T>
Status Bad(const char* field, T value, const char* rule) {
  std::ostringstream os;
  os << "SamplingParams." << field << " = " << value << ": " << rule;
  return Status::InvalidArgument(os.str());
}

}  // namespace

Status SamplingParams::Validate() const {
  if (!std::isfinite(temperature)) {
    return Bad("temperature", temperature, "must be finite (<= 0 means greedy)");
  }
  if (top_k < 0) return Bad("top_k", top_k, "must be >= 0 (0 = off)");
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    return Bad("top_p", top_p, "must be in (0, 1] (1 = off)");
  }
  if (!(min_p >= 0.0f && min_p <= 1.0f)) {
    return Bad("min_p", min_p, "must be in [0, 1] (0 = off)");
  }
  if (!(top_a >= 0.0f && std::isfinite(top_a))) {
    return Bad("top_a", top_a, "must be finite and >= 0 (0 = off)");
  }
  if (!(repeat_penalty > 0.0f && std::isfinite(repeat_penalty))) {
    return Bad("repeat_penalty", repeat_penalty, "must be finite and > 0 (1 = off)");
  }
  if (repeat_last_n < -1) {
    return Bad("repeat_last_n", repeat_last_n, "must be >= -1 (0 = off, -1 = whole history)");
  }
  if (min_tokens < 0) return Bad("min_tokens", min_tokens, "must be >= 0");
  if (max_tokens < 1) return Bad("max_tokens", max_tokens, "must be >= 1");
  if (top_logprobs < -1 || top_logprobs > 20) {
    return Bad("top_logprobs", top_logprobs, "must be in [0, 20] (-1 = no logprobs)");
  }
  for (size_t i = 0; i < stop.size(); ++i) {
    if (stop[i].empty()) {
      const std::string field = "stop[" + std::to_string(i) + "]";
      return Bad(field.c_str(), "\"\"", "must not be empty");
    }
  }
  return Status::Ok();
}

}  // namespace troupe
