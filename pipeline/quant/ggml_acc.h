// The accumulator of the ggml-order kernels (Q4_1 x Q8_1, Q8_0 x Q8_0), for
// tile_driver.h: eight fp32 lanes plus Q4_1's scalar summs chain, summed as
// ggml's hsum_float_8 (ggml-cpu/arch/x86/quants.c; credit: ggml) and then
// + summs, so that a kernel feeding it in ggml's block order computes
// llama.cpp's ggml_vec_dot_q4_1_q8_1 / ggml_vec_dot_q8_0_q8_0 bit for bit.
//
// Included by the AVX2 and the AVX-512 kernel files (compiled with at least
// AVX2 + FMA). Internal linkage on purpose: each translation unit keeps its
// own copy built for its own ISA — a shared inline definition could be taken
// from the AVX-512 unit into code that runs on an AVX2-only CPU.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace troupe {
namespace {  // NOLINT(build/namespaces): see above

struct GgmlAcc {
  __m256 v;
  __m128 s;  // summs in lane 0 (Q4_1; zero for Q8_0)
};

inline float GgmlSum(const GgmlAcc& a) {
  __m128 r = _mm_add_ps(_mm256_extractf128_ps(a.v, 1), _mm256_castps256_ps128(a.v));
  r = _mm_add_ps(r, _mm_movehl_ps(r, r));
  r = _mm_add_ss(r, _mm_movehdup_ps(r));
  return _mm_cvtss_f32(_mm_add_ss(r, a.s));
}

struct GgmlAccPolicy {
  using Acc = GgmlAcc;
  static GgmlAcc Zero() { return {_mm256_setzero_ps(), _mm_setzero_ps()}; }
  static float Sum(const GgmlAcc& a) { return GgmlSum(a); }
  // GgmlSum of each, bit for bit, four at a time: the same additions on
  // the same values, with the four rows' partial sums transposed into lanes.
  static void Sum4(const GgmlAcc& a, const GgmlAcc& b, const GgmlAcc& c, const GgmlAcc& d, float* out) {
    __m128 ra = _mm_add_ps(_mm256_extractf128_ps(a.v, 1), _mm256_castps256_ps128(a.v));
    __m128 rb = _mm_add_ps(_mm256_extractf128_ps(b.v, 1), _mm256_castps256_ps128(b.v));
    __m128 rc = _mm_add_ps(_mm256_extractf128_ps(c.v, 1), _mm256_castps256_ps128(c.v));
    __m128 rd = _mm_add_ps(_mm256_extractf128_ps(d.v, 1), _mm256_castps256_ps128(d.v));
    _MM_TRANSPOSE4_PS(ra, rb, rc, rd);  // ra: every row's lane 0, rb: lane 1, ...
    const __m128 sum = _mm_add_ps(_mm_add_ps(ra, rc), _mm_add_ps(rb, rd));
    const __m128 s = _mm_movelh_ps(_mm_unpacklo_ps(a.s, b.s), _mm_unpacklo_ps(c.s, d.s));
    _mm_storeu_ps(out, _mm_add_ps(sum, s));
  }
};

// Accumulators in llama.cpp's order. Vec_dot (ggml_vec_dot_q4_K_q8_K /
// _q6_K_q8_K, the __AVX2__ branch): eight fp32 lanes v, lane m taking the
// int32 sum over the super-block of values 4m..4m+3 of every 32-value chunk
// (with their scales), acc = fma(d, float(lane), acc) once per super-block;
// Q4_K adds four lanes m of min terms, summed as (m0+m2)+(m1+m3) and added
// after hsum_float_8(v). Repacked (ggml_gemv_q4_K_8x8_q8_K): one chain per
// row for the whole super-block's integer dot and one for its min term, in
// lanes 0 and 1 of r; the output is r0 - r1.
struct KAcc {
  __m256 v;
  __m128 m;
};

inline float KSum(const KAcc& a) {
  __m128 r = _mm_add_ps(_mm256_extractf128_ps(a.v, 1), _mm256_castps256_ps128(a.v));
  r = _mm_add_ps(r, _mm_movehl_ps(r, r));
  r = _mm_add_ss(r, _mm_movehdup_ps(r));
  __m128 m = _mm_add_ps(a.m, _mm_movehl_ps(a.m, a.m));
  m = _mm_add_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(r) + _mm_cvtss_f32(m);
}

struct KAccPolicy {
  using Acc = KAcc;
  static KAcc Zero() { return {_mm256_setzero_ps(), _mm_setzero_ps()}; }
  static float Sum(const KAcc& a) { return KSum(a); }
  static void Sum4(const KAcc& a, const KAcc& b, const KAcc& c, const KAcc& d, float* out) {
    out[0] = KSum(a);
    out[1] = KSum(b);
    out[2] = KSum(c);
    out[3] = KSum(d);
  }
};

// The accumulator of the kernels for matrices llama.cpp repacks (Q4_0 and
// Q4_K with rows % 8 == 0; ggml_gemv_q4_0_8x8_q8_0 / _q4_K_8x8_q8_K in
// ggml-cpu/arch/x86/repack.cpp): one fp32 chain per output in lane 0 and,
// for Q4_K, the chain of its min terms in lane 1; the output is lane 0 - lane 1.
struct RepackAccPolicy {
  using Acc = __m128;
  static __m128 Zero() { return _mm_setzero_ps(); }
  static float Sum(__m128 a) { return _mm_cvtss_f32(_mm_sub_ss(a, _mm_movehdup_ps(a))); }
  static void Sum4(__m128 a, __m128 b, __m128 c, __m128 d, float* out) {
    out[0] = Sum(a);
    out[1] = Sum(b);
    out[2] = Sum(c);
    out[3] = Sum(d);
  }
};

// Sum of the eight int32 lanes in lane 0 (exact; any order gives the same
// integer), kept in a vector register.
inline __m128i SumI32x8(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  return _mm_add_epi32(s, _mm_srli_epi64(s, 32));
}

}  // namespace
}  // namespace troupe
