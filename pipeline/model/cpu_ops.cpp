#include "pipeline/model/cpu_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#if defined(__F16C__) || defined(__AVX512F__)
// GCC 12.2's AVX-512 headers trip -Wmaybe-uninitialized on their own
// _mm512_undefined_* placeholders (GCC bug 105593, fixed in 12.3).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#endif

#include "pipeline/quant/half.h"
#include "pipeline/quant/thread_pool.h"

namespace troupe {

// ---------------------------------------------------------------------------
// ggml's CPU formulas (ggml-cpu/vec.h, vec.cpp, simd-mappings.h; credit:
// ggml), reproduced so that our forward pass computes llama.cpp's one-token
// results bit for bit. Which variant ggml runs depends on the instruction set
// it was compiled for (-march=native); we pick the same one from ours:
// AVX-512 F+DQ (TROUPE_GGML_AVX512) or ggml's portable code otherwise.
#if defined(__AVX512F__) && defined(__AVX512DQ__)
#define TROUPE_GGML_AVX512 1
namespace {

// ggml_v_expf, AVX-512 (ggml's adaptation of ARM's optimized routine: max
// error 1.45358 + 0.5 ulp; flushes to inf above 88.38 and to 0 below -103.97).
inline __m512 GgmlExp16(__m512 x) {
  const __m512 r = _mm512_set1_ps(0x1.8p23f);
  const __m512 z = _mm512_fmadd_ps(x, _mm512_set1_ps(0x1.715476p+0f), r);
  const __m512 n = _mm512_sub_ps(z, r);
  const __m512 b =
      _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.7f7d1cp-20f), _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e4p-1f), x));
  const __mmask16 d = _mm512_cmp_ps_mask(_mm512_abs_ps(n), _mm512_set1_ps(192), _CMP_GT_OQ);
  const __m512 u = _mm512_mul_ps(b, b);
  const __m512 j = _mm512_fmadd_ps(
      _mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_set1_ps(0x1.0e4020p-7f), b, _mm512_set1_ps(0x1.573e2ep-5f)), u,
                      _mm512_fmadd_ps(_mm512_set1_ps(0x1.555e66p-3f), b, _mm512_set1_ps(0x1.fffdb6p-2f))),
      u, _mm512_fmadd_ps(_mm512_set1_ps(0x1.ffffecp-1f), b, _mm512_set1_ps(1.0f)));
  const __m512 res = _mm512_scalef_ps(j, n);
  if (_mm512_kortestz(d, d)) return res;
  const __m512 alt = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(n, _mm512_setzero_ps(), _CMP_LE_OQ),
                                          _mm512_set1_ps(INFINITY), _mm512_setzero_ps());
  return _mm512_mask_blend_ps(d, res, alt);
}

// ggml_v_silu, AVX-512: x / (1 + exp(0 - x)).
inline __m512 GgmlSilu16(__m512 x) {
  const __m512 e = GgmlExp16(_mm512_sub_ps(_mm512_setzero_ps(), x));
  return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

inline __m512 LoadHalf16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// ggml_vec_dot_f16's 16 lanes before the horizontal sum, n a multiple of 64:
// four 16-lane FMA chains over steps of 64 values, then (a0 + a2) + (a1 + a3).
inline __m512 DotF16Lanes(const uint16_t* x, const uint16_t* y, int64_t n) {
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  for (int64_t i = 0; i < n; i += 64) {
    for (int c = 0; c < 4; ++c)
      acc[c] = _mm512_fmadd_ps(LoadHalf16(x + i + 16 * c), LoadHalf16(y + i + 16 * c), acc[c]);
  }
  return _mm512_add_ps(_mm512_add_ps(acc[0], acc[2]), _mm512_add_ps(acc[1], acc[3]));
}

}  // namespace
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define TROUPE_GGML_AVX2 1
namespace {

// ggml_v_expf, AVX2 + FMA variant.
inline __m256 GgmlExp8(__m256 x) {
  const __m256 r = _mm256_set1_ps(0x1.8p23f);
  const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
  const __m256 n = _mm256_sub_ps(z, r);
  const __m256 b =
      _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
  const __m256i e = _mm256_slli_epi32(_mm256_castps_si256(z), 23);
  const __m256 k = _mm256_castsi256_ps(_mm256_add_epi32(e, _mm256_castps_si256(_mm256_set1_ps(1))));
  const __m256i c =
      _mm256_castps_si256(_mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.f), n), _mm256_set1_ps(126), _CMP_GT_OQ));
  const __m256 u = _mm256_mul_ps(b, b);
  const __m256 j = _mm256_fmadd_ps(
      _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                      _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
      u, _mm256_mul_ps(_mm256_set1_ps(0x1.ffffecp-1f), b));
  if (!_mm256_movemask_ps(_mm256_castsi256_ps(c))) return _mm256_fmadd_ps(j, k, k);
  const __m256i g = _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_LE_OQ)),
                                     _mm256_set1_epi32(static_cast<int>(0x82000000u)));
  const __m256 s1 = _mm256_castsi256_ps(_mm256_add_epi32(g, _mm256_set1_epi32(0x7f000000)));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_sub_epi32(e, g));
  const __m256i d =
      _mm256_castps_si256(_mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.f), n), _mm256_set1_ps(192), _CMP_GT_OQ));
  return _mm256_or_ps(
      _mm256_and_ps(_mm256_castsi256_ps(d), _mm256_mul_ps(s1, s1)),
      _mm256_andnot_ps(
          _mm256_castsi256_ps(d),
          _mm256_or_ps(_mm256_and_ps(_mm256_castsi256_ps(c), _mm256_mul_ps(_mm256_fmadd_ps(s2, j, s2), s1)),
                       _mm256_andnot_ps(_mm256_castsi256_ps(c), _mm256_fmadd_ps(k, j, k)))));
}

