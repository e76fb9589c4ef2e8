#include "pipeline/quant/activations.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "pipeline/quant/half.h"

#if defined(__AVX512F__)
// GCC 12.2's AVX-512 headers trip -Wuninitialized on their own
// _mm512_undefined_* placeholders (GCC bug 105593, fixed in 12.3).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#elif defined(__AVX2__)
#include <immintrin.h>
#endif

namespace troupe {
namespace {

// The scale ggml's dot products use for a 32-value block: fp16(d) widened.
float RoundToHalf(float d) { return Fp16ToFp32(Fp32ToFp16(d)); }

// 127 / amax, or 0 when amax is 0 or the quotient overflows (see the header).
float InverseScale(float amax) {
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  return id <= std::numeric_limits<float>::max() ? id : 0.0f;
}

// ggml quantize_row_q8_0 / q8_1 for one block of 32 values: fills q, stores
// the sum of q in *sum, returns the fp32 d = amax / 127.
float QuantizeBlock32Scalar(const float* x, int8_t* q, int32_t* sum) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float id = InverseScale(amax);
  int32_t s = 0;
  for (int j = 0; j < 32; ++j) {
    q[j] = static_cast<int8_t>(std::nearbyint(x[j] * id));  // |x * id| < 127.5
    s += q[j];
  }
  *sum = s;
  return amax / 127.0f;
}

// ggml quantize_row_q8_K_ref for one super-block of 256 values: fills q,
// returns d = 1 / iscale.
float QuantizeBlock256Scalar(const float* x, int8_t* q) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 256; ++j) {
    const float ax = std::fabs(x[j]);
    if (ax > amax) {
      amax = ax;
      max = x[j];
    }
  }
  if (amax == 0.0f) {
    std::memset(q, 0, 256);
    return 0.0f;
  }
  const float iscale = -127.0f / max;
  if (!(std::fabs(iscale) <= std::numeric_limits<float>::max())) {  // d = -0 or +0
    std::memset(q, 0, 256);
    return 1.0f / iscale;
  }
  for (int j = 0; j < 256; ++j) {
    q[j] = static_cast<int8_t>(std::min(127.0f, std::nearbyint(iscale * x[j])));
  }
  return 1.0f / iscale;
}

struct ScalarOps {
  static float Block32(const float* x, int8_t* q, int32_t* sum) { return QuantizeBlock32Scalar(x, q, sum); }
  static float Block256(const float* x, int8_t* q) { return QuantizeBlock256Scalar(x, q); }
};

#if defined(__AVX512F__) && defined(__AVX512BW__)
// The same values as the scalar functions: the same fp32 products, rounded
// half-even by the conversion (MXCSR default), and max|x| is exact in any
// order.
struct Avx512Ops {
  static float Block32(const float* x, int8_t* q, int32_t* sum) {
    const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
    const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_and_ps(v0, abs_mask), _mm512_and_ps(v1, abs_mask)));
    const __m512 id = _mm512_set1_ps(InverseScale(amax));
    const __m512i i0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, id));
    const __m512i i1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, id));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtsepi32_epi8(i0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16), _mm512_cvtsepi32_epi8(i1));
    *sum = _mm512_reduce_add_epi32(_mm512_add_epi32(i0, i1));
    return amax / 127.0f;
  }

  static float Block256(const float* x, int8_t* q) {
    const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
    __m512 m = _mm512_setzero_ps();
    for (int j = 0; j < 256; j += 16) {
      m = _mm512_max_ps(m, _mm512_and_ps(_mm512_loadu_ps(x + j), abs_mask));
    }
    const float amax = _mm512_reduce_max_ps(m);
    if (amax == 0.0f) {
      std::memset(q, 0, 256);
      return 0.0f;
    }
    float max = 0.0f;  // the first value with |value| == amax, as the scalar scan finds
    const __m512 vmax = _mm512_set1_ps(amax);
    for (int j = 0; j < 256; j += 16) {
      const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_and_ps(_mm512_loadu_ps(x + j), abs_mask), vmax, _CMP_EQ_OQ);
      if (hit != 0) {
        max = x[j + __builtin_ctz(hit)];
        break;
      }
    }
    const float iscale = -127.0f / max;
    if (!(std::fabs(iscale) <= std::numeric_limits<float>::max())) {
      std::memset(q, 0, 256);
      return 1.0f / iscale;
    }
    const __m512 s = _mm512_set1_ps(iscale);
    const __m512i hi = _mm512_set1_epi32(127);
    for (int j = 0; j < 256; j += 16) {
      const __m512i v = _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + j), s)), hi);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + j), _mm512_cvtsepi32_epi8(v));
    }
    return 1.0f / iscale;
  }
};
#elif defined(__AVX2__)
// The 32-value blocks as the scalar function, 8 lanes at a time: the same
// fp32 products, rounded half-even by the conversion (MXCSR default), and
// max|x| is exact in any order. 256-value blocks stay scalar.
struct Avx2Ops {
  static float Block32(const float* x, int8_t* q, int32_t* sum) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    __m256 v[4];
    __m256 m = _mm256_setzero_ps();
    for (int k = 0; k < 4; ++k) {
      v[k] = _mm256_loadu_ps(x + 8 * k);
      m = _mm256_max_ps(_mm256_and_ps(v[k], abs_mask), m);
    }
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    const float amax = _mm_cvtss_f32(h);
    const __m256 id = _mm256_set1_ps(InverseScale(amax));
    __m256i i[4];
    for (int k = 0; k < 4; ++k) i[k] = _mm256_cvtps_epi32(_mm256_mul_ps(v[k], id));
    const __m256i total = _mm256_add_epi32(_mm256_add_epi32(i[0], i[1]), _mm256_add_epi32(i[2], i[3]));
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(total), _mm256_extracti128_si256(total, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(1, 0, 3, 2)));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(2, 3, 0, 1)));
    *sum = _mm_cvtsi128_si32(t);
    // packs work per 128-bit half: bytes come out in the order 0 4 1 5 2 6 3 7 (4-byte groups).
    const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(i[0], i[1]), _mm256_packs_epi32(i[2], i[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q),
                        _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    return amax / 127.0f;
  }
  static float Block256(const float* x, int8_t* q) { return QuantizeBlock256Scalar(x, q); }
};
#endif

