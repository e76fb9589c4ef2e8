// AVX-512 kernels for the K-quants: Q4_K against kQ8KPaired activations,
// Q6_K against kQ8K.
//
// One super-block (256 values) is four 64-value registers. Weight values are
// unsigned (Q4_K nibbles 0..15, Q6_K 0..63) so maddubs multiplies them with
// the signed activations into int16 pairs, and madd applies the sub-block
// scales (int16 per lane, broadcast per 16/32 values with a word permute)
// while widening to int32. The whole super-block stays integer; one
// conversion and FMA per super-block applies d_w * d_x. Q4_K's min term and
// Q6_K's -32 offset use the activation block sums.

#include "pipeline/quant/kernels.h"

#include "pipeline/quant/avx512_guard.h"

#if defined(TROUPE_HAVE_AVX512)
#include <cstring>

#include "pipeline/quant/activations.h"
#include "pipeline/quant/avx512_util.h"
#include "pipeline/quant/blocks.h"
#include "pipeline/quant/tile_driver.h"
#endif

namespace troupe {

#if defined(TROUPE_HAVE_AVX512)
namespace {

inline float HalfAt(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof h);
  return _cvtsh_ss(h);
}

inline const ActBlockQ8K* XBlock(const MatmulArgs& a, int64_t t, int64_t sb) {
  return reinterpret_cast<const ActBlockQ8K*>(a.xq + t * a.xq_stride) + sb;
}

// Word permutation index: word w selects f(w).
template <class F>
inline __m512i WordIndex(const F& f) {
  alignas(64) int16_t idx[32];
  for (int w = 0; w < 32; ++w) idx[w] = static_cast<int16_t>(f(w));
  return _mm512_load_si512(idx);
}

inline __m512i DotScaled(__m512i q_u8, const int8_t* x, __m512i scales16) {
  return _mm512_madd_epi16(_mm512_maddubs_epi16(q_u8, _mm512_load_si512(x)), scales16);
}

struct Q4KKernel : avx512::FloatAcc {
  static constexpr int kMaxR = 1, kMaxT = 4;
  static constexpr int64_t kBlockBytes = 144;

  template <int R, int T>
  static void Accumulate(const MatmulArgs& a, int64_t r, int64_t t0, __m512 (&acc)[R][T]) {
    static_assert(R == 1, "K-quant tiles are one weight row");
    // Register p holds qs[64p .. 64p + 63] (chunks 2p, 2p + 1): its low nibbles
    // are sub-blocks 4p (low 256 bits) and 4p + 2, its high nibbles 4p + 1 and
    // 4p + 3, which the kQ8KPaired activations store contiguously.
    __m512i sc_index[4];  // words 0..15 -> sub-block lo, 16..31 -> lo + 2
    for (int k = 0; k < 4; ++k) {
      const int lo = 4 * (k / 2) + k % 2;
      sc_index[k] = WordIndex([lo](int w) { return lo + 2 * (w / 16); });
    }
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    __m128 acc_min[T];
    for (int j = 0; j < T; ++j) acc_min[j] = _mm_setzero_ps();
    const uint8_t* row = a.w + r * a.row_bytes;
    for (int64_t sb = 0; sb < a.cols / 256; ++sb) {
      const uint8_t* p = row + sb * kBlockBytes;
      const float d = HalfAt(p), dmin = HalfAt(p + 2);
      uint64_t sc8, mn8;
      UnpackQ4KScalesPacked(p + 4, &sc8, &mn8);
      const __m128i sc16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(sc8)));
      const __m128i mn16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(mn8)));
      const __m512i scz = _mm512_castsi128_si512(sc16);
      __m512i q[4], s[4];
      for (int h = 0; h < 2; ++h) {
        const __m512i b = _mm512_loadu_si512(p + 16 + 64 * h);
        q[2 * h] = _mm512_and_si512(b, low4);
        q[2 * h + 1] = _mm512_and_si512(_mm512_srli_epi16(b, 4), low4);
      }
      for (int k = 0; k < 4; ++k) s[k] = _mm512_permutexvar_epi16(sc_index[k], scz);
      for (int j = 0; j < T; ++j) {
        const ActBlockQ8K* x = XBlock(a, t0 + j, sb);
        __m512i isum = DotScaled(q[0], x->q, s[0]);
        isum = _mm512_add_epi32(isum, DotScaled(q[1], x->q + 64, s[1]));
        isum = _mm512_add_epi32(isum, DotScaled(q[2], x->q + 128, s[2]));
        isum = _mm512_add_epi32(isum, DotScaled(q[3], x->q + 192, s[3]));
        acc[0][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(d * x->d), acc[0][j]);
        const __m128i msum = _mm_madd_epi16(mn16, _mm_load_si128(reinterpret_cast<const __m128i*>(x->bsum32)));
        acc_min[j] = _mm_fmadd_ps(_mm_cvtepi32_ps(msum), _mm_set1_ps(-dmin * x->d), acc_min[j]);
      }
    }
    for (int j = 0; j < T; ++j) {
      acc[0][j] = _mm512_add_ps(acc[0][j], _mm512_zextps128_ps512(acc_min[j]));
    }
  }
};