inline __m256 GgmlSilu8(__m256 x) {
  const __m256 e = GgmlExp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

inline __m256 LoadHalf8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// GGML_F32x8_REDUCE's last step / the AVX2 softmax block sum: ((v0 + v4) + (v1 + v5)) + ((v2 + v6) + (v3 + v7)).
inline float HaddReduce8(__m256 v) {
  const __m128 t0 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t1 = _mm_hadd_ps(t0, t0);
  return _mm_cvtss_f32(_mm_hadd_ps(t1, t1));
}
// The AVX2 softmax block sum: ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)).
inline float MovehlReduce8(__m256 v) {
  __m128 t = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
  t = _mm_add_ps(t, _mm_movehl_ps(t, t));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

// ggml_vec_dot_f16's 8 lanes before the horizontal sum, n a multiple of 32:
// four 8-lane FMA chains over steps of 32 values, then (a0 + a2) + (a1 + a3).
inline __m256 DotF16Lanes8(const uint16_t* x, const uint16_t* y, int64_t n) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t i = 0; i < n; i += 32) {
    for (int c = 0; c < 4; ++c) acc[c] = _mm256_fmadd_ps(LoadHalf8(x + i + 8 * c), LoadHalf8(y + i + 8 * c), acc[c]);
  }
  return _mm256_add_ps(_mm256_add_ps(acc[0], acc[2]), _mm256_add_ps(acc[1], acc[3]));
}

// HaddReduce8 of eight vectors at once, bit for bit (the same tree: lanes
// l + (l + 4), then pairs, then the two pair sums; addition commutes).
inline __m256 HaddReduce8x8(const __m256 (&v)[8]) {
  __m256 a[4];  // a[m]: low half row 2m's lanes l + (l + 4), high half row 2m + 1's
  for (int m = 0; m < 4; ++m) {
    a[m] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * m], v[2 * m + 1], 0x20),
                         _mm256_permute2f128_ps(v[2 * m], v[2 * m + 1], 0x31));
  }
  // Low halves: rows 0, 2 (b0) and 4, 6 (b1), pairs summed; high halves rows 1, 3 and 5, 7.
  const __m256 b0 = _mm256_hadd_ps(a[0], a[1]);
  const __m256 b1 = _mm256_hadd_ps(a[2], a[3]);
  const __m256 r = _mm256_hadd_ps(b0, b1);  // rows 0, 2, 4, 6 | 1, 3, 5, 7
  return _mm256_permutevar8x32_ps(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

}  // namespace
#endif

void GgmlExp(const float* x, float* y, int64_t n) {
  int64_t i = 0;
#if defined(TROUPE_GGML_AVX512)
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, GgmlExp16(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(y + i, m, GgmlExp16(_mm512_maskz_loadu_ps(m, x + i)));
    i = n;
  }
#elif defined(TROUPE_GGML_AVX2)
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, GgmlExp8(_mm256_loadu_ps(x + i)));
  if (i < n) {
    float tmp[8] = {};
    for (int64_t k = i; k < n; ++k) tmp[k - i] = x[k];
    _mm256_storeu_ps(tmp, GgmlExp8(_mm256_loadu_ps(tmp)));
    for (int64_t k = i; k < n; ++k) y[k] = tmp[k - i];
    i = n;
  }
#endif
  for (; i < n; ++i) y[i] = std::exp(x[i]);
}

