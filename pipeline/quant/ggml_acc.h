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
  static void Sum4(const GgmlAcc& a, const GgmlAcc& b, const GgmlAcc& c, const GgmlAcc& d, float* out) {
    out[0] = GgmlSum(a);
    out[1] = GgmlSum(b);
    out[2] = GgmlSum(c);
    out[3] = GgmlSum(d);
  }
};

}  // namespace
}  // namespace troupe
