// Test helpers for troupe_quant: random weight matrices in every supported
// encoding (valid blocks with finite scales) and random activations.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "pipeline/quant/half.h"
#include "pipeline/tensor_view.h"

namespace troupe {
namespace testing_util {

inline void PutU16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, sizeof v); }
inline uint16_t U16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// ggml's hsum_float_8 on eight lanes: ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)).
inline float Hsum8(const float a[8]) {
  const float r0 = a[0] + a[4], r1 = a[1] + a[5], r2 = a[2] + a[6], r3 = a[3] + a[7];
  return (r0 + r2) + (r1 + r3);
}

// rows x cols weights of `type` with random payload bytes and scales drawn so
// values stay O(0.1), like trained linear weights.
inline std::vector<uint8_t> RandomMatrix(GgmlType type, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  const int64_t n_blocks = rows * cols / ggml_block_values(type);
  const int64_t bb = ggml_block_bytes(type);
  std::vector<uint8_t> out(static_cast<size_t>(n_blocks * bb));
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t* p = out.data() + b * bb;
    for (int64_t k = 0; k < bb; ++k) p[k] = static_cast<uint8_t>(byte(rng));
    switch (type) {
      case GgmlType::F32: {
        const float v = normal(rng);
        std::memcpy(p, &v, sizeof v);
        break;
      }
      case GgmlType::F16: PutU16(p, Fp32ToFp16(normal(rng))); break;
      case GgmlType::BF16: PutU16(p, Fp32ToBf16(normal(rng))); break;
      case GgmlType::Q4_0: PutU16(p, Fp32ToFp16(0.002f + 0.02f * uni(rng))); break;
      case GgmlType::Q4_1:
        PutU16(p, Fp32ToFp16(0.002f + 0.02f * uni(rng)));
        PutU16(p + 2, Fp32ToFp16(-0.2f * uni(rng)));
        break;
      case GgmlType::Q5_0: PutU16(p, Fp32ToFp16(0.001f + 0.01f * uni(rng))); break;
      case GgmlType::Q8_0: PutU16(p, Fp32ToFp16(0.0002f + 0.002f * uni(rng))); break;
      case GgmlType::Q4_K:  // scale bytes stay random: every 6-bit value is valid
      case GgmlType::Q5_K:
        PutU16(p, Fp32ToFp16(0.0001f + 0.0005f * uni(rng)));
        PutU16(p + 2, Fp32ToFp16(0.0001f + 0.0005f * uni(rng)));
        break;
      case GgmlType::Q6_K: PutU16(p + 208, Fp32ToFp16(0.00002f + 0.0001f * uni(rng))); break;
    }
  }
  return out;
}

// n x cols activations: normal values with a few larger outliers per row, as
// hidden states have.
inline std::vector<float> RandomActivations(int64_t n, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int64_t> col(0, cols - 1);
  std::vector<float> x(static_cast<size_t>(n * cols));
  for (float& v : x) v = normal(rng);
  for (int64_t t = 0; t < n; ++t) {
    for (int k = 0; k < 3; ++k) x[t * cols + col(rng)] *= 8.0f;
  }
  return x;
}

}  // namespace testing_util
}  // namespace troupe
