// AVX-512 kernels (F, BW, VL, VNNI; F16C + FMA) for F32/F16/BF16, Q4_0, Q4_1,
// Q5_0 and Q8_0 weights. Q4_K and Q6_K are in kernels_avx512_k.cpp; Q5_K
// uses the AVX2 kernel (kernels_avx2.cpp).
//
// Every quantized type here follows the path llama.cpp's CPU backend takes
// for it on an AVX2/AVX-512 x86 CPU, bit for bit (docs/quant-paths.md; checked
// against llama-cpp-python's libggml by ggml_reference_test.cpp):
//   Q4_1, Q5_0, Q8_0, and Q4_0 with rows % 8 != 0: ggml_vec_dot_*_q8_* (the
//     __AVX2__ branch of ggml-cpu/arch/x86/quants.c), eight fp32 lanes, one
//     FMA per block (GgmlAccPolicy, ggml_acc.h);
//   Q4_0 with rows % 8 == 0: llama.cpp repacks it (q4_0_8x8) and runs
//     ggml_gemv_q4_0_8x8_q8_0: one fp32 chain per output, one FMA per block
//     on the block's whole integer dot (RepackAccPolicy).
// The integer sums are exact whatever instructions compute them, so the
// kernels use 256/512-bit VNNI freely; only the fp32 operations must match.
//
// Q8_0 blocks are decoded two per register. dpbusd is unsigned x signed, so
// weights are flipped to w + 128 (XOR 0x80) and 128 * the sum of each ggml
// lane's four activations is subtracted, which keeps every lane exact.
//
// On Zen 4 most 512-bit operations issue at one per cycle and loads at one
// 64-byte line per cycle, so the kernels minimise both: weights are loaded
// once with plain loads (a masked 512-bit load streams DRAM at a quarter of
// the speed) and reused from registers for up to four activation rows.

#include "pipeline/quant/kernels.h"

#include "pipeline/quant/avx512_guard.h"

#if defined(TROUPE_HAVE_AVX512)
#include <cstring>

#include "pipeline/quant/activations.h"
#include "pipeline/quant/avx512_util.h"
#include "pipeline/quant/ggml_acc.h"
#include "pipeline/quant/prefetch.h"
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

using avx512::Mask16;
using avx512::Mask32;

// Q8_0 block = fp16 d + 32 bytes = 17 words; two blocks are words 0..33:
// a = words 0..31, b = words 32..33 (in its low lane).
struct Q8Group {
  __m512i wq;  // w + 128 as unsigned bytes; lanes 0..7 block 0, 8..15 block 1
  __m128 d;    // (d_0, d_1, 0, 0)
};

struct Q8_0Kernel : avx512::FloatAcc {
  static constexpr int kMaxR = 4, kMaxT = 4;
  static constexpr int64_t kBlockBytes = 34;

  static Q8Group Decode(__m512i a, __m512i b) {
    alignas(64) static const int16_t kQs[32] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                                                18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33};
    alignas(64) static const int16_t kD[32] = {0, 17};
    const __m512i qs = _mm512_permutex2var_epi16(a, _mm512_load_si512(kQs), b);
    const __m512i d = _mm512_permutexvar_epi16(_mm512_load_si512(kD), a);
    return {_mm512_xor_si512(qs, _mm512_set1_epi8(static_cast<char>(0x80))), _mm_cvtph_ps(_mm512_castsi512_si128(d))};
  }

  // raw = sum (w + 128) x; subtracting 128 * sum(x) of each block from one
  // of its lanes (0 and 9: the even/odd halves of a 64-bit broadcast of the
  // two corrections) leaves sum w x exactly.
  template <int T>
  static void Step(const MatmulArgs& a, const Q8Group& w, int64_t t0, int64_t g, __m512 (&acc)[T]) {
    alignas(64) static const int32_t kSpread[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
    for (int j = 0; j < T; ++j) {
      const auto* x = reinterpret_cast<const ActGroupQ8x2*>(a.xq + (t0 + j) * a.xq_stride) + g;
      __m512i raw = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w.wq, _mm512_load_si512(x->q));
      int64_t corr;
      std::memcpy(&corr, x->corr, sizeof corr);
      raw = _mm512_mask_sub_epi32(raw, 0x0201, raw, _mm512_set1_epi64(corr));
      const __m128 dx = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(x->d)));
      const __m512 scale =
          _mm512_permutexvar_ps(_mm512_load_si512(kSpread), _mm512_castps128_ps512(_mm_mul_ps(w.d, dx)));
      acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(raw), scale, acc[j]);
    }
  }

  template <int R, int T>
  static void Accumulate(const MatmulArgs& a, int64_t r, int64_t t0, __m512 (&acc)[R][T]) {
    const int64_t nblocks = a.cols / 32;
    const int64_t full = nblocks / 2;
    const uint8_t* row0 = a.w + r * a.row_bytes;
    for (int64_t g = 0; g < full; ++g) {
      for (int i = 0; i < R; ++i) {
        const uint8_t* p = row0 + i * a.row_bytes + g * 2 * kBlockBytes;
        int32_t last;
        std::memcpy(&last, p + 64, sizeof last);
        const Q8Group w = Decode(_mm512_loadu_si512(p), _mm512_castsi128_si512(_mm_cvtsi32_si128(last)));
        Step<T>(a, w, t0, g, acc[i]);
      }
    }
    if (nblocks % 2 != 0) {  // one block left: words 0..16
      for (int i = 0; i < R; ++i) {
        const uint8_t* p = row0 + i * a.row_bytes + full * 2 * kBlockBytes;
        Step<T>(a, Decode(_mm512_maskz_loadu_epi16(Mask32(17), p), _mm512_setzero_si512()), t0, full, acc[i]);
      }
    }
  }
};