// ggml_vec_dot_f16(n, x, y): AVX-512 without FP16 arithmetic: GGML_F16_STEP 64
// values per step in four 16-lane fp32 accumulators (value i + 16c + lane ->
// accumulator c), fma(x, y, acc); reduced as (acc0 + acc2) + (acc1 + acc3),
// then _mm512_reduce_add_ps, widened to double; the n % 64 leftovers are
// added in double one by one. Portable ggml: a double sum of fp32 products.
float GgmlDotF16(const uint16_t* x, const uint16_t* y, int64_t n) {
  double sum = 0.0;
  int64_t i = 0;
#if defined(TROUPE_GGML_AVX512)
  const int64_t np = n & ~int64_t{63};
  if (np > 0) {
    sum = static_cast<double>(_mm512_reduce_add_ps(DotF16Lanes(x, y, np)));
    i = np;
  }
#elif defined(TROUPE_GGML_AVX2)
  const int64_t np = n & ~int64_t{31};  // GGML_F16_STEP 32, four 8-lane accumulators
  if (np > 0) {
    sum = static_cast<double>(HaddReduce8(DotF16Lanes8(x, y, np)));
    i = np;
  }
#endif
  for (; i < n; ++i) sum += static_cast<double>(Fp16ToFp32(x[i]) * Fp16ToFp32(y[i]));
  return static_cast<float>(sum);
}

#if defined(TROUPE_GGML_AVX512)
namespace {
// out[j] = _mm512_reduce_add_ps(v[j]) for j < 16, bit for bit: the 16
// horizontal sums at once, in the tree of GCC's _mm512_reduce_add_ps: lanes
// l + (l + 8), then l + (l + 4), then l + (l + 2), then 0 + 1. (Addition
// commutes bit for bit, so only the tree matters.)
inline void ReduceRows16(const __m512 (&v)[16], float* out) {
  __m512 z[8];  // z[m]: 256-bit half h holds row 2m + h's lanes l + (l + 8)
  for (int m = 0; m < 8; ++m) {
    z[m] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], 0x44),
                         _mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], 0xEE));
  }
  __m512 w[4];  // w[p]: 128-bit lane k holds row 4p + k's lanes l + (l + 4)
  for (int p = 0; p < 4; ++p) {
    w[p] = _mm512_add_ps(_mm512_shuffle_f32x4(z[2 * p], z[2 * p + 1], 0x88),
                         _mm512_shuffle_f32x4(z[2 * p], z[2 * p + 1], 0xDD));
  }
  __m512 u[2];  // u[q]: 128-bit lane k = (l + (l + 2) for l = 0, 1) of rows 8q + k, 8q + 4 + k
  for (int q = 0; q < 2; ++q) {
    u[q] = _mm512_add_ps(_mm512_shuffle_ps(w[2 * q], w[2 * q + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(w[2 * q], w[2 * q + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  // 128-bit lane k, element e: row 4e + k.
  const __m512 r = _mm512_add_ps(_mm512_shuffle_ps(u[0], u[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_ps(u[0], u[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  _mm512_storeu_ps(out, _mm512_permutexvar_ps(order, r));
}
}  // namespace
#endif

void GgmlDotF16Rows16(const uint16_t* x, int64_t stride, const uint16_t* y, int64_t n, float* out) {
#if defined(TROUPE_GGML_AVX512)
  if (n > 0 && n % 64 == 0) {
    // Each row's lanes as in GgmlDotF16 (DotF16Lanes), then their sums.
    __m512 v[16];
    for (int j = 0; j < 16; ++j) v[j] = DotF16Lanes(x + j * stride, y, n);
    ReduceRows16(v, out);
    return;
  }
#elif defined(TROUPE_GGML_AVX2)
  if (n > 0 && n % 32 == 0) {
    // Each row's lanes as in GgmlDotF16, then eight horizontal sums at once.
    for (int g = 0; g < 16; g += 8) {
      __m256 v[8];
      for (int j = 0; j < 8; ++j) v[j] = DotF16Lanes8(x + (g + j) * stride, y, n);
      _mm256_storeu_ps(out + g, HaddReduce8x8(v));
    }
    return;
  }
#endif
  for (int j = 0; j < 16; ++j) out[j] = GgmlDotF16(x + j * stride, y, n);
}

// ggml_vec_soft_max_f32 over n values already max-subtracted inputs x - max:
// y = exp(x - max) (ggml_v_expf in blocks of 16 from value 0, expf for the
// rest), returns the double sum of per-block _mm512_reduce_add_ps (AVX-512) or
// of each value (portable).
double GgmlSoftMaxExp(const float* x, float max, float* y, int64_t n) {
  double sum = 0.0;
  int64_t i = 0;
#if defined(TROUPE_GGML_AVX512)
  for (; i + 16 <= n; i += 16) {
    const __m512 v = GgmlExp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), _mm512_set1_ps(max)));
    _mm512_storeu_ps(y + i, v);
    sum += static_cast<double>(_mm512_reduce_add_ps(v));
  }
#elif defined(TROUPE_GGML_AVX2)
  for (; i + 8 <= n; i += 8) {
    const __m256 v = GgmlExp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), _mm256_set1_ps(max)));
    _mm256_storeu_ps(y + i, v);
    sum += static_cast<double>(MovehlReduce8(v));
  }
#endif
  for (; i < n; ++i) {
    const float v = std::exp(x[i] - max);
    sum += static_cast<double>(v);
    y[i] = v;
  }
  return sum;
}

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
  int64_t i = 0;
#if defined(TROUPE_GGML_AVX512)
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(gate + i, _mm512_mul_ps(GgmlSilu16(_mm512_loadu_ps(gate + i)), _mm512_loadu_ps(up + i)));
  }
#elif defined(TROUPE_GGML_AVX2)
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(gate + i, _mm256_mul_ps(GgmlSilu8(_mm256_loadu_ps(gate + i)), _mm256_loadu_ps(up + i)));
  }
#endif
  for (; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];  // ggml_silu_f32, the scalar tail
  }
}

