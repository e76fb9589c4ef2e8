// Activation quantization: the fp32 input rows of QuantMatrix::Multiply are
// quantized once per call to 8 bits so the weight dot products run on integer
// SIMD (as llama.cpp's CPU path does).
//
// Each weight type has a matching activation layout, arranged so the SIMD
// kernels load activations with plain aligned loads:
//   kQ8x4 (Q4_0, Q4_1): groups of 4 blocks of 32 values, low and high halves
//                       of each block split to line up with the weight nibbles.
//   kQ8x2 (Q8_0):       groups of 2 blocks of 32 values, natural order.
//   kQ8K  (Q6_K):       256-value super-blocks, natural order, with sums.
//   kQ8KPaired (Q4_K):  as kQ8K with each 128 values stored as [0..31,
//                       64..95, 32..63, 96..127] to match Q4_K's nibbles.
//   kNone (F32, F16, BF16): no quantization; kernels read fp32 directly.
// Every block has its own scale d = max|x| / 127 and values q = round(x / d)
// in [-127, 127], so |x - q * d| <= d / 2. Rows are zero-padded to whole
// groups; padding has d = 0 and contributes nothing.
//
// Buffers are plain memory owned by the caller; row starts must be 64-byte
// aligned (ActRowBytes is a multiple of 64). Functions are pure and
// thread-safe.
#pragma once

#include <cstdint>

#include "pipeline/tensor_view.h"

namespace troupe {

enum class ActLayout { kNone, kQ8x4, kQ8x2, kQ8K, kQ8KPaired };
constexpr int kActLayouts = 5;

ActLayout ActLayoutFor(GgmlType weight_type);

// Q4_0/Q4_1 layout, 128 values. Block k of the group (values 32k..32k+31):
// lo[16k + j] = q[32k + j], hi[16k + j] = q[32k + 16 + j] (j < 16);
// ds[2k] = d_k, ds[2k + 1] = d_k * sum(q of block k) (the term the Q4_1 min
// and the Q4_0 offset multiply).
struct alignas(64) ActGroupQ8x4 {
  int8_t lo[64];
  int8_t hi[64];
  float ds[8];
  float pad[8];
};

// Q8_0 layout, 64 values. Block k: q[32k + j] = value j; d[k] = d_k;
// corr[k] = 128 * sum(q of block k), the term that turns an unsigned-by-
// signed dot of (w XOR 0x80) into the signed dot of w.
struct alignas(64) ActGroupQ8x2 {
  int8_t q[64];
  float d[2];
  int32_t corr[2];
  uint8_t pad[48];
};

// Q4_K/Q6_K layout, 256 values, one scale. bsum16[i] = sum of values
// 16i..16i+15, bsum32[i] = sum of values 32i..32i+31 (in value order, which
// is q's order for kQ8K; kQ8KPaired stores value 128h + 64a + 32b + l at
// q[128h + 64b + 32a + l]).
struct alignas(64) ActBlockQ8K {
  int8_t q[256];
  int16_t bsum16[16];
  int16_t bsum32[8];
  float d;
  uint8_t pad[12];
};

static_assert(sizeof(ActGroupQ8x4) == 192, "");
static_assert(sizeof(ActGroupQ8x2) == 128, "");
static_assert(sizeof(ActBlockQ8K) == 320, "");

// Values per group/super-block of the layout (0 for kNone).
int64_t ActGroupValues(ActLayout layout);
// Bytes of one quantized row of `cols` values (0 for kNone); a multiple of 64.
int64_t ActRowBytes(ActLayout layout, int64_t cols);
// Quantizes x[0, cols) into dst[0, ActRowBytes(layout, cols)). cols must be a
// multiple of 32 (256 for kQ8K). Blocks with max|x| < 1e-30 become zeros.
// Non-finite inputs give unspecified results. Uses AVX-512 when compiled in.
void QuantizeActRow(ActLayout layout, const float* x, int64_t cols, uint8_t* dst);
// The portable version; produces the same bytes as QuantizeActRow.
void QuantizeActRowScalar(ActLayout layout, const float* x, int64_t cols, uint8_t* dst);

}  // namespace troupe
