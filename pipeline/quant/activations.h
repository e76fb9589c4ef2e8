// Activation quantization: the fp32 input rows of QuantMatrix::Multiply are
// quantized once per call to 8 bits so the weight dot products run on integer
// SIMD, exactly as llama.cpp's CPU backend quantizes them (ggml's
// vec_dot_type of each weight type). The int8 values and scales are the same
// bits ggml computes, so our rounding error and llama.cpp's are the same error
// rather than two independent ones:
//   Q4_0, Q5_0, Q8_0 weights -> ggml Q8_0; Q4_1 -> ggml Q8_1 (quantize_row_q8_0/_1,
//     x86 path), per block of 32 values:
//       amax = max|x|, d = amax / 127 (fp32), id = amax != 0 ? 127 / amax : 0,
//       q = round-half-even(x * id); the scale used is fp16(d) (binary16,
//       round to nearest even, widened back to fp32), and Q8_1 adds
//       s = fp16(d * sum(q)) (fp32 d, not the rounded one).
//   Q4_K, Q5_K, Q6_K weights -> ggml Q8_K (quantize_row_q8_K_ref), per 256 values:
//       max = the first value of largest magnitude (with its sign),
//       iscale = -127 / max, q = min(127, round-half-even(iscale * x)),
//       d = 1 / iscale (fp32; negative when max > 0, q then has flipped
//       signs), bsums = sums of q over each 16 values.
// So |x - q * d_used| <= |d| / 2 + 127 * |d_used - d| for every value, where
// d_used = fp16(d) for 32-value blocks (|fp16(d) - d| <= 2^-11 d, or 2^-25
// for subnormal binary16) and d_used = d for Q8_K. A block whose 127 / amax
// overflows fp32 (amax < ~3.7e-37, where ggml's values are meaningless) gets
// q = 0; its fp16 scale is 0, so it contributes nothing either way.
//
// Each weight type has a matching activation layout, arranged so the SIMD
// kernels load activations with plain aligned loads:
//   kQ8x2 (Q4_0, Q4_1, Q5_0, Q8_0): groups of 2 blocks of 32 values, natural
//                       order (the order ggml's x86 dot products use).
//   kQ8K  (Q5_K, Q6_K):       256-value super-blocks, natural order, with sums.
//   kQ8KPaired (Q4_K):  as kQ8K with each 128 values stored as [0..31,
//                       64..95, 32..63, 96..127] to match Q4_K's nibbles.
//   kNone (F32, F16, BF16): no quantization; kernels read fp32 directly.
// Rows are zero-padded to whole groups; padding has d = 0 and q = 0.
//
// Buffers are plain memory owned by the caller; row starts must be 64-byte
// aligned (ActRowBytes is a multiple of 64). Functions are pure and
// thread-safe, and a row's bytes depend only on that row.
#pragma once

#include <cstdint>

#include "pipeline/tensor_view.h"