// ---------------------------------------------------------------------------
// ggml-order kernels for Q4_1 (x Q8_1) and Q8_0 (x Q8_0): bit-identical to
// llama.cpp's CPU vec_dot (ggml-cpu/arch/x86/quants.c, the __AVX2__ branch
// that x86 builds run with or without AVX-512; credit: ggml). For one weight
// row against one activation row ggml keeps eight fp32 lanes, lane p holding
// the int32 dot of values 4p..4p+3 of each block:
//   acc[p] = fma(fp16(d_w) * fp16(d_x), float(isum_p(block)), acc[p]),
// block after block, then hsum_float_8(acc) = ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)),
// and Q4_1 adds a scalar chain summs = fma(fp16(m_w), fp16(s_x), summs)
// (contracted by the compiler: checked in the disassembly of the library
// llama-cpp-python builds) after the horizontal sum. We compute the same
// integer lane sums with 512-bit VNNI over several blocks at once, then feed
// them to the 8-lane chain in block order (GgmlAccPolicy: ggml_acc.h).

// Q4_1 against layout kQ8x2 (ggml Q8_1 blocks in value order), one block at
// a time with 256-bit VNNI exactly like ggml's loop: 32 nibbles as [low |
// high] against the 32 activations gives the eight lane sums directly. (On
// Zen 4, 512-bit permutes and conversions cost two slots; this form needs one
// shuffle per block and keeps the chain of each output one FMA per block.)
struct Q4_1GgmlKernel : GgmlAccPolicy {
  static constexpr int kMaxR = 2, kMaxT = 4;  // 2 x 4 x (ymm + xmm) accumulators: no spills
  static constexpr int64_t kBlockBytes = 20;

  // Two blocks (b, b + 1) of one row: 40 bytes; nibble arrays at dwords 1..4
  // and 6..9, (d, m) at words 0, 1 and 10, 11.
  struct Pair {
    __m512i wq;  // 128-bit lanes: lo(b), hi(b), lo(b + 1), hi(b + 1)
    __m128 dm;   // (d_b, d_b+1, m_b, m_b+1)
  };
  static Pair Decode(__m512i v) {
    alignas(64) static const int32_t kQs[16] = {1, 2, 3, 4, 1, 2, 3, 4, 6, 7, 8, 9, 6, 7, 8, 9};
    alignas(64) static const int16_t kDm[32] = {0, 10, 1, 11};
    const __m512i qs = _mm512_permutexvar_epi32(_mm512_load_si512(kQs), v);
    const __m512i nib = _mm512_and_si512(_mm512_mask_srli_epi16(qs, 0xFF00FF00u, qs, 4), _mm512_set1_epi8(0x0F));
    const __m512i dm = _mm512_permutexvar_epi16(_mm512_load_si512(kDm), v);
    return {nib, _mm_cvtph_ps(_mm512_castsi512_si128(dm))};
  }

