#include "pipeline/model/rope.h"

#include <cmath>

namespace troupe {

Rope::Rope(const ModelConfig& c, std::vector<float> freq_factors)
    : head_dim_(c.head_dim), style_(c.rope_style), inv_freq_(c.head_dim / 2) {
  const int64_t half = head_dim_ / 2;
  const RopeScaling& s = c.rope_scaling;
  // theta^(-2i/d) as a running product in fp32, the way llama.cpp computes it,
  // so that both engines rotate by bit-identical angles.
  const float step = std::pow(c.rope_theta, -2.0f / static_cast<float>(head_dim_));
  step_ = step;
  plain_ = !(s.llama3 && s.factor != 1.0f) && freq_factors.empty();
  float base = 1.0f;
  for (int64_t i = 0; i < half; ++i, base *= step) {
    double f = base;
    if (s.llama3 && s.factor != 1.0f) {
      // Llama-3.1: long wavelengths are slowed by `factor`, short ones kept,
      // and the band between is interpolated smoothly.
      const double low_wavelen = s.original_max_positions / s.low_freq_factor;
      const double high_wavelen = s.original_max_positions / s.high_freq_factor;
      const double wavelen = 2.0 * M_PI / f;
      if (wavelen > low_wavelen) {
        f = f / s.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth =
            (s.original_max_positions / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f = (1.0 - smooth) * f / s.factor + smooth * f;
      }
    }
    inv_freq_[i] = static_cast<float>(f);
    if (static_cast<int64_t>(freq_factors.size()) == half) inv_freq_[i] /= freq_factors[i];
  }
}

void Rope::Angles(int64_t pos, float* cos_sin) const {
  const int64_t half = head_dim_ / 2;
  if (plain_) {  // pos * step^i as llama.cpp's running product
    float angle = static_cast<float>(pos);
    for (int64_t i = 0; i < half; ++i, angle *= step_) {
      cos_sin[i] = std::cos(angle);
      cos_sin[half + i] = std::sin(angle);
    }
    return;
  }
  for (int64_t i = 0; i < half; ++i) {
    const float angle = static_cast<float>(pos) * inv_freq_[i];
    cos_sin[i] = std::cos(angle);
    cos_sin[half + i] = std::sin(angle);
  }
}

void Rope::Apply(float* x, int64_t n_heads, const float* cos_sin) const {
  const int64_t half = head_dim_ / 2;
  const float* cs = cos_sin;
  const float* sn = cos_sin + half;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim_;
    if (style_ == RopeStyle::kAdjacentPairs) {
      // ggml's rotate_pairs as GCC compiles it (fp-contract=fast, seen in
      // the disassembly of llama.cpp's libggml-cpu): a cos - (b sin) and
      // a sin + (b cos), the products with a fused (one rounding).
      for (int64_t i = 0; i < half; ++i) {
        const float a = v[2 * i], b = v[2 * i + 1];
        v[2 * i] = std::fma(a, cs[i], -(b * sn[i]));
        v[2 * i + 1] = std::fma(a, sn[i], b * cs[i]);
      }
    } else {
      for (int64_t i = 0; i < half; ++i) {
        const float a = v[i], b = v[i + half];
        v[i] = std::fma(a, cs[i], -(b * sn[i]));
        v[i + half] = std::fma(a, sn[i], b * cs[i]);
      }
    }
  }
}

}  // namespace troupe