struct Q6KKernel : avx512::FloatAcc {
  static constexpr int kMaxR = 1, kMaxT = 4;
  static constexpr int64_t kBlockBytes = 210;

  template <int R, int T>
  static void Accumulate(const MatmulArgs& a, int64_t r, int64_t t0, __m512 (&acc)[R][T]) {
    static_assert(R == 1, "K-quant tiles are one weight row");
    // Register A of half h holds values 128h + 0..63 (16-blocks 8h + 0..3),
    // B holds 128h + 64..127 (16-blocks 8h + 4..7); one scale per 128 bits.
    __m512i sc_index[4];  // register k: 128-bit lane l -> 16-value block 4k + l
    for (int k = 0; k < 4; ++k) {
      sc_index[k] = WordIndex([k](int w) { return 4 * k + w / 8; });
    }
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i bits45 = _mm512_set1_epi8(0x30);
    const uint8_t* row = a.w + r * a.row_bytes;
    for (int64_t sb = 0; sb < a.cols / 256; ++sb) {
      const uint8_t* p = row + sb * kBlockBytes;
      const float d = HalfAt(p + 208);
      const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 192)));
      const __m512i scz = _mm512_castsi256_si512(sc16);
      __m512i q[4], s[4];
      for (int h = 0; h < 2; ++h) {
        const __m512i ql = _mm512_loadu_si512(p + 64 * h);
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 128 + 32 * h));
        // Bytes 0..31 use qh bits 0-1 / 4-5, bytes 32..63 bits 2-3 / 6-7.
        const __m512i qhz = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
        q[2 * h] = _mm512_or_si512(_mm512_and_si512(ql, low4), _mm512_and_si512(_mm512_slli_epi16(qhz, 4), bits45));
        q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4), _mm512_and_si512(qhz, bits45));
        s[2 * h] = _mm512_permutexvar_epi16(sc_index[2 * h], scz);
        s[2 * h + 1] = _mm512_permutexvar_epi16(sc_index[2 * h + 1], scz);
      }
      for (int j = 0; j < T; ++j) {
        const ActBlockQ8K* x = XBlock(a, t0 + j, sb);
        __m512i isum = DotScaled(q[0], x->q, s[0]);
        isum = _mm512_add_epi32(isum, DotScaled(q[1], x->q + 64, s[1]));
        isum = _mm512_add_epi32(isum, DotScaled(q[2], x->q + 128, s[2]));
        isum = _mm512_add_epi32(isum, DotScaled(q[3], x->q + 192, s[3]));
        // q - 32: subtract 32 * sum_k scale_k * bsum16_k.
        const __m256i corr = _mm256_madd_epi16(sc16, _mm256_load_si256(reinterpret_cast<const __m256i*>(x->bsum16)));
        isum = _mm512_sub_epi32(isum, _mm512_zextsi256_si512(_mm256_slli_epi32(corr, 5)));
        acc[0][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(d * x->d), acc[0][j]);
      }
    }
  }
};

}  // namespace

RowsKernel GetAvx512KQuantKernel(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_K: return tiling::Rows<Q4KKernel>;
    case GgmlType::Q6_K: return tiling::Rows<Q6KKernel>;
    default: return nullptr;
  }
}

#endif  // TROUPE_HAVE_AVX512

}  // namespace troupe
