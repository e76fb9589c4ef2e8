// AVX-512 kernels for the K-quants, in llama.cpp's orders (docs/quant-paths.md):
//   Q4_K, rows % 8 == 0: llama.cpp repacks it (q4_K_8x8) and runs
//     ggml_gemv_q4_K_8x8_q8_K: per output one fp32 chain of the super-blocks'
//     integer dots and one of their min terms, subtracted at the end;
//   Q4_K, rows % 8 != 0: ggml_vec_dot_q4_K_q8_K (__AVX2__ branch): eight fp32
//     lanes plus four lanes of min terms (KAccPolicy, ggml_acc.h);
//   Q6_K: ggml_vec_dot_q6_K_q8_K (__AVX2__ branch; x86 does not repack Q6_K):
//     eight fp32 lanes (GgmlAccPolicy).
// Q4_K reads kQ8KPaired activations, Q6_K kQ8K.
//
// One super-block (256 values) is four 64-value registers. Weight values are
// unsigned (Q4_K nibbles 0..15, Q6_K 0..63) so maddubs multiplies them with
// the signed activations into int16 pairs (no saturation: |sum| <= 2 * 63 *
// 128), and madd applies the sub-block scales while widening to int32. The
// sixteen int32 lanes fold to ggml's eight (Fold8) or sum to the block's dot;
// integer sums are exact in any order, so only the fp32 steps follow ggml.

#include "pipeline/quant/kernels.h"

#include "pipeline/quant/avx512_guard.h"

#if defined(TROUPE_HAVE_AVX512)
#include <cstring>

#include "pipeline/quant/activations.h"
#include "pipeline/quant/avx512_util.h"
#include "pipeline/quant/blocks.h"
#include "pipeline/quant/ggml_acc.h"
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

// The sixteen int32 lanes of a super-block's scaled dot folded to ggml's
// eight: lane i of the 512-bit sum covers values 4(i % 8)..4(i % 8) + 3 of a
// 32-value chunk, so lanes i and i + 8 meet in ggml's lane i % 8.
inline __m256i Fold8(__m512i v) { return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1)); }

// One Q4_K super-block decoded: register p holds qs[64p .. 64p + 63] (chunks
// 2p, 2p + 1): its low nibbles are sub-blocks 4p (low 256 bits) and 4p + 2,
// its high nibbles 4p + 1 and 4p + 3, which the kQ8KPaired activations store
// contiguously.
struct Q4KBlock {
  __m512i q[4], s[4];
  __m128i mn16;  // the 8 mins as int16
  float d, dmin;
};

struct Q4KDecoder {
  __m512i sc_index[4];  // words 0..15 -> sub-block lo, 16..31 -> lo + 2
  Q4KDecoder() {
    for (int k = 0; k < 4; ++k) {
      const int lo = 4 * (k / 2) + k % 2;
      sc_index[k] = WordIndex([lo](int w) { return lo + 2 * (w / 16); });
    }
  }
  void Decode(const uint8_t* p, Q4KBlock* b) const {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    b->d = HalfAt(p);
    b->dmin = HalfAt(p + 2);
    uint64_t sc8, mn8;
    UnpackQ4KScalesPacked(p + 4, &sc8, &mn8);
    const __m128i sc16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(sc8)));
    b->mn16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(mn8)));
    const __m512i scz = _mm512_castsi128_si512(sc16);
    for (int h = 0; h < 2; ++h) {
      const __m512i v = _mm512_loadu_si512(p + 16 + 64 * h);
      b->q[2 * h] = _mm512_and_si512(v, low4);
      b->q[2 * h + 1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
    }
    for (int k = 0; k < 4; ++k) b->s[k] = _mm512_permutexvar_epi16(sc_index[k], scz);
  }
};

// Sum over the super-block of sc * q * x (16 lanes) and the min terms
// m[2k] bsum32[2k] + m[2k + 1] bsum32[2k + 1] (4 lanes).
inline __m512i Q4KDot(const Q4KBlock& w, const ActBlockQ8K* x) {
  __m512i isum = DotScaled(w.q[0], x->q, w.s[0]);
  isum = _mm512_add_epi32(isum, DotScaled(w.q[1], x->q + 64, w.s[1]));
  isum = _mm512_add_epi32(isum, DotScaled(w.q[2], x->q + 128, w.s[2]));
  return _mm512_add_epi32(isum, DotScaled(w.q[3], x->q + 192, w.s[3]));
}
inline __m128i Q4KMins(const Q4KBlock& w, const ActBlockQ8K* x) {
  return _mm_madd_epi16(w.mn16, _mm_load_si128(reinterpret_cast<const __m128i*>(x->bsum32)));
}