namespace {

float GgmlGeluF32(float x) {
  constexpr float kCoefA = 0.044715f;
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  // ggml-cpu is C compiled with GNU contraction: 1 + a·x·x becomes fma(a·x, x, 1).
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * std::fma(kCoefA * x, x, 1.0f)));
}

struct GeluTableData {
  uint16_t v[1 << 16];
  GeluTableData() {
    for (uint32_t h = 0; h < (1u << 16); ++h) {
      const float y = GgmlGeluF32(Fp16ToFp32(static_cast<uint16_t>(h)));
      // ggml reads the fp16 inputs through a conversion that drops NaN
      // payloads: a NaN entry is the quiet NaN of its sign.
      v[h] = std::isnan(y) ? (std::signbit(y) ? 0xfe00 : 0x7e00) : Fp32ToFp16(y);
    }
  }
};

}  // namespace

const uint16_t* GeluTable() {
  static const GeluTableData table;
  return table.v;
}

void GeluMul(float* gate, const float* up, int64_t n) {
  const uint16_t* table = GeluTable();
  int64_t i = 0;
#if defined(TROUPE_GGML_AVX512)
  // The same values 16 at a time: vcvtps2ph (round to nearest even) is
  // Fp32ToFp16, and the table widened to fp32 once is Fp16ToFp32 of each
  // entry, so a gather gives the scalar loop's product bit for bit; NaN
  // inputs fail both compares and take the table, as there.
  struct Widened {
    float v[1 << 16];
    explicit Widened(const uint16_t* t) {
      for (uint32_t h = 0; h < (1u << 16); ++h) v[h] = Fp16ToFp32(t[h]);
    }
  };
  static const Widened* wide = new Widened(table);
  constexpr int kRne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  for (; i + 16 <= n; i += 16) {
    const __m512 x = _mm512_loadu_ps(gate + i);
    const __m512 u = _mm512_loadu_ps(up + i);
    const __m512i h = _mm512_cvtepu16_epi32(_mm512_cvtps_ph(x, kRne));
    __m512 y = _mm512_mul_ps(_mm512_i32gather_ps(h, wide->v, 4), u);
    y = _mm512_mask_mul_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(10.0f), _CMP_GE_OQ), x, u);
    y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(-10.0f), _CMP_LE_OQ), _mm512_setzero_ps());
    _mm512_storeu_ps(gate + i, y);
  }
#endif
  for (; i < n; ++i) {
    const float x = gate[i];
    if (x <= -10.0f) {
      gate[i] = 0.0f;
    } else if (x >= 10.0f) {
      gate[i] = x * up[i];
    } else {
      gate[i] = Fp16ToFp32(table[Fp32ToFp16(x)]) * up[i];
    }
  }
}

void AddInPlace(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void ToHalf(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  // vcvtps2ph rounding to nearest even gives Fp32ToFp16's bits, NaN payloads
  // included (HalfTest.Fp32ToFp16MatchesF16C).
  constexpr int kRne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
#if defined(TROUPE_GGML_AVX512)
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm512_cvtps_ph(_mm512_loadu_ps(src + i), kRne));
  }
#endif
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), kRne));
  }
#endif
  for (; i < n; ++i) dst[i] = Fp32ToFp16(src[i]);
}

void Attention(const float* q, const uint16_t* keys, const uint16_t* values, const AttentionShape& s, int64_t start,
               int64_t t, float* out, int threads) {
  const AttentionRows one{q, keys, values, s.cache_stride, start, t, out};
  AttentionBatch(s, &one, 1, threads);
}

