#include "pipeline/model/cpu_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "pipeline/quant/half.h"
#include "pipeline/quant/thread_pool.h"

namespace troupe {

void RmsNorm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* o = out + r * dim;
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += xr[i] * xr[i];  // fp32 products, fp64 sum
    const float scale = 1.0f / std::sqrt(static_cast<float>(ss / dim) + eps);
    for (int64_t i = 0; i < dim; ++i) o[i] = (xr[i] * scale) * weight[i];
  }
}

void SiluMul(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void AddInPlace(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

namespace {

inline float RoundToHalf(float x) { return Fp16ToFp32(Fp32ToFp16(x)); }

// sum_e a[e] * fp32(b[e]) over d values (d a multiple of 8 on the F16C path).
inline float DotHalf(const float* a, const uint16_t* b, int64_t d) {
#if defined(__F16C__) && defined(__FMA__)
  if (d % 8 == 0) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t e = 0; e < d; e += 8) {
      const __m256 vb = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + e)));
      acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + e), vb, acc);
    }
    __m128 lo = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    lo = _mm_hadd_ps(lo, lo);
    lo = _mm_hadd_ps(lo, lo);
    return _mm_cvtss_f32(lo);
  }
#endif
  float dot = 0;
  for (int64_t e = 0; e < d; ++e) dot += a[e] * Fp16ToFp32(b[e]);
  return dot;
}

// out[e] += p * fp32(v[e]) over d values.
inline void AxpyHalf(float p, const uint16_t* v, float* out, int64_t d) {
#if defined(__F16C__) && defined(__FMA__)
  if (d % 8 == 0) {
    const __m256 vp = _mm256_set1_ps(p);
    for (int64_t e = 0; e < d; e += 8) {
      const __m256 vv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + e)));
      _mm256_storeu_ps(out + e, _mm256_fmadd_ps(vp, vv, _mm256_loadu_ps(out + e)));
    }
    return;
  }
#endif
  for (int64_t e = 0; e < d; ++e) out[e] += p * Fp16ToFp32(v[e]);
}

}  // namespace

void ToHalf(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = Fp32ToFp16(src[i]);
}

void Attention(const float* q, const uint16_t* keys, const uint16_t* values, const AttentionShape& s,
               int64_t start, int64_t t, float* out, int threads) {
  const int64_t d = s.head_dim;
  const int64_t group = s.n_heads / s.n_kv_heads;
  const int64_t row = s.n_heads * d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const int64_t work = s.n_heads * t;
  const int parts = work * (start + t) * d > 65536 ? threads : 1;
  ParallelRanges(work, parts, [&](int64_t w_begin, int64_t w_end) {
    std::vector<float> scores(start + t);
    std::vector<float> qh(d);
    for (int64_t w = w_begin; w < w_end; ++w) {
      const int64_t h = w % s.n_heads;
      const int64_t i = w / s.n_heads;
      const int64_t kvh = h / group;
      for (int64_t e = 0; e < d; ++e) qh[e] = RoundToHalf(q[i * row + h * d + e]);
      const uint16_t* k = keys + kvh * s.cache_stride;
      const uint16_t* v = values + kvh * s.cache_stride;
      const int64_t len = start + i + 1;  // causal: positions [0, start + i]
      float max_score = -INFINITY;
      for (int64_t j = 0; j < len; ++j) {
        const float dot = DotHalf(qh.data(), k + j * d, d) * scale;
        scores[j] = dot;
        max_score = std::max(max_score, dot);
      }
      double sum = 0;
      for (int64_t j = 0; j < len; ++j) {
        scores[j] = std::exp(scores[j] - max_score);
        sum += scores[j];
      }
      const float inv = static_cast<float>(1.0 / sum);
      float* o = out + i * row + h * d;
      std::fill(o, o + d, 0.0f);
      for (int64_t j = 0; j < len; ++j) AxpyHalf(RoundToHalf(scores[j] * inv), v + j * d, o, d);
    }
  });
}

}  // namespace troupe