  // The 40 bytes of a pair as dwords 0..9, by two plain loads. A masked
  // 512-bit load (the earlier version) streamed the weights from DRAM at a
  // quarter of the speed on Zen 4: 4.5 instead of 20 GB/s on one core.
  static __m512i Load40(const uint8_t* p) {
    const __m256i head = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m128i tail = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 32));
    return _mm512_inserti64x4(_mm512_castsi256_si512(head), _mm256_castsi128_si256(tail), 1);
  }
  // One block (a last odd one): its 20 bytes as dwords 0..4, plain loads too.
  static __m512i Load20(const uint8_t* p) {
    int32_t last;
    std::memcpy(&last, p + 16, sizeof last);
    const __m128i head = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm512_inserti32x4(_mm512_castsi128_si512(head), _mm_cvtsi32_si128(last), 1);
  }

  // nb = 2, or 1 for a last odd block (the upper half is then ignored).
  static void Step(const MatmulArgs& a, const Pair& w, int64_t t, int64_t g, int nb, GgmlAcc& acc) {
    const auto* x = reinterpret_cast<const ActGroupQ8x2*>(a.xq + t * a.xq_stride) + g;
    const __m512 f = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), w.wq, _mm512_load_si512(x->q)));
    const __m128 dd = _mm_mul_ps(w.dm, _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(x->d))));
    acc.v = _mm256_fmadd_ps(_mm256_broadcastss_ps(dd), _mm512_castps512_ps256(f), acc.v);
    acc.s = _mm_fmadd_ss(_mm_movehl_ps(w.dm, w.dm), _mm_load_ss(&x->s[0]), acc.s);
    if (nb < 2) return;
    acc.v = _mm256_fmadd_ps(_mm256_broadcastss_ps(_mm_movehdup_ps(dd)), _mm512_extractf32x8_ps(f, 1), acc.v);
    acc.s = _mm_fmadd_ss(_mm_shuffle_ps(w.dm, w.dm, 3), _mm_load_ss(&x->s[1]), acc.s);
  }

  template <int R, int T>
  static void Accumulate(const MatmulArgs& a, int64_t r, int64_t t0, GgmlAcc (&acc)[R][T]) {
    const int64_t nblocks = a.cols / 32;
    const int64_t full = nblocks / 2;
    const uint8_t* row0 = a.w + r * a.row_bytes;
    for (int64_t g = 0; g < full; ++g) {
      if constexpr (R == 1) PrefetchAhead(row0 + g * 2 * kBlockBytes);
      for (int i = 0; i < R; ++i) {
        const Pair w = Decode(Load40(row0 + i * a.row_bytes + g * 2 * kBlockBytes));
        for (int j = 0; j < T; ++j) Step(a, w, t0 + j, g, 2, acc[i][j]);
      }
    }
    if (nblocks % 2 != 0) {
      for (int i = 0; i < R; ++i) {
        const Pair w = Decode(Load20(row0 + i * a.row_bytes + full * 2 * kBlockBytes));
        for (int j = 0; j < T; ++j) Step(a, w, t0 + j, full, 1, acc[i][j]);
      }
    }
  }
};

// Q8_0: two blocks per register as in Q8_0Kernel; the (w + 128) correction
// is subtracted per ggml lane (128 * the sum of its four activations) so
// every lane holds ggml's exact int32 sum.
struct Q8_0GgmlKernel : GgmlAccPolicy {
  static constexpr int kMaxR = 2, kMaxT = 4;

  static void Step(const MatmulArgs& a, const Q8Group& w, int64_t t, int64_t g, int nb, GgmlAcc& acc) {
    const auto* x = reinterpret_cast<const ActGroupQ8x2*>(a.xq + t * a.xq_stride) + g;
    const __m512i xq = _mm512_load_si512(x->q);
    const __m512i corr = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(static_cast<char>(0x80)), xq);
    const __m512i raw = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), w.wq, xq), corr);
    const __m512 f = _mm512_cvtepi32_ps(raw);
    const __m128 dx = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(x->d)));
    const __m128 dd = _mm_mul_ps(w.d, dx);
    acc.v = _mm256_fmadd_ps(_mm256_broadcastss_ps(dd), _mm512_castps512_ps256(f), acc.v);
    if (nb < 2) return;
    acc.v = _mm256_fmadd_ps(_mm256_broadcastss_ps(_mm_movehdup_ps(dd)), _mm512_extractf32x8_ps(f, 1), acc.v);
  }

  template <int R, int T>
  static void Accumulate(const MatmulArgs& a, int64_t r, int64_t t0, GgmlAcc (&acc)[R][T]) {
    constexpr int64_t kBlockBytes = Q8_0Kernel::kBlockBytes;
    const int64_t nblocks = a.cols / 32;
    const int64_t full = nblocks / 2;
    const uint8_t* row0 = a.w + r * a.row_bytes;
    for (int64_t g = 0; g < full; ++g) {
      if constexpr (R == 1) PrefetchAhead(row0 + g * 2 * kBlockBytes);
      for (int i = 0; i < R; ++i) {
        const uint8_t* p = row0 + i * a.row_bytes + g * 2 * kBlockBytes;
        int32_t last;
        std::memcpy(&last, p + 64, sizeof last);
        const Q8Group w = Q8_0Kernel::Decode(_mm512_loadu_si512(p), _mm512_castsi128_si512(_mm_cvtsi32_si128(last)));
        for (int j = 0; j < T; ++j) Step(a, w, t0 + j, g, 2, acc[i][j]);
      }
    }
    if (nblocks % 2 != 0) {
      for (int i = 0; i < R; ++i) {
        const uint8_t* p = row0 + i * a.row_bytes + full * 2 * kBlockBytes;
        const Q8Group w = Q8_0Kernel::Decode(_mm512_maskz_loadu_epi16(Mask32(17), p), _mm512_setzero_si512());
        for (int j = 0; j < T; ++j) Step(a, w, t0 + j, full, 1, acc[i][j]);
      }
    }
  }
};

