// Portable reference kernels: one weight row against one activation row at a
// time, integer block dots in int32, fp32 accumulation. The SIMD kernels
// compute the same sums and are tested against these (within rounding).
// Q4_0, Q4_1, Q5_0 and Q8_0 follow ggml's portable *_generic loops (what
// llama.cpp runs on a CPU without AVX2, which neither repacks); Q4_K and Q6_K
// sum in their own order, not ggml's generic one.

#include <cstring>

// ggml's portable code is compiled for CPUs without FMA: no fused multiply-adds.
#pragma GCC optimize("fp-contract=off")

#include "pipeline/quant/activations.h"
#include "pipeline/quant/blocks.h"
#include "pipeline/quant/half.h"
#include "pipeline/quant/kernels.h"

namespace troupe {
namespace {

uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

float LoadF32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Q4_1 against layout kQ8x2 (ggml Q8_1 blocks in value order).
float DotQ4_1(const uint8_t* w, const uint8_t* xq, int64_t cols) {
  const auto* groups = reinterpret_cast<const ActGroupQ8x2*>(xq);
  float acc = 0.0f;
  for (int64_t b = 0; b < cols / kQk; ++b) {
    const uint8_t* blk = w + b * sizeof(BlockQ4_1);
    const float dw = Fp16ToFp32(LoadU16(blk));
    const float mw = Fp16ToFp32(LoadU16(blk + 2));
    const uint8_t* qs = blk + 4;
    const ActGroupQ8x2& g = groups[b / 2];
    const int8_t* x = g.q + 32 * (b % 2);
    int32_t sumi0 = 0, sumi1 = 0;
    for (int j = 0; j < 16; ++j) {
      sumi0 += (qs[j] & 0x0F) * x[j];
      sumi1 += (qs[j] >> 4) * x[16 + j];
    }
    acc += (dw * g.d[b % 2]) * static_cast<float>(sumi0 + sumi1) + mw * g.s[b % 2];
  }
  return acc;
}

// ggml_vec_dot_q8_0_q8_0's portable loop: sumf += sumi * (d_w d_x).
float DotQ8_0(const uint8_t* w, const uint8_t* xq, int64_t cols) {
  const auto* groups = reinterpret_cast<const ActGroupQ8x2*>(xq);
  float acc = 0.0f;
  for (int64_t b = 0; b < cols / kQk; ++b) {
    BlockQ8_0 blk;
    std::memcpy(&blk, w + b * sizeof(BlockQ8_0), sizeof blk);
    const ActGroupQ8x2& g = groups[b / 2];
    const int k = static_cast<int>(b % 2);
    int32_t isum = 0;
    for (int j = 0; j < kQk; ++j) isum += blk.qs[j] * g.q[32 * k + j];
    acc += static_cast<float>(isum) * (Fp16ToFp32(blk.d) * g.d[k]);
  }
  return acc;
}

// ggml_vec_dot_q4_0_q8_0's portable loop: sumf += sumi * d_w * d_x.
float DotQ4_0(const uint8_t* w, const uint8_t* xq, int64_t cols) {
  const auto* groups = reinterpret_cast<const ActGroupQ8x2*>(xq);
  float acc = 0.0f;
  for (int64_t b = 0; b < cols / kQk; ++b) {
    BlockQ4_0 blk;
    std::memcpy(&blk, w + b * sizeof(BlockQ4_0), sizeof blk);
    const ActGroupQ8x2& g = groups[b / 2];
    const int k = static_cast<int>(b % 2);
    const int8_t* x = g.q + 32 * k;
    int32_t sumi0 = 0, sumi1 = 0;
    for (int j = 0; j < kQk / 2; ++j) {
      sumi0 += ((blk.qs[j] & 0x0F) - 8) * x[j];
      sumi1 += ((blk.qs[j] >> 4) - 8) * x[j + 16];
    }
    acc += static_cast<float>(sumi0 + sumi1) * Fp16ToFp32(blk.d) * g.d[k];
  }
  return acc;
}

// ggml_vec_dot_q5_0_q8_0's portable loop: sumf += (d_w d_x) * sumi.
float DotQ5_0(const uint8_t* w, const uint8_t* xq, int64_t cols) {
  const auto* groups = reinterpret_cast<const ActGroupQ8x2*>(xq);
  float acc = 0.0f;
  for (int64_t b = 0; b < cols / kQk; ++b) {
    BlockQ5_0 blk;
    std::memcpy(&blk, w + b * sizeof(BlockQ5_0), sizeof blk);
    uint32_t qh;
    std::memcpy(&qh, blk.qh, sizeof qh);
    const ActGroupQ8x2& g = groups[b / 2];
    const int k = static_cast<int>(b % 2);
    const int8_t* x = g.q + 32 * k;
    int32_t sumi0 = 0, sumi1 = 0;
    for (int j = 0; j < kQk / 2; ++j) {
      sumi0 += (static_cast<int>((blk.qs[j] & 0x0F) | ((qh >> j) & 1u) << 4) - 16) * x[j];
      sumi1 += (static_cast<int>((blk.qs[j] >> 4) | ((qh >> (j + 16)) & 1u) << 4) - 16) * x[j + 16];
    }
    acc += (Fp16ToFp32(blk.d) * g.d[k]) * static_cast<float>(sumi0 + sumi1);
  }
  return acc;
}

float DotQ4K(const uint8_t* w, const uint8_t* xq, int64_t cols) {
  const auto* xb = reinterpret_cast<const ActBlockQ8K*>(xq);
  float acc = 0.0f;
  for (int64_t b = 0; b < cols / kQkK; ++b) {
    BlockQ4K blk;
    std::memcpy(&blk, w + b * sizeof(BlockQ4K), sizeof blk);
    uint8_t sc[8], m[8];
    UnpackQ4KScales(blk.scales, sc, m);
    const ActBlockQ8K& x = xb[b];
    int32_t isum = 0, msum = 0;
    for (int c = 0; c < 4; ++c) {
      int32_t lo = 0, hi = 0;
      // kQ8KPaired: values 64c + l at q[128(c/2) + 32(c%2) + l], 64c + 32 + l
      // at q[128(c/2) + 64 + 32(c%2) + l].
      const int8_t* xlo = x.q + 128 * (c / 2) + 32 * (c % 2);
      for (int l = 0; l < 32; ++l) {
        lo += (blk.qs[32 * c + l] & 0x0F) * xlo[l];
        hi += (blk.qs[32 * c + l] >> 4) * xlo[64 + l];
      }
      isum += sc[2 * c] * lo + sc[2 * c + 1] * hi;
    }
    for (int i = 0; i < 8; ++i) msum += m[i] * x.bsum32[i];
    acc += Fp16ToFp32(blk.d) * x.d * static_cast<float>(isum) - Fp16ToFp32(blk.dmin) * x.d * static_cast<float>(msum);
  }
  return acc;
}

float DotQ5K(const uint8_t* w, const uint8_t* xq, int64_t cols) {
  const auto* xb = reinterpret_cast<const ActBlockQ8K*>(xq);
  float acc = 0.0f;
  for (int64_t b = 0; b < cols / kQkK; ++b) {
    BlockQ5K blk;
    std::memcpy(&blk, w + b * sizeof(BlockQ5K), sizeof blk);
    uint8_t sc[8], m[8];
    UnpackQ4KScales(blk.scales, sc, m);
    const ActBlockQ8K& x = xb[b];
    int32_t isum = 0, msum = 0;
    for (int c = 0; c < 4; ++c) {
      int32_t lo = 0, hi = 0;
      for (int l = 0; l < 32; ++l) {
        lo += ((blk.qs[32 * c + l] & 0x0F) + 16 * ((blk.qh[l] >> (2 * c)) & 1)) * x.q[64 * c + l];
        hi += ((blk.qs[32 * c + l] >> 4) + 16 * ((blk.qh[l] >> (2 * c + 1)) & 1)) * x.q[64 * c + 32 + l];
      }
      isum += sc[2 * c] * lo + sc[2 * c + 1] * hi;
    }
    for (int i = 0; i < 8; ++i) msum += m[i] * x.bsum32[i];
    acc += Fp16ToFp32(blk.d) * x.d * static_cast<float>(isum) - Fp16ToFp32(blk.dmin) * x.d * static_cast<float>(msum);
  }
  return acc;
}

float DotQ6K(const uint8_t* w, const uint8_t* xq, int64_t cols) {
  const auto* xb = reinterpret_cast<const ActBlockQ8K*>(xq);
  float acc = 0.0f;
  for (int64_t b = 0; b < cols / kQkK; ++b) {
    BlockQ6K blk;
    std::memcpy(&blk, w + b * sizeof(BlockQ6K), sizeof blk);
    const ActBlockQ8K& x = xb[b];
    int32_t sub[16] = {};  // sum over each 16 values of q (unsigned 0..63) * x
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = blk.ql + 64 * h;
      const uint8_t* qh = blk.qh + 32 * h;
      const int8_t* xs = x.q + 128 * h;
      for (int l = 0; l < 32; ++l) {
        const int q0 = (ql[l] & 0x0F) | ((qh[l] >> 0) & 3) << 4;
        const int q1 = (ql[l + 32] & 0x0F) | ((qh[l] >> 2) & 3) << 4;
        const int q2 = (ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4;
        const int q3 = (ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4;
        const int s = 8 * h + l / 16;
        sub[s] += q0 * xs[l];
        sub[s + 2] += q1 * xs[l + 32];
        sub[s + 4] += q2 * xs[l + 64];
        sub[s + 6] += q3 * xs[l + 96];
      }
    }
    int32_t isum = 0;
    for (int i = 0; i < 16; ++i) isum += blk.scales[i] * (sub[i] - 32 * x.bsum16[i]);
    acc += Fp16ToFp32(blk.d) * x.d * static_cast<float>(isum);
  }
  return acc;
}

template <float (*kDot)(const uint8_t*, const uint8_t*, int64_t)>
void QuantRows(const MatmulArgs& a, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t t = 0; t < a.n; ++t) {
      a.y[t * a.ldy + r] = kDot(a.w + r * a.row_bytes, a.xq + t * a.xq_stride, a.cols);
    }
  }
}

float WeightF32(const uint8_t* row, int64_t c) { return LoadF32(row + 4 * c); }
float WeightF16(const uint8_t* row, int64_t c) { return Fp16ToFp32(LoadU16(row + 2 * c)); }
float WeightBf16(const uint8_t* row, int64_t c) { return Bf16ToFp32(LoadU16(row + 2 * c)); }

template <float (*kWeight)(const uint8_t*, int64_t)>
void FloatRows(const MatmulArgs& a, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = a.w + r * a.row_bytes;
    for (int64_t t = 0; t < a.n; ++t) {
      const float* x = a.x + t * a.cols;
      float acc = 0.0f;
      for (int64_t c = 0; c < a.cols; ++c) acc += kWeight(row, c) * x[c];
      a.y[t * a.ldy + r] = acc;
    }
  }
}

}  // namespace

RowsKernel GetScalarKernel(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return FloatRows<WeightF32>;
    case GgmlType::F16: return FloatRows<WeightF16>;
    case GgmlType::BF16: return FloatRows<WeightBf16>;
    case GgmlType::Q4_0: return QuantRows<DotQ4_0>;
    case GgmlType::Q4_1: return QuantRows<DotQ4_1>;
    case GgmlType::Q5_0: return QuantRows<DotQ5_0>;
    case GgmlType::Q8_0: return QuantRows<DotQ8_0>;
    case GgmlType::Q4_K: return QuantRows<DotQ4K>;
    case GgmlType::Q5_K: return QuantRows<DotQ5K>;
    case GgmlType::Q6_K: return QuantRows<DotQ6K>;
  }
  return nullptr;
}

}  // namespace troupe