namespace troupe {

enum class ActLayout { kNone, kQ8x2, kQ8K, kQ8KPaired };
constexpr int kActLayouts = 4;

ActLayout ActLayoutFor(GgmlType weight_type);

// Q8_0 / Q8_1 layout, 64 values. Block k: q[32k + j] = value j;
// d[k] = fp16(d_k); s[k] = fp16(d_k * sum_k) (ggml Q8_1's s, which Q4_1's m
// multiplies); corr[k] = 128 * sum(q of block k), the term that turns an
// unsigned-by-signed dot of (w XOR 0x80) into the signed dot of w.
struct alignas(64) ActGroupQ8x2 {
  int8_t q[64];
  float d[2];
  float s[2];
  int32_t corr[2];
  uint8_t pad[40];
};

// Q4_K/Q6_K layout, 256 values, one scale d = 1 / iscale (ggml Q8_K).
// bsum16[i] = sum of values 16i..16i+15, bsum32[i] = sum of values
// 32i..32i+31 (in value order, which is q's order for kQ8K; kQ8KPaired
// stores value 128h + 64a + 32b + l at q[128h + 64b + 32a + l]).
struct alignas(64) ActBlockQ8K {
  int8_t q[256];
  int16_t bsum16[16];
  int16_t bsum32[8];
  float d;
  uint8_t pad[12];
};

static_assert(sizeof(ActGroupQ8x2) == 128, "");
static_assert(sizeof(ActBlockQ8K) == 320, "");

// Values per group/super-block of the layout (0 for kNone).
int64_t ActGroupValues(ActLayout layout);
// Bytes of one quantized row of `cols` values (0 for kNone); a multiple of 64.
int64_t ActRowBytes(ActLayout layout, int64_t cols);
// Quantizes x[0, cols) into dst[0, ActRowBytes(layout, cols)) as described
// above. cols must be a multiple of 32 (256 for kQ8K / kQ8KPaired).
// Non-finite inputs give unspecified results. Uses AVX-512 when compiled in
// (else AVX2 for the 32-value blocks).
void QuantizeActRow(ActLayout layout, const float* x, int64_t cols, uint8_t* dst);
// Row pairs, for layout kQ8x2 (the paired kernels of kernels_avx512_pairs.cpp):
// block b of activation rows 2k and 2k + 1 side by side, so one 512-bit
// register holds the same block of two rows and one instruction serves both
// (a row past n, when n is odd, is all zeros). Pair k's block b is
// ActPairBlock number k * blocks + b, blocks = cols / 32:
//   q     block b of row 2k, then of row 2k + 1;
//   d     d of row 2k eight times, then d of row 2k + 1 eight times;
//   corr  per ggml lane (values 4p..4p + 3 of the block, p < 8; lanes 8..15
//         for row 2k + 1): 128 * their sum, the correction of a dot with
//         (w XOR 0x80) (Q8_0); an eighth of it corrects (w + 16) (Q5_0).
// After the pairs, the s of each octet of rows (8o..8o + 7, zero past n) per
// block: floats [(o * blocks + b) * 8 + j], j < 8, for Q4_1's min terms.
// BuildActPairs fills ActPairsBytes(n, cols) bytes (64-byte aligned dst) from
// n rows quantized as kQ8x2, xq_stride bytes apart.
struct alignas(64) ActPairBlock {
  int8_t q[64];
  float d[16];
  int32_t corr[16];
};
static_assert(sizeof(ActPairBlock) == 192, "");
int64_t ActPairsBytes(int64_t n, int64_t cols);
// The octet scales' offset in floats from the start of the pair buffer.
int64_t ActPairsOctetOffset(int64_t n, int64_t cols);
void BuildActPairs(const uint8_t* xq, int64_t xq_stride, int64_t n, int64_t cols, uint8_t* dst);
// Row lanes, for layout kQ8x2 and at most kLaneRows rows (the lane kernels
// of kernels_avx512_lanes.cpp): block b of every row with ggml lane p of the
// block (values 4p..4p + 3) of all the rows side by side, so one 512-bit
// register holds lane p of 16 rows and one VNNI dot against a broadcast
// weight dword serves 16 outputs. ActLaneBlock number b:
//   x  x[p][4t + k] = value 4p + k of row t, plus 128 (unsigned; rows past
//      n hold 128, value 0)
//   d  d of row t (0 past n)
//   s  s of row t, for Q4_1's min terms (0 past n)
// BuildActLanes fills ActLanesBytes(cols) bytes (64-byte aligned dst) from n
// rows quantized as kQ8x2, xq_stride bytes apart.
constexpr int64_t kLaneRows = 16;
struct alignas(64) ActLaneBlock {
  uint8_t x[8][4 * kLaneRows];
  float d[kLaneRows];
  float s[kLaneRows];
};
static_assert(sizeof(ActLaneBlock) == 640, "");
int64_t ActLanesBytes(int64_t cols);
void BuildActLanes(const uint8_t* xq, int64_t xq_stride, int64_t n, int64_t cols, uint8_t* dst);
// The portable version; produces the same bytes as QuantizeActRow.
void QuantizeActRowScalar(ActLayout layout, const float* x, int64_t cols, uint8_t* dst);

}  // namespace troupe