// Q4_0 and Q5_0 x Q8_0 in llama.cpp's orders, one block at a time. The 32
// values are the nibbles [low | high] (as Q4_1), less 8 (Q4_0) or less 16
// where the block's qh bit is clear (Q5_0): q in [-8, 7] / [-16, 15].
// abs(q) x sign(x, q) through 256-bit VNNI gives ggml's eight lane sums (the
// branch its mul_sum_i8_pairs_float takes with AVX512VNNI + VL; every
// variant computes the same exact integers).
struct Q4_0Bits {
  static constexpr int64_t kBlockBytes = 18;
  static __m256i Values(const uint8_t* p) {
    const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2));
    const __m256i nib = _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(qs), _mm_srli_epi16(qs, 4), 1),
                                         _mm256_set1_epi8(0x0F));
    return _mm256_sub_epi8(nib, _mm256_set1_epi8(8));
  }
};
struct Q5_0Bits {
  static constexpr int64_t kBlockBytes = 22;
  static __m256i Values(const uint8_t* p) {
    uint32_t qh;
    std::memcpy(&qh, p + 2, sizeof qh);
    const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 6));
    const __m256i nib = _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(qs), _mm_srli_epi16(qs, 4), 1),
                                         _mm256_set1_epi8(0x0F));
    return _mm256_mask_sub_epi8(nib, static_cast<__mmask32>(~qh), nib, _mm256_set1_epi8(16));
  }
};

inline __m256i BlockDot(__m256i q_abs, __m256i q, const MatmulArgs& a, int64_t t, int64_t b, float* dx) {
  const auto* x = reinterpret_cast<const ActGroupQ8x2*>(a.xq + t * a.xq_stride) + b / 2;
  const int k = static_cast<int>(b % 2);
  *dx = x->d[k];
  const __m256i xs = _mm256_sign_epi8(_mm256_load_si256(reinterpret_cast<const __m256i*>(x->q + 32 * k)), q);
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), q_abs, xs);
}

// vec_dot (ggml_vec_dot_q4_0_q8_0 / _q5_0_q8_0, the __AVX2__ branch):
// acc = fma(d_w d_x, float(lane sums), acc) per block, then hsum_float_8.
template <class F>
struct Q50GgmlKernel : GgmlAccPolicy {
  static constexpr int kMaxR = 2, kMaxT = 4;

  template <int R, int T>
  static void Accumulate(const MatmulArgs& a, int64_t r, int64_t t0, GgmlAcc (&acc)[R][T]) {
    const int64_t nblocks = a.cols / 32;
    const uint8_t* row0 = a.w + r * a.row_bytes;
    for (int64_t b = 0; b < nblocks; ++b) {
      if (R == 1 && b % 2 == 0) PrefetchAhead(row0 + b * F::kBlockBytes);
      for (int i = 0; i < R; ++i) {
        const uint8_t* p = row0 + i * a.row_bytes + b * F::kBlockBytes;
        const __m256i q = F::Values(p);
        const __m256i q_abs = _mm256_abs_epi8(q);
        const float dw = HalfAt(p);
        for (int j = 0; j < T; ++j) {
          float dx;
          const __m256 f = _mm256_cvtepi32_ps(BlockDot(q_abs, q, a, t0 + j, b, &dx));
          acc[i][j].v = _mm256_fmadd_ps(_mm256_set1_ps(dw * dx), f, acc[i][j].v);
        }
      }
    }
  }
};

// Q4_0 repacked (ggml_gemv_q4_0_8x8_q8_0): one chain per output,
// acc = fma(float(block dot), d_w d_x, acc).
struct Q4_0RepackKernel : RepackAccPolicy {
  static constexpr int kMaxR = 2, kMaxT = 4;