template <class Ops>
void QuantizeQ8x2(const float* x, int64_t cols, uint8_t* dst) {
  const int64_t nblocks = cols / 32;
  const int64_t ngroups = (nblocks + 1) / 2;
  auto* groups = reinterpret_cast<ActGroupQ8x2*>(dst);
  std::memset(dst, 0, static_cast<size_t>(ngroups) * sizeof(ActGroupQ8x2));
  for (int64_t b = 0; b < nblocks; ++b) {
    ActGroupQ8x2& g = groups[b / 2];
    const int k = static_cast<int>(b % 2);
    int32_t sum = 0;
    const float d = Ops::Block32(x + 32 * b, g.q + 32 * k, &sum);
    g.d[k] = RoundToHalf(d);
    g.s[k] = RoundToHalf(d * static_cast<float>(sum));
    g.corr[k] = 128 * sum;
  }
}

}  // namespace

int64_t ActPairsOctetOffset(int64_t n, int64_t cols) {
  return (n + 1) / 2 * (cols / 32) * static_cast<int64_t>(sizeof(ActPairBlock) / sizeof(float));
}

int64_t ActPairsBytes(int64_t n, int64_t cols) {
  return (ActPairsOctetOffset(n, cols) + (n + 7) / 8 * (cols / 32) * 8) * static_cast<int64_t>(sizeof(float));
}

void BuildActPairs(const uint8_t* xq, int64_t xq_stride, int64_t n, int64_t cols, uint8_t* dst) {
  const int64_t blocks = cols / 32;
  auto* pairs = reinterpret_cast<ActPairBlock*>(dst);
  float* octets = reinterpret_cast<float*>(dst) + ActPairsOctetOffset(n, cols);
  std::memset(octets, 0, static_cast<size_t>((n + 7) / 8 * blocks * 8) * sizeof(float));
  for (int64_t k = 0; k < (n + 1) / 2; ++k) {
    for (int64_t b = 0; b < blocks; ++b) {
      ActPairBlock& out = pairs[k * blocks + b];
      for (int h = 0; h < 2; ++h) {
        const int64_t t = 2 * k + h;
        if (t >= n) {
          std::memset(out.q + 32 * h, 0, 32);
          for (int p = 0; p < 8; ++p) out.d[8 * h + p] = 0.0f, out.corr[8 * h + p] = 0;
          continue;
        }
        const auto& group = reinterpret_cast<const ActGroupQ8x2*>(xq + t * xq_stride)[b / 2];
        const int8_t* q = group.q + 32 * (b % 2);
        std::memcpy(out.q + 32 * h, q, 32);
        for (int p = 0; p < 8; ++p) {
          out.d[8 * h + p] = group.d[b % 2];
          out.corr[8 * h + p] = 128 * (q[4 * p] + q[4 * p + 1] + q[4 * p + 2] + q[4 * p + 3]);
        }
        octets[(t / 8 * blocks + b) * 8 + t % 8] = group.s[b % 2];
      }
    }
  }
}

