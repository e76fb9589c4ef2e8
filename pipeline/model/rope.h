// Rope: rotary position embedding for one model, applied in place to the
// query/key heads of a row.
//
// Frequencies: inv_freq[i] = theta^(-2i/d) for i < d/2, then Llama-3 scaling
// when configured, then divided by per-frequency factors when the model file
// carries them (GGUF `rope_freqs.weight`). Pairing follows config.rope_style:
// adjacent pairs (GGUF-permuted q/k) or halves (Hugging Face layout).
// Thread-safety: immutable after construction; Apply is reentrant.
#pragma once

#include <cstdint>
#include <vector>

#include "pipeline/model_config.h"

namespace troupe {

class Rope {
 public:
  // `freq_factors`: empty, or head_dim/2 divisors of the frequencies.
  Rope(const ModelConfig& config, std::vector<float> freq_factors = {});

  // Rotates `n_heads` heads of head_dim floats each, stored back to back at x,
  // for position `pos`. `cos_sin` must come from Angles(pos).
  void Apply(float* x, int64_t n_heads, const float* cos_sin) const;
  // cos/sin for position `pos`: head_dim floats (cos[0..d/2), sin[0..d/2)).
  void Angles(int64_t pos, float* cos_sin) const;

  int64_t head_dim() const { return head_dim_; }
  const std::vector<float>& inv_freq() const { return inv_freq_; }

 private:
  int64_t head_dim_;
  RopeStyle style_;
  std::vector<float> inv_freq_;  // [head_dim / 2]
  float step_ = 1.0f;            // theta^(-2/d)
  bool plain_ = true;            // no scaling: angles by running product
};

}  // namespace troupe
