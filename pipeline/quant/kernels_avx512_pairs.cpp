// AVX-512 kernels for several activation rows (n >= kMinPairRows) of Q4_1,
// Q5_0 and Q8_0 weights over row pairs (ActPairBlock, activations.h): one 512-bit
// register holds the same block of two activation rows, so each VNNI dot,
// conversion, scale multiply and FMA serves two outputs. The one-row kernels
// (kernels_avx512.cpp) hold two blocks of one row instead and then spend a
// 256-bit FMA per block and output, plus an extract, to keep ggml's order.
//
// The order is ggml's, bit for bit (the same as the one-row kernels, so
// batch invariance holds): every output keeps eight fp32 lanes, lane p
// holding the int32 dot of values 4p..4p+3 of each block,
//   acc[p] = fma(fp16(d_w) * fp16(d_x), float(isum_p(block)), acc[p]),
// block after block, then hsum_float_8 (GgmlSum), plus for Q4_1 the scalar
// chain summs = fma(fp16(m_w), fp16(s_x), summs) in block order; here the
// summs of eight activation rows share one 256-bit FMA.
//
// Tiles: R weight rows x P pairs (P <= 4; R = 1 for a decode batch whose
// pairs fit L1, else 4: PairRows), weight blocks decoded once per tile row
// and reused from registers for the P pairs. Activation rows go in chunks of
// kChunkPairs pairs (about 150 KB of pairs for 1536 columns, so the chunk
// stays in L2 while the weight rows go by).

#include "pipeline/quant/kernels.h"

#include "pipeline/quant/avx512_guard.h"

#if defined(TROUPE_HAVE_AVX512)
#include <algorithm>
#include <cstring>

#include "pipeline/quant/activations.h"
#include "pipeline/quant/ggml_acc.h"
#endif

namespace troupe {

#if defined(TROUPE_HAVE_AVX512)
namespace {

constexpr int64_t kChunkPairs = 16;

// One decoded weight block, as every pair kernel's tile uses it.
struct WeightBlock {
  __m512i q;  // the 32 values as unsigned bytes, in both 256-bit halves
  __m512 d;   // fp16(d_w), broadcast
  __m256 m;   // Q4_1: fp16(m_w), broadcast; unused otherwise
};

// 16 bytes of nibbles as [low nibbles | high nibbles] (values 0..15, 16..31)
// in both 256-bit halves.
inline __m512i Nibbles(const uint8_t* qs) {
  const __m512i raw = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  return _mm512_and_si512(_mm512_mask_srli_epi16(raw, 0xFF00FF00u, raw, 4), _mm512_set1_epi8(0x0F));
}

// The eight lane sums of the unsigned weights with each row of the pair,
// less the pair's per-lane correction divided by 2^kShift (none for kShift < 0).
template <int kShift>
inline __m512 LaneSums(const WeightBlock& w, const ActPairBlock& x) {
  __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w.q, _mm512_load_si512(x.q));
  if constexpr (kShift >= 0) {
    sums = _mm512_sub_epi32(sums, _mm512_srai_epi32(_mm512_load_si512(x.corr), kShift));
  }
  return _mm512_cvtepi32_ps(sums);
}

inline float HalfAt(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof h);
  return _cvtsh_ss(h);
}

// Q4_1 block: fp16 d, fp16 m, 16 bytes of nibbles; value j is the nibble.
struct Q4_1Pairs {
  static constexpr bool kMins = true;
  static constexpr int64_t kBlockBytes = 20;
  static WeightBlock Decode(const uint8_t* p) {
    uint32_t dm;
    std::memcpy(&dm, p, sizeof dm);
    const __m128 f = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(dm)));
    return {Nibbles(p + 4), _mm512_broadcastss_ps(f), _mm256_broadcastss_ps(_mm_movehdup_ps(f))};
  }
  static __m512 Dot(const WeightBlock& w, const ActPairBlock& x) { return LaneSums<-1>(w, x); }
};

// Q8_0 block: fp16 d, 32 signed bytes, used as (w XOR 0x80) unsigned and
// corrected per lane by the pair's corr (128 * the sum of four activations).
struct Q8_0Pairs {
  static constexpr bool kMins = false;
  static constexpr int64_t kBlockBytes = 34;
  static WeightBlock Decode(const uint8_t* p) {
    const __m512i raw = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2)));
    return {_mm512_xor_si512(raw, _mm512_set1_epi8(static_cast<char>(0x80))), _mm512_set1_ps(HalfAt(p)),
            _mm256_setzero_ps()};
  }
  static __m512 Dot(const WeightBlock& w, const ActPairBlock& x) { return LaneSums<0>(w, x); }
};

// Q5_0 block: fp16 d, 32 bits qh, 16 bytes of nibbles; value j is
// (nibble j | qh bit j << 4) - 16. Used unsigned (without the - 16) and
// corrected per lane by 16 * the sum of its four activations (corr / 8).
struct Q5_0Pairs {
  static constexpr bool kMins = false;
  static constexpr int64_t kBlockBytes = 22;
  static WeightBlock Decode(const uint8_t* p) {
    uint32_t qh;
    std::memcpy(&qh, p + 2, sizeof qh);
    const __m512i nib = Nibbles(p + 6);
    const __mmask64 high = _cvtu64_mask64(qh | static_cast<uint64_t>(qh) << 32);
    return {_mm512_mask_add_epi8(nib, high, nib, _mm512_set1_epi8(16)), _mm512_set1_ps(HalfAt(p)), _mm256_setzero_ps()};
  }
  static __m512 Dot(const WeightBlock& w, const ActPairBlock& x) { return LaneSums<3>(w, x); }
};