namespace {

// llama.cpp's non-flash attention for one query row (ggml graph: kq =
// mul_mat(k, q) with q rounded to fp16 and ggml_vec_dot_f16 per key,
// soft_max_ext(kq * scale, causal mask), kqv = mul_mat(v^T, kq) with the
// probabilities rounded to fp16 and ggml_vec_dot_f16 over the positions),
// computed in the same order. llama.cpp pads its key range to a multiple of
// 256 with masked cells; those contribute exact zeros to every sum, so we
// stop at the last real position (softmax blocks are still aligned to 16
// from position 0, the padding being exp(-inf) = 0).

// Where one head's query row attends: positions [first, len) of its cache
// (causal, and a sliding window masks those before `first`).
struct AttendSpan {
  int64_t len = 0;    // start + i + 1
  int64_t len16 = 0;  // len rounded up to a multiple of 16 (the softmax's blocks)
  int64_t first = 0;
  AttendSpan(const AttentionShape& s, const AttentionRows& a, int64_t i)
      : len(a.start + i + 1),
        len16((len + 15) / 16 * 16),
        first(s.window > 0 ? std::max<int64_t>(0, len - s.window) : 0) {}
};

// Per-thread scratch, kept across calls; Size fits it to `heads` heads
// attended together, keys up to `padded_keys` (a multiple of 16) and head
// dimension d.
struct AttendScratch {
  std::vector<float> scores, probs, pw, acc, qf, kf;
  std::vector<uint16_t> qh, ph;
  int64_t padded = 0;  // floats per head in scores and pw
  void Size(int64_t heads, int64_t padded_keys, int64_t d) {
    padded = padded_keys;
    scores.resize(heads * padded);
    probs.resize(padded);
    pw.resize(heads * padded);
    acc.resize(64 * std::max(heads * 64, d));  // AttendHead: [64][d]; AttendHeadsAvx512: [heads][64][64]
    qf.resize(heads * d);
    kf.resize(16 * d);
    qh.resize(heads * d);
    ph.resize(padded);
  }
};

// scores[first, len) *= scale, masked below first and past len (to len16);
// returns the max over [first, len).
float ScaleAndMask(float* scores, const AttendSpan& p, float scale) {
  float max_score = -INFINITY;
  for (int64_t c = 0; c < p.first; ++c) scores[c] = -INFINITY;
  for (int64_t c = p.first; c < p.len; ++c) {
    scores[c] *= scale;
    max_score = std::max(max_score, scores[c]);
  }
  for (int64_t c = p.len; c < p.len16; ++c) scores[c] = -INFINITY;
  return max_score;
}

#if defined(TROUPE_GGML_AVX512)
// pw[j] = fp32(fp16(probs[j] * inv)) for j < len16 (a multiple of 16): the
// probabilities as ggml's value sums read them.
void RoundProbs16(const float* probs, float inv, int64_t len16, float* pw) {
  constexpr int kRne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;  // = Fp32ToFp16's rounding
  for (int64_t j = 0; j < len16; j += 16) {
    const __m512 pr = _mm512_mul_ps(_mm512_loadu_ps(probs + j), _mm512_set1_ps(inv));
    _mm512_storeu_ps(pw + j, _mm512_cvtph_ps(_mm512_cvtps_ph(pr, kRne)));
  }
}

// 16 outputs of a value sum from ggml's 64 accumulator lanes (lane l's 16
// values at acc + l * stride): (l + (l + 32)) + ((l + 16) + (l + 48)), then
// _mm512_reduce_add_ps over the lanes, transposed: l and l + 8, then l and
// l + 4, then (0 + 2) + (1 + 3).
[[gnu::always_inline]] inline __m512 ReduceLanes64(const float* acc, int64_t stride) {
  __m512 y[16];
  for (int l = 0; l < 16; ++l) {
    const __m512 x0 = _mm512_add_ps(_mm512_loadu_ps(acc + l * stride), _mm512_loadu_ps(acc + (32 + l) * stride));
    const __m512 x1 = _mm512_add_ps(_mm512_loadu_ps(acc + (16 + l) * stride), _mm512_loadu_ps(acc + (48 + l) * stride));
    y[l] = _mm512_add_ps(x0, x1);
  }
  for (int l = 0; l < 8; ++l) y[l] = _mm512_add_ps(y[l + 8], y[l]);
  for (int l = 0; l < 4; ++l) y[l] = _mm512_add_ps(y[l + 4], y[l]);
  return _mm512_add_ps(_mm512_add_ps(y[0], y[2]), _mm512_add_ps(y[1], y[3]));
}
#endif

// Head h of query row i, on its own: the path for every instruction set and
// head dimension.
void AttendHead(const AttentionShape& s, const AttentionRows& a, int64_t i, int64_t h, float scale, AttendScratch& x) {
  const int64_t d = s.head_dim;
  const int64_t row = s.n_heads * d;
  const int64_t kvh = h / (s.n_heads / s.n_kv_heads);
  const int64_t max_length = a.cache_stride / d;  // positions the cache holds per kv head
  const AttendSpan p(s, a, i);
  uint16_t* qh = x.qh.data();
  float* scores = x.scores.data();
  float* probs = x.probs.data();
  ToHalf(a.q + i * row + h * d, qh, d);
  const uint16_t* k = a.keys + kvh * a.cache_stride;
  const uint16_t* v = a.values + kvh * a.cache_stride;
  int64_t j = p.first / 16 * 16;  // whole blocks below `first` are only masked
  for (; j + 16 <= p.len; j += 16) GgmlDotF16Rows16(k + j * d, d, qh, d, &scores[j]);
  if (j < p.len && j + 16 <= max_length) {
    // The last len % 16 keys: 16 rows at once is faster than one at a
    // time; rows past len (allocated, not yet written) are computed and
    // dropped.
    float tail[16];
    GgmlDotF16Rows16(k + j * d, d, qh, d, tail);
    for (int64_t c = j; c < p.len; ++c) scores[c] = tail[c - j];
    j = p.len;
  }
  for (; j < p.len; ++j) scores[j] = GgmlDotF16(k + j * d, qh, d);
  const float max_score = ScaleAndMask(scores, p, scale);
  const double sum = GgmlSoftMaxExp(scores, max_score, probs, p.len16);
  const float inv = static_cast<float>(1.0 / sum);
  float* o = a.out + i * row + h * d;
#if defined(TROUPE_GGML_AVX512) || defined(TROUPE_GGML_AVX2)
  float* pw = x.pw.data();  // probabilities through fp16 and back
  float* acc = x.acc.data();
#endif
#if defined(TROUPE_GGML_AVX512)
  if (d % 16 == 0) {
    RoundProbs16(probs, inv, p.len16, pw);  // past len: exp(-inf) = 0
    // ggml_vec_dot_f16(n_kv, v^T[e], p) for all e at once: position j
    // feeds accumulator lane j % 64 (ggml's 4 x 16 lanes), block by block.
    std::fill(acc, acc + 64 * d, 0.0f);
    for (int64_t j = p.first; j < p.len; ++j) {  // masked keys add exact zeros
      const __m512 pj = _mm512_set1_ps(pw[j]);
      float* aj = &acc[(j % 64) * d];
      for (int64_t e = 0; e < d; e += 16)
        _mm512_storeu_ps(aj + e, _mm512_fmadd_ps(LoadHalf16(v + j * d + e), pj, _mm512_loadu_ps(aj + e)));
    }
    for (int64_t e = 0; e < d; e += 16) _mm512_storeu_ps(o + e, ReduceLanes64(acc + e, d));
    return;
  }
#endif
#if defined(TROUPE_GGML_AVX2)
  if (d % 16 == 0) {
    constexpr int kRne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;  // = Fp32ToFp16's rounding
    for (int64_t j = 0; j < p.len16; j += 8) {                           // past len: exp(-inf) = 0
      const __m256 pr = _mm256_mul_ps(_mm256_loadu_ps(&probs[j]), _mm256_set1_ps(inv));
      _mm256_storeu_ps(&pw[j], _mm256_cvtph_ps(_mm256_cvtps_ph(pr, kRne)));
    }
    // AVX2: GGML_F16_STEP 32, position j -> accumulator lane j % 32.
    std::fill(acc, acc + 32 * d, 0.0f);
    for (int64_t j = p.first; j < p.len; ++j) {
      const __m256 pj = _mm256_broadcast_ss(&pw[j]);
      float* aj = &acc[(j % 32) * d];
      for (int64_t e = 0; e < d; e += 8)
        _mm256_storeu_ps(aj + e, _mm256_fmadd_ps(LoadHalf8(v + j * d + e), pj, _mm256_loadu_ps(aj + e)));
    }
    for (int64_t e = 0; e < d; e += 8) {
      __m256 y[8];
      for (int l = 0; l < 8; ++l) {
        const __m256 x0 = _mm256_add_ps(_mm256_loadu_ps(&acc[l * d + e]), _mm256_loadu_ps(&acc[(16 + l) * d + e]));
        const __m256 x1 =
            _mm256_add_ps(_mm256_loadu_ps(&acc[(8 + l) * d + e]), _mm256_loadu_ps(&acc[(24 + l) * d + e]));
        y[l] = _mm256_add_ps(x0, x1);
      }
      // HaddReduce8 transposed: lanes l + (l + 4), then (0 + 1) + (2 + 3).
      for (int l = 0; l < 4; ++l) y[l] = _mm256_add_ps(y[l], y[l + 4]);
      _mm256_storeu_ps(o + e, _mm256_add_ps(_mm256_add_ps(y[0], y[1]), _mm256_add_ps(y[2], y[3])));
    }
    return;
  }
#endif
  uint16_t* ph = x.ph.data();
  for (int64_t j = 0; j < p.len; ++j) ph[j] = Fp32ToFp16(probs[j] * inv);
  // Portable ggml: a double sum of fp32 products, position by position.
  for (int64_t e = 0; e < d; ++e) {
    double sum_e = 0.0;
    for (int64_t j = 0; j < p.len; ++j) sum_e += static_cast<double>(Fp16ToFp32(v[j * d + e]) * Fp16ToFp32(ph[j]));
    o[e] = static_cast<float>(sum_e);
  }
}

#if defined(TROUPE_GGML_AVX512)
// Heads [h0, h0 + G) of query row i, all reading one kv head, head_dim a
// multiple of 64: AttendHead's arithmetic for each, bit for bit, with what
// the heads share done once. Each key block is widened to fp32 once
// (exactly) for all G heads' scores, each value row once for all G heads'
// sums; each of ggml's 64 accumulator lanes of a value sum is one register
// chain over its positions (j, j + 64, ...) instead of a load and a store per
// position. With 16 sessions' steps (GQA groups of 3) this is ~1.45x the
// one-head path; the cache is read from DRAM either way.
template <int G>
void AttendHeadsAvx512(const AttentionShape& s, const AttentionRows& a, int64_t i, int64_t h0, float scale,
                       AttendScratch& x) {
  const int64_t d = s.head_dim;
  const int64_t row = s.n_heads * d;
  const int64_t kvh = h0 / (s.n_heads / s.n_kv_heads);
  const int64_t max_length = a.cache_stride / d;
  const int64_t padded = x.padded;
  const AttendSpan p(s, a, i);
  const uint16_t* k = a.keys + kvh * a.cache_stride;
  const uint16_t* v = a.values + kvh * a.cache_stride;
  float* qf = x.qf.data();  // each head's query rounded to fp16 (qh), widened back
  for (int g = 0; g < G; ++g) {
    uint16_t* qh = x.qh.data() + g * d;
    ToHalf(a.q + i * row + (h0 + g) * d, qh, d);
    for (int64_t e = 0; e < d; e += 16) _mm512_storeu_ps(qf + g * d + e, LoadHalf16(qh + e));
  }
  // Scores, 16 keys at a time: ggml_vec_dot_f16's FMA chains over the
  // widened values (fma(k, q) with exact fp32 operands is the fp16 one) and
  // GgmlDotF16Rows16's horizontal sums.
  float* kf = x.kf.data();
  int64_t j = p.first / 16 * 16;
  for (; j < p.len && j + 16 <= max_length; j += 16) {
    // Past len (the last block): cells allocated, not yet written, whose
    // scores are dropped.
    for (int r = 0; r < 16; ++r)
      for (int64_t e = 0; e < d; e += 16) _mm512_storeu_ps(kf + r * d + e, LoadHalf16(k + (j + r) * d + e));
    for (int g = 0; g < G; ++g) {
      const float* qg = qf + g * d;
      __m512 lanes[16];
      for (int r = 0; r < 16; ++r) {
        __m512 c4[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
        for (int64_t e = 0; e < d; e += 64)
          for (int c = 0; c < 4; ++c)
            c4[c] = _mm512_fmadd_ps(_mm512_loadu_ps(kf + r * d + e + 16 * c), _mm512_loadu_ps(qg + e + 16 * c), c4[c]);
        lanes[r] = _mm512_add_ps(_mm512_add_ps(c4[0], c4[2]), _mm512_add_ps(c4[1], c4[3]));
      }
      float out16[16];
      ReduceRows16(lanes, out16);
      float* sc = x.scores.data() + g * padded;
      for (int r = 0; r < 16 && j + r < p.len; ++r) sc[j + r] = out16[r];
    }
  }
  for (; j < p.len; ++j)  // a cache too short for a whole last block
    for (int g = 0; g < G; ++g) x.scores[g * padded + j] = GgmlDotF16(k + j * d, x.qh.data() + g * d, d);
  // Softmax per head; probabilities through fp16 and back.
  for (int g = 0; g < G; ++g) {
    float* sc = x.scores.data() + g * padded;
    const float max_score = ScaleAndMask(sc, p, scale);
    const double sum = GgmlSoftMaxExp(sc, max_score, x.probs.data(), p.len16);
    RoundProbs16(x.probs.data(), static_cast<float>(1.0 / sum), p.len16, x.pw.data() + g * padded);
  }
  // Value sums, 64 outputs at a time: ggml_vec_dot_f16(n_kv, v^T[e], p),
  // position j feeding lane j % 64 (fma(v, p, lane) from +0, positions in
  // order; masked ones add exact zeros and are skipped), then the lanes
  // reduced as in AttendHead.
  float* acc = x.acc.data();  // [G][64 lanes][64 outputs]
  for (int64_t e0 = 0; e0 < d; e0 += 64) {
    for (int64_t l = 0; l < 64; ++l) {
      __m512 sum[G][4];
      for (int g = 0; g < G; ++g)
        for (int c = 0; c < 4; ++c) sum[g][c] = _mm512_setzero_ps();
      int64_t jj = l;
      if (jj < p.first) jj += (p.first - l + 63) / 64 * 64;
      for (; jj < p.len; jj += 64) {
        for (int c = 0; c < 4; ++c) {
          const __m512 vj = LoadHalf16(v + jj * d + e0 + 16 * c);
          for (int g = 0; g < G; ++g) sum[g][c] = _mm512_fmadd_ps(vj, _mm512_set1_ps(x.pw[g * padded + jj]), sum[g][c]);
        }
      }
      for (int g = 0; g < G; ++g)
        for (int c = 0; c < 4; ++c) _mm512_storeu_ps(acc + (g * 64 + l) * 64 + 16 * c, sum[g][c]);
    }
    for (int g = 0; g < G; ++g)
      for (int c = 0; c < 4; ++c)
        _mm512_storeu_ps(a.out + i * row + (h0 + g) * d + e0 + 16 * c, ReduceLanes64(acc + g * 64 * 64 + 16 * c, 64));
  }
}
#endif

// How many heads of one kv head's group an item attends together: the
// largest of 4, 3, 2 that divides the group, on the AVX-512 path with head
// sizes a multiple of 64; else 1 (AttendHead).
int64_t HeadsTogether(const AttentionShape& s) {
#if defined(TROUPE_GGML_AVX512)
  const int64_t group = s.n_heads / s.n_kv_heads;
  if (s.head_dim % 64 == 0)
    for (int64_t g : {4, 3, 2})
      if (group % g == 0) return g;
#endif
  (void)s;
  return 1;
}

// Query row i's heads [h0, h0 + heads) (heads from HeadsTogether, or 1:
// one at a time).
void AttendHeads(const AttentionShape& s, const AttentionRows& a, int64_t i, int64_t h0, int64_t heads, float scale,
                 AttendScratch& x) {
#if defined(TROUPE_GGML_AVX512)
  if (s.head_dim % 64 == 0) {
    switch (heads) {
      case 2: return AttendHeadsAvx512<2>(s, a, i, h0, scale, x);
      case 3: return AttendHeadsAvx512<3>(s, a, i, h0, scale, x);
      case 4: return AttendHeadsAvx512<4>(s, a, i, h0, scale, x);
      default: break;
    }
  }
#endif
  for (int64_t h = h0; h < h0 + heads; ++h) AttendHead(s, a, i, h, scale, x);
}

}  // namespace

void AttentionBatch(const AttentionShape& s, const AttentionRows* sessions, int count, int threads) {
  const int64_t d = s.head_dim;
  const float scale = s.scale != 0 ? s.scale : 1.0f / std::sqrt(static_cast<float>(d));
  int64_t rows = 0, cost = 0, longest = 0;
  for (int n = 0; n < count; ++n) {
    const AttentionRows& a = sessions[n];
    rows += a.t;
    cost += s.n_heads * a.t * (a.start + a.t) * d;
    longest = std::max(longest, a.start + a.t);
  }
  const bool parallel = cost > 65536 && threads > 1;
  // Work items are (session, query row, heads attended together), session by
  // session; item_end[n] is one past session n's last. Heads of one kv head
  // go together unless that leaves too few items to share among the threads
  // (one session's decode step: 3 kv heads for 2 threads).
  int64_t together = HeadsTogether(s);
  if (parallel && rows * (s.n_heads / together) < 4 * threads) together = 1;
  const int64_t per_row = s.n_heads / together;
  std::vector<int64_t> item_end(count);
  int64_t work = 0;
  for (int n = 0; n < count; ++n) {
    work += per_row * sessions[n].t;
    item_end[n] = work;
  }
  // Parts of about equal cost, several per thread, go to whichever thread is
  // free: an item's cost grows with its row's position, so equal item counts
  // left the thread with a prefill's later rows ~3/4 of the work, and a
  // decode step's 9 heads split 5/4. Each item is computed alone, so the
  // split does not change a bit of the output.
  const int parts = parallel ? static_cast<int>(std::min<int64_t>(work, threads * 8)) : 1;
  std::vector<int64_t> bounds(parts + 1, work);
  bounds[0] = 0;
  if (parts > 1) {
    int64_t total = 0;  // the items' exact cost: row i of a session attends start + i + 1 positions
    for (int n = 0; n < count; ++n) {
      const AttentionRows& a = sessions[n];
      total += per_row * (a.t * a.start + a.t * (a.t + 1) / 2);
    }
    int64_t w = 0, so_far = 0;
    int next = 1;
    for (int n = 0; n < count && next < parts; ++n) {
      const AttentionRows& a = sessions[n];
      for (int64_t i = 0; i < a.t && next < parts; ++i) {
        for (int64_t h = 0; h < per_row && next < parts; ++h, ++w) {
          so_far += a.start + i + 1;
          while (next < parts && so_far * parts >= total * next) bounds[next++] = w + 1;
        }
      }
    }
  }
  auto body = [&](int64_t w_begin, int64_t w_end) {
    thread_local AttendScratch scratch;
    scratch.Size(together, (longest + 15) / 16 * 16, d);
    int n = static_cast<int>(std::upper_bound(item_end.begin(), item_end.end(), w_begin) - item_end.begin());
    for (int64_t w = w_begin; w < w_end; ++w) {
      while (w >= item_end[n]) ++n;
      const AttentionRows& a = sessions[n];
      const int64_t local = w - (item_end[n] - per_row * a.t);
      AttendHeads(s, a, local / per_row, local % per_row * together, together, scale, scratch);
    }
  };
  if (parts == 1) {
    if (work > 0) body(0, work);
    return;
  }
  ThreadPool::Global().Run(
      parts, [&](int p) { body(bounds[p], bounds[p + 1]); }, threads);
}

}  // namespace troupe
