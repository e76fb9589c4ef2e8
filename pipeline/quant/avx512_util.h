// Small AVX-512 helpers shared by the AVX-512 kernel files (internal; include
// only from translation units compiled with AVX-512 enabled).
#pragma once

#include <immintrin.h>

namespace troupe {
namespace avx512 {

// Mask with the low n bits set, n in [0, 16] / [0, 32].
inline __mmask16 Mask16(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
inline __mmask32 Mask32(int n) {
  return n >= 32 ? static_cast<__mmask32>(0xFFFFFFFFu) : static_cast<__mmask32>((1u << n) - 1u);
}

inline __m256 Fold256(__m512 v) {
  return _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

// fp32 accumulator policy for tile_driver.h. The horizontal sum of v is
// ((f0 + f1) + (f2 + f3)) + ((f4 + f5) + (f6 + f7)) with f_i = v_i + v_(i+8),
// in Sum and in each lane of Sum4 alike (batch invariance needs the same
// rounding whichever of the two an output goes through).
struct FloatAcc {
  using Acc = __m512;
  static __m512 Zero() { return _mm512_setzero_ps(); }
  static float Sum(__m512 v) {
    const __m256 f = Fold256(v);
    const __m256 h = _mm256_hadd_ps(f, f);   // f01 f23 f01 f23 | f45 f67 ..
    const __m256 h2 = _mm256_hadd_ps(h, h);  // f0-3 .. | f4-7 ..
    return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(h2), _mm256_extractf128_ps(h2, 1)));
  }
  // out[k] = Sum(k-th argument), bit for bit.
  static void Sum4(__m512 a, __m512 b, __m512 c, __m512 d, float* out) {
    const __m256 ab = _mm256_hadd_ps(Fold256(a), Fold256(b));  // a01 a23 b01 b23 | a45 ..
    const __m256 cd = _mm256_hadd_ps(Fold256(c), Fold256(d));
    const __m256 abcd = _mm256_hadd_ps(ab, cd);  // a0-3 b0-3 c0-3 d0-3 | a4-7 ..
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
  }
};

}  // namespace avx512
}  // namespace troupe