// Outputs y[2 (p0 + j) + h, r + i] for i < R, j < P <= 4, h < 2 (rows < n
// only). p0 is a multiple of 4, so the P pairs' min terms are octet p0 / 4.
template <class K, int R, int P>
void PairTile(const MatmulArgs& a, int64_t r, int64_t p0) {
  static_assert(P >= 1 && P <= 4, "a tile's pairs share one octet of min terms");
  const int64_t blocks = a.cols / 32;
  const ActPairBlock* xp = reinterpret_cast<const ActPairBlock*>(a.xp) + p0 * blocks;
  const float* s8 = reinterpret_cast<const float*>(a.xp) + ActPairsOctetOffset(a.n, a.cols) + (p0 / 4) * blocks * 8;
  __m512 acc[R][P];
  __m256 summs[R];
  for (int i = 0; i < R; ++i) {
    summs[i] = _mm256_setzero_ps();
    for (int j = 0; j < P; ++j) acc[i][j] = _mm512_setzero_ps();
  }
  const uint8_t* row0 = a.w + r * a.row_bytes;
  for (int64_t b = 0; b < blocks; ++b) {
    for (int i = 0; i < R; ++i) {
      const WeightBlock w = K::Decode(row0 + i * a.row_bytes + b * K::kBlockBytes);
      if constexpr (K::kMins) summs[i] = _mm256_fmadd_ps(w.m, _mm256_load_ps(s8 + b * 8), summs[i]);
      for (int j = 0; j < P; ++j) {
        const ActPairBlock& x = xp[j * blocks + b];
        acc[i][j] = _mm512_fmadd_ps(_mm512_mul_ps(w.d, _mm512_load_ps(x.d)), K::Dot(w, x), acc[i][j]);
      }
    }
  }
  for (int i = 0; i < R; ++i) {
    alignas(32) float s[8];
    _mm256_store_ps(s, summs[i]);
    for (int j = 0; j < P; ++j) {
      for (int h = 0; h < 2; ++h) {
        const int64_t t = 2 * (p0 + j) + h;
        if (t >= a.n) break;
        const __m256 v = h == 0 ? _mm512_castps512_ps256(acc[i][j]) : _mm512_extractf32x8_ps(acc[i][j], 1);
        a.y[t * a.ldy + r + i] = GgmlSum({v, _mm_set_ss(s[2 * j + h])});
      }
    }
  }
}

// Pairs [p0, p1) for weight rows [r, r + R): tiles of 4 pairs, then the rest.
template <class K, int R>
void PairRun(const MatmulArgs& a, int64_t r, int64_t p0, int64_t p1) {
  int64_t p = p0;
  for (; p + 4 <= p1; p += 4) PairTile<K, R, 4>(a, r, p);
  switch (p1 - p) {
    case 3: return PairTile<K, R, 3>(a, r, p);
    case 2: return PairTile<K, R, 2>(a, r, p);
    case 1: return PairTile<K, R, 1>(a, r, p);
    default: return;
  }
}

// Chunks of kChunkPairs pairs; in each, weight rows R at a time.
template <class K, int R>
void PairRowsR(const MatmulArgs& a, int64_t r0, int64_t r1) {
  const int64_t pairs = (a.n + 1) / 2;
  for (int64_t c0 = 0; c0 < pairs; c0 += kChunkPairs) {
    const int64_t c1 = std::min(pairs, c0 + kChunkPairs);
    int64_t r = r0;
    for (; r + R <= r1; r += R) PairRun<K, R>(a, r, c0, c1);
    for (; r < r1; ++r) PairRun<K, 1>(a, r, c0, c1);
  }
}

// One weight row at a time up to kStreamPairs pairs, so the weights stream
// front to back as the hardware prefetcher likes (a decode batch reads them
// from DRAM: 4 interleaved rows were ~20 % slower at 16 rows), as long as
// the pairs stay in L1 for the next row; above that (prefill, or a wide
// matrix such as an FFN's down projection, whose 16 rows of 1536 columns are
// 72 KB of pairs) 4 rows, which loads each chunk's activations a quarter as
// often. kStreamPairs <= kChunkPairs: a decode batch is one chunk.
template <class K>
void PairRows(const MatmulArgs& a, int64_t r0, int64_t r1) {
  constexpr int64_t kStreamPairs = 16;
  static_assert(kStreamPairs <= kChunkPairs, "");
  constexpr int64_t kL1Bytes = 32 << 10;
  const int64_t pairs = (a.n + 1) / 2;
  const int64_t pair_bytes = pairs * (a.cols / 32) * static_cast<int64_t>(sizeof(ActPairBlock));
  if (pairs <= kStreamPairs && pair_bytes <= kL1Bytes) return PairRowsR<K, 1>(a, r0, r1);
  return PairRowsR<K, 4>(a, r0, r1);
}

}  // namespace

RowsKernel GetAvx512PairKernel(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_1: return PairRows<Q4_1Pairs>;
    case GgmlType::Q5_0: return PairRows<Q5_0Pairs>;
    case GgmlType::Q8_0: return PairRows<Q8_0Pairs>;
    default: return nullptr;
  }
}

#else  // !TROUPE_HAVE_AVX512

RowsKernel GetAvx512PairKernel(GgmlType) { return nullptr; }

#endif

}  // namespace troupe
