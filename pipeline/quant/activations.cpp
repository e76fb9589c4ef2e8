#include "pipeline/quant/activations.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__AVX512F__)
// GCC 12.2's AVX-512 headers trip -Wuninitialized on their own
// _mm512_undefined_* placeholders (GCC bug 105593, fixed in 12.3).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#endif

namespace troupe {
namespace {

// Blocks whose largest magnitude is below this quantize to all zeros (their
// reciprocal scale would overflow).
constexpr float kTinyAmax = 1e-30f;

// Quantizes len values symmetrically to [-127, 127]; returns the scale and
// stores the integer sum in *sum. Rounds to nearest even.
float QuantizeSpanScalar(const float* x, int len, int8_t* q, int32_t* sum) {
  float amax = 0.0f;
  for (int j = 0; j < len; ++j) amax = std::max(amax, std::fabs(x[j]));
  if (amax < kTinyAmax) amax = 0.0f;
  const float d = amax / 127.0f;
  const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
  int32_t s = 0;
  for (int j = 0; j < len; ++j) {
    float v = std::nearbyint(x[j] * id);
    v = std::min(127.0f, std::max(-127.0f, v));
    q[j] = static_cast<int8_t>(v);
    s += q[j];
  }
  *sum = s;
  return d;
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
// Same values as QuantizeSpanScalar (same products, RNE conversion); len is a
// multiple of 16.
float QuantizeSpanAvx512(const float* x, int len, int8_t* q, int32_t* sum) {
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  __m512 m = _mm512_setzero_ps();
  for (int j = 0; j < len; j += 16) {
    m = _mm512_max_ps(m, _mm512_and_ps(_mm512_loadu_ps(x + j), abs_mask));
  }
  float amax = _mm512_reduce_max_ps(m);
  if (amax < kTinyAmax) amax = 0.0f;
  const float d = amax / 127.0f;
  const __m512 id = _mm512_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
  const __m512i hi = _mm512_set1_epi32(127), lo = _mm512_set1_epi32(-127);
  __m512i s = _mm512_setzero_si512();
  for (int j = 0; j < len; j += 16) {
    __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + j), id));
    v = _mm512_max_epi32(_mm512_min_epi32(v, hi), lo);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + j), _mm512_cvtepi32_epi8(v));
    s = _mm512_add_epi32(s, v);
  }
  *sum = _mm512_reduce_add_epi32(s);
  return d;
}
#endif

using SpanFn = float (*)(const float*, int, int8_t*, int32_t*);

template <SpanFn QuantizeSpan>
void QuantizeQ8x4(const float* x, int64_t cols, uint8_t* dst) {
  const int64_t nblocks = cols / 32;
  const int64_t ngroups = (nblocks + 3) / 4;
  auto* groups = reinterpret_cast<ActGroupQ8x4*>(dst);
  std::memset(dst, 0, static_cast<size_t>(ngroups) * sizeof(ActGroupQ8x4));
  int8_t q[32];
  for (int64_t b = 0; b < nblocks; ++b) {
    ActGroupQ8x4& g = groups[b / 4];
    const int k = static_cast<int>(b % 4);
    int32_t sum = 0;
    const float d = QuantizeSpan(x + 32 * b, 32, q, &sum);
    std::memcpy(g.lo + 16 * k, q, 16);
    std::memcpy(g.hi + 16 * k, q + 16, 16);
    g.ds[2 * k] = d;
    g.ds[2 * k + 1] = d * static_cast<float>(sum);
  }
}

template <SpanFn QuantizeSpan>
void QuantizeQ8x2(const float* x, int64_t cols, uint8_t* dst) {
  const int64_t nblocks = cols / 32;
  const int64_t ngroups = (nblocks + 1) / 2;
  auto* groups = reinterpret_cast<ActGroupQ8x2*>(dst);
  std::memset(dst, 0, static_cast<size_t>(ngroups) * sizeof(ActGroupQ8x2));
  for (int64_t b = 0; b < nblocks; ++b) {
    ActGroupQ8x2& g = groups[b / 2];
    const int k = static_cast<int>(b % 2);
    int32_t sum = 0;
    g.d[k] = QuantizeSpan(x + 32 * b, 32, g.q + 32 * k, &sum);
    g.corr[k] = 128 * sum;
  }
}