int64_t ActLanesBytes(int64_t cols) { return cols / 32 * static_cast<int64_t>(sizeof(ActLaneBlock)); }

void BuildActLanes(const uint8_t* xq, int64_t xq_stride, int64_t n, int64_t cols, uint8_t* dst) {
  const int64_t blocks = cols / 32;
  auto* lanes = reinterpret_cast<ActLaneBlock*>(dst);
  for (int64_t b = 0; b < blocks; ++b) {
    ActLaneBlock& out = lanes[b];
    for (int64_t t = 0; t < kLaneRows; ++t) {
      if (t >= n) {
        for (auto& lane : out.x) std::memset(lane + 4 * t, 128, 4);
        out.d[t] = 0.0f;
        out.s[t] = 0.0f;
        continue;
      }
      const auto& group = reinterpret_cast<const ActGroupQ8x2*>(xq + t * xq_stride)[b / 2];
      const int8_t* q = group.q + 32 * (b % 2);
      for (int p = 0; p < 8; ++p)
        for (int k = 0; k < 4; ++k) out.x[p][4 * t + k] = static_cast<uint8_t>(q[4 * p + k] + 128);
      out.d[t] = group.d[b % 2];
      out.s[t] = group.s[b % 2];
    }
  }
}

namespace {

template <class Ops>
void QuantizeQ8K(const float* x, int64_t cols, uint8_t* dst, bool paired) {
  const int64_t nblocks = cols / 256;
  auto* blocks = reinterpret_cast<ActBlockQ8K*>(dst);
  std::memset(dst, 0, static_cast<size_t>(nblocks) * sizeof(ActBlockQ8K));
  alignas(64) int8_t q[256];
  for (int64_t b = 0; b < nblocks; ++b) {
    ActBlockQ8K& blk = blocks[b];
    blk.d = Ops::Block256(x + 256 * b, q);
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

template <class Ops>
void QuantizeRow(ActLayout layout, const float* x, int64_t cols, uint8_t* dst) {
  switch (layout) {
    case ActLayout::kQ8x2: return QuantizeQ8x2<Ops>(x, cols, dst);
    case ActLayout::kQ8K: return QuantizeQ8K<Ops>(x, cols, dst, false);
    case ActLayout::kQ8KPaired: return QuantizeQ8K<Ops>(x, cols, dst, true);
    case ActLayout::kNone: return;
  }
}

}  // namespace

ActLayout ActLayoutFor(GgmlType weight_type) {
  switch (weight_type) {
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q5_0:
    case GgmlType::Q8_0: return ActLayout::kQ8x2;
    case GgmlType::Q4_K: return ActLayout::kQ8KPaired;
    case GgmlType::Q5_K:
    case GgmlType::Q6_K: return ActLayout::kQ8K;
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16: return ActLayout::kNone;
  }
  return ActLayout::kNone;
}

int64_t ActGroupValues(ActLayout layout) {
  switch (layout) {
    case ActLayout::kQ8x2: return 64;
    case ActLayout::kQ8K:
    case ActLayout::kQ8KPaired: return 256;
    case ActLayout::kNone: return 0;
  }
  return 0;
}

int64_t ActRowBytes(ActLayout layout, int64_t cols) {
  const int64_t gv = ActGroupValues(layout);
  if (gv == 0) return 0;
  const int64_t groups = (cols + gv - 1) / gv;
  switch (layout) {
    case ActLayout::kQ8x2: return groups * static_cast<int64_t>(sizeof(ActGroupQ8x2));
    case ActLayout::kQ8K:
    case ActLayout::kQ8KPaired: return groups * static_cast<int64_t>(sizeof(ActBlockQ8K));
    case ActLayout::kNone: return 0;
  }
  return 0;
}

void QuantizeActRow(ActLayout layout, const float* x, int64_t cols, uint8_t* dst) {
#if defined(__AVX512F__) && defined(__AVX512BW__)
  QuantizeRow<Avx512Ops>(layout, x, cols, dst);
#elif defined(__AVX2__)
  QuantizeRow<Avx2Ops>(layout, x, cols, dst);
#else
  QuantizeRow<ScalarOps>(layout, x, cols, dst);
#endif
}

void QuantizeActRowScalar(ActLayout layout, const float* x, int64_t cols, uint8_t* dst) {
  QuantizeRow<ScalarOps>(layout, x, cols, dst);
}

}  // namespace troupe