  template <int R, int T>
  static void Accumulate(const MatmulArgs& a, int64_t r, int64_t t0, __m128 (&acc)[R][T]) {
    const int64_t nblocks = a.cols / 32;
    const uint8_t* row0 = a.w + r * a.row_bytes;
    for (int64_t b = 0; b < nblocks; ++b) {
      for (int i = 0; i < R; ++i) {
        const uint8_t* p = row0 + i * a.row_bytes + b * Q4_0Bits::kBlockBytes;
        const __m256i q = Q4_0Bits::Values(p);
        const __m256i q_abs = _mm256_abs_epi8(q);
        const float dw = HalfAt(p);
        for (int j = 0; j < T; ++j) {
          float dx;
          const __m128i isum = SumI32x8(BlockDot(q_abs, q, a, t0 + j, b, &dx));
          acc[i][j] = _mm_fmadd_ps(_mm_cvtepi32_ps(isum), _mm_set_ss(dw * dx), acc[i][j]);  // lanes 1-3: + 0
        }
      }
    }
  }
};

void Q4_0Rows(const MatmulArgs& a, int64_t r0, int64_t r1) {
  if (a.repacked) return tiling::Rows<Q4_0RepackKernel>(a, r0, r1);
  tiling::Rows<Q50GgmlKernel<Q4_0Bits>>(a, r0, r1);
}

// Float weights: 16 columns per step, converted to fp32 in registers.
struct LoadF32 {
  static constexpr int kBytes = 4;
  static __m512 Load(const uint8_t* p) { return _mm512_loadu_ps(p); }
  static __m512 LoadMasked(const uint8_t* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
};
struct LoadF16 {
  static constexpr int kBytes = 2;
  static __m512 Load(const uint8_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static __m512 LoadMasked(const uint8_t* p, __mmask16 m) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }
};
struct LoadBf16 {
  static constexpr int kBytes = 2;
  static __m512 Widen(__m256i v) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16)); }
  static __m512 Load(const uint8_t* p) { return Widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static __m512 LoadMasked(const uint8_t* p, __mmask16 m) { return Widen(_mm256_maskz_loadu_epi16(m, p)); }
};

template <class L>
struct FloatKernel : avx512::FloatAcc {
  static constexpr int kMaxR = 4, kMaxT = 4;

  template <int R, int T>
  static void Accumulate(const MatmulArgs& a, int64_t r, int64_t t0, __m512 (&acc)[R][T]) {
    const uint8_t* row0 = a.w + r * a.row_bytes;
    const float* x0 = a.x + t0 * a.cols;
    int64_t c = 0;
    for (; c + 16 <= a.cols; c += 16) {
      __m512 xs[T];  // loaded once, reused by the R weight rows
      for (int j = 0; j < T; ++j) xs[j] = _mm512_loadu_ps(x0 + j * a.cols + c);
      for (int i = 0; i < R; ++i) {
        const __m512 w = L::Load(row0 + i * a.row_bytes + c * L::kBytes);
        for (int j = 0; j < T; ++j) acc[i][j] = _mm512_fmadd_ps(w, xs[j], acc[i][j]);
      }
    }
    if (c < a.cols) {
      const __mmask16 m = Mask16(static_cast<int>(a.cols - c));
      for (int i = 0; i < R; ++i) {
        const __m512 w = L::LoadMasked(row0 + i * a.row_bytes + c * L::kBytes, m);
        for (int j = 0; j < T; ++j) {
          acc[i][j] = _mm512_fmadd_ps(w, _mm512_maskz_loadu_ps(m, x0 + j * a.cols + c), acc[i][j]);
        }
      }
    }
  }
};

}  // namespace

RowsKernel GetAvx512Kernel(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return tiling::Rows<FloatKernel<LoadF32>>;
    case GgmlType::F16: return tiling::Rows<FloatKernel<LoadF16>>;
    case GgmlType::BF16: return tiling::Rows<FloatKernel<LoadBf16>>;
    case GgmlType::Q4_0: return Q4_0Rows;
    case GgmlType::Q4_1: return tiling::Rows<Q4_1GgmlKernel>;
    case GgmlType::Q5_0: return tiling::Rows<Q50GgmlKernel<Q5_0Bits>>;
    case GgmlType::Q8_0: return tiling::Rows<Q8_0GgmlKernel>;
    case GgmlType::Q4_K:
    case GgmlType::Q6_K: return GetAvx512KQuantKernel(type);
    case GgmlType::Q5_K: return GetAvx2Kernel(type);  // 256-bit, ggml's own loop shape
  }
  return nullptr;
}

#else  // !TROUPE_HAVE_AVX512

RowsKernel GetAvx512Kernel(GgmlType) { return nullptr; }

#endif

}  // namespace troupe