// Q4_K as ggml_vec_dot_q4_K_q8_K: per super-block acc = fma(d_x d_w, lanes,
// acc), acc_m = fma(-d_x dmin_w, min lanes, acc_m).
struct Q4KVecDotKernel : KAccPolicy {
  static constexpr int kMaxR = 1, kMaxT = 4;
  static constexpr int64_t kBlockBytes = 144;

  template <int R, int T>
  static void Accumulate(const MatmulArgs& a, int64_t r, int64_t t0, KAcc (&acc)[R][T]) {
    static_assert(R == 1, "K-quant tiles are one weight row");
    static const Q4KDecoder dec;
    const uint8_t* row = a.w + r * a.row_bytes;
    for (int64_t sb = 0; sb < a.cols / 256; ++sb) {
      Q4KBlock w;
      dec.Decode(row + sb * kBlockBytes, &w);
      for (int j = 0; j < T; ++j) {
        const ActBlockQ8K* x = XBlock(a, t0 + j, sb);
        const __m256i lanes = Fold8(Q4KDot(w, x));
        acc[0][j].v = _mm256_fmadd_ps(_mm256_set1_ps(x->d * w.d), _mm256_cvtepi32_ps(lanes), acc[0][j].v);
        acc[0][j].m = _mm_fmadd_ps(_mm_set1_ps(-x->d * w.dmin), _mm_cvtepi32_ps(Q4KMins(w, x)), acc[0][j].m);
      }
    }
  }
};

// Q4_K as ggml_gemv_q4_K_8x8_q8_K (llama.cpp repacked the matrix): per
// super-block one int32 dot I and one min sum M per row, acc = fma(float(I),
// d_w d_x, acc), acc_min = fma(float(M), dmin_w d_x, acc_min); y = acc - acc_min.
struct Q4KRepackKernel : RepackAccPolicy {
  static constexpr int kMaxR = 1, kMaxT = 4;
  static constexpr int64_t kBlockBytes = 144;

  template <int R, int T>
  static void Accumulate(const MatmulArgs& a, int64_t r, int64_t t0, __m128 (&acc)[R][T]) {
    static_assert(R == 1, "K-quant tiles are one weight row");
    static const Q4KDecoder dec;
    const uint8_t* row = a.w + r * a.row_bytes;
    for (int64_t sb = 0; sb < a.cols / 256; ++sb) {
      Q4KBlock w;
      dec.Decode(row + sb * kBlockBytes, &w);
      for (int j = 0; j < T; ++j) {
        const ActBlockQ8K* x = XBlock(a, t0 + j, sb);
        // lane 0: the super-block's dot, lane 1: its min sum
        const __m256i dot8 = Fold8(Q4KDot(w, x));
        const __m128i dot4 = _mm_add_epi32(_mm256_castsi256_si128(dot8), _mm256_extracti128_si256(dot8, 1));
        const __m128i ints = _mm_hadd_epi32(_mm_hadd_epi32(dot4, Q4KMins(w, x)), _mm_setzero_si128());
        const __m128 scale = _mm_setr_ps(w.d * x->d, w.dmin * x->d, 0.0f, 0.0f);
        acc[0][j] = _mm_fmadd_ps(_mm_cvtepi32_ps(ints), scale, acc[0][j]);
      }
    }
  }
};

void Q4KRows(const MatmulArgs& a, int64_t r0, int64_t r1) {
  if (a.repacked) return tiling::Rows<Q4KRepackKernel>(a, r0, r1);
  tiling::Rows<Q4KVecDotKernel>(a, r0, r1);
}

// Q6_K as ggml_vec_dot_q6_K_q8_K: per super-block the eight lanes, less
// 32 (sc[2m] bsum16[2m] + sc[2m + 1] bsum16[2m + 1]) in lane m, then
// acc = fma(d_x d_w, lanes, acc) and hsum_float_8.
struct Q6KKernel : GgmlAccPolicy {
  static constexpr int kMaxR = 1, kMaxT = 4;
  static constexpr int64_t kBlockBytes = 210;

  template <int R, int T>
  static void Accumulate(const MatmulArgs& a, int64_t r, int64_t t0, GgmlAcc (&acc)[R][T]) {
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
        const __m256i corr = _mm256_madd_epi16(sc16, _mm256_load_si256(reinterpret_cast<const __m256i*>(x->bsum16)));
        const __m256i lanes = _mm256_sub_epi32(Fold8(isum), _mm256_slli_epi32(corr, 5));
        acc[0][j].v = _mm256_fmadd_ps(_mm256_set1_ps(x->d * d), _mm256_cvtepi32_ps(lanes), acc[0][j].v);
      }
    }
  }
};

}  // namespace

RowsKernel GetAvx512KQuantKernel(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_K: return Q4KRows;
    case GgmlType::Q6_K: return tiling::Rows<Q6KKernel>;
    default: return nullptr;
  }
}

#endif  // TROUPE_HAVE_AVX512

}  // namespace troupe