template <SpanFn QuantizeSpan>
void QuantizeQ8K(const float* x, int64_t cols, uint8_t* dst, bool paired) {
  const int64_t nblocks = cols / 256;
  auto* blocks = reinterpret_cast<ActBlockQ8K*>(dst);
  std::memset(dst, 0, static_cast<size_t>(nblocks) * sizeof(ActBlockQ8K));
  alignas(64) int8_t q[256];
  for (int64_t b = 0; b < nblocks; ++b) {
    ActBlockQ8K& blk = blocks[b];
    int32_t sum = 0;
    blk.d = QuantizeSpan(x + 256 * b, 256, q, &sum);
    for (int i = 0; i < 16; ++i) {
      int s = 0;
      for (int j = 0; j < 16; ++j) s += q[16 * i + j];
      blk.bsum16[i] = static_cast<int16_t>(s);
    }
    for (int i = 0; i < 8; ++i) {
      blk.bsum32[i] = static_cast<int16_t>(blk.bsum16[2 * i] + blk.bsum16[2 * i + 1]);
    }
    if (!paired) {
      std::memcpy(blk.q, q, sizeof q);
      continue;
    }
    for (int h = 0; h < 2; ++h) {  // [0..31, 64..95, 32..63, 96..127] per 128
      int8_t* out = blk.q + 128 * h;
      const int8_t* in = q + 128 * h;
      std::memcpy(out, in, 32);
      std::memcpy(out + 32, in + 64, 32);
      std::memcpy(out + 64, in + 32, 32);
      std::memcpy(out + 96, in + 96, 32);
    }
  }
}

template <SpanFn QuantizeSpan>
void QuantizeRow(ActLayout layout, const float* x, int64_t cols, uint8_t* dst) {
  switch (layout) {
    case ActLayout::kQ8x4: return QuantizeQ8x4<QuantizeSpan>(x, cols, dst);
    case ActLayout::kQ8x2: return QuantizeQ8x2<QuantizeSpan>(x, cols, dst);
    case ActLayout::kQ8K: return QuantizeQ8K<QuantizeSpan>(x, cols, dst, false);
    case ActLayout::kQ8KPaired: return QuantizeQ8K<QuantizeSpan>(x, cols, dst, true);
    case ActLayout::kNone: return;
  }
}

}  // namespace

ActLayout ActLayoutFor(GgmlType weight_type) {
  switch (weight_type) {
    case GgmlType::Q4_0: case GgmlType::Q4_1: return ActLayout::kQ8x4;
    case GgmlType::Q8_0: return ActLayout::kQ8x2;
    case GgmlType::Q4_K: return ActLayout::kQ8KPaired;
    case GgmlType::Q6_K: return ActLayout::kQ8K;
    case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16: return ActLayout::kNone;
  }
  return ActLayout::kNone;
}

int64_t ActGroupValues(ActLayout layout) {
  switch (layout) {
    case ActLayout::kQ8x4: return 128;
    case ActLayout::kQ8x2: return 64;
    case ActLayout::kQ8K: case ActLayout::kQ8KPaired: return 256;
    case ActLayout::kNone: return 0;
  }
  return 0;
}

int64_t ActRowBytes(ActLayout layout, int64_t cols) {
  const int64_t gv = ActGroupValues(layout);
  if (gv == 0) return 0;
  const int64_t groups = (cols + gv - 1) / gv;
  switch (layout) {
    case ActLayout::kQ8x4: return groups * static_cast<int64_t>(sizeof(ActGroupQ8x4));
    case ActLayout::kQ8x2: return groups * static_cast<int64_t>(sizeof(ActGroupQ8x2));
    case ActLayout::kQ8K: case ActLayout::kQ8KPaired:
      return groups * static_cast<int64_t>(sizeof(ActBlockQ8K));
    case ActLayout::kNone: return 0;
  }
  return 0;
}

void QuantizeActRow(ActLayout layout, const float* x, int64_t cols, uint8_t* dst) {
#if defined(__AVX512F__) && defined(__AVX512BW__)
  QuantizeRow<QuantizeSpanAvx512>(layout, x, cols, dst);
#else
  QuantizeRow<QuantizeSpanScalar>(layout, x, cols, dst);
#endif
}

void QuantizeActRowScalar(ActLayout layout, const float* x, int64_t cols, uint8_t* dst) {
  QuantizeRow<QuantizeSpanScalar>(layout, x, cols, dst);
}

}  // namespace troupe
