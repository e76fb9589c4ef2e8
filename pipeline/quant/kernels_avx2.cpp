// AVX2 kernels (AVX2 + FMA + F16C) for every supported weight type: the path
// for CPUs without AVX-512. Quantized types follow llama.cpp's x86 paths bit
// for bit, as the AVX-512 kernels do (kernels_avx512*.cpp, docs/quant-paths.md):
// vec_dot's eight lanes for Q4_0 (rows % 8 != 0), Q4_1, Q5_0, Q8_0, Q4_K
// (rows % 8 != 0), Q5_K and Q6_K; the repacked gemv's one chain per output for
// Q4_0 and Q4_K with rows % 8 == 0. maddubs (unsigned x signed bytes -> int16
// pairs) + madd (-> int32) replace VNNI; signed weights use abs(w) x sign(x, w).
// Only 16 vector registers: tiles are at most 2 weight rows x 2 activation rows
// (4 for float weights), except batches of Q4_1, Q5_0 and Q8_0 (BatchRows:
// one weight row x 8 activation rows, packed side by side per block).
// Activation layouts as in activations.h (Q4_K reads kQ8KPaired, whose
// 32-value runs line up with its nibbles).

#include "pipeline/quant/kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define TROUPE_HAVE_AVX2 1
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "pipeline/quant/activations.h"
#include "pipeline/quant/blocks.h"
#include "pipeline/quant/ggml_acc.h"
#include "pipeline/quant/prefetch.h"
#include "pipeline/quant/tile_driver.h"
#endif

namespace troupe {

#if defined(TROUPE_HAVE_AVX2)
namespace {

inline float HalfAt(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof h);
  return _cvtsh_ss(h);
}

inline __m256i LoadU256(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m256i Load256(const void* p) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m128i LoadU128(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

// unsigned bytes . signed bytes, four at a time -> int32 lanes.
inline __m256i DotU8S8(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

// fp32 accumulator policy for tile_driver.h. The horizontal sum of v is
// ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7)) in Sum and in each lane of
// Sum4 alike (batch invariance).
struct FloatAcc {
  using Acc = __m256;
  static __m256 Zero() { return _mm256_setzero_ps(); }
  static float Sum(__m256 v) {
    const __m256 h = _mm256_hadd_ps(v, v);
    const __m256 h2 = _mm256_hadd_ps(h, h);
    return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(h2), _mm256_extractf128_ps(h2, 1)));
  }
  static void Sum4(__m256 a, __m256 b, __m256 c, __m256 d, float* out) {
    const __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
  }
};

// Q4_1 and SignedGgmlKernel (Q4_0, Q5_0, Q8_0) below accumulate in ggml's order (GgmlAccPolicy,
// pipeline/quant/ggml_acc.h) to compute llama.cpp's vec_dot bit for bit.

// Q4_1 x Q8_1 as ggml's AVX2 loop, one block at a time: 32 nibbles as
// [low nibbles | high nibbles] (bytes_from_nibbles_32) against the block's
// activations in value order (layout kQ8x2); acc = fma(d_w d_x, float(lane sums), acc);
// summs = fma(m_w, s_x, summs).
struct Q4_1GgmlKernel : GgmlAccPolicy {
  static constexpr int kMaxR = 2, kMaxT = 2;
  static constexpr int64_t kBlockBytes = 20;

  template <int R, int T>
  static void Accumulate(const MatmulArgs& a, int64_t r, int64_t t0, GgmlAcc (&acc)[R][T]) {
    if constexpr (R == 1 && T == 1) return AccumulateOne(a, r, t0, acc[0][0]);
    const int64_t nblocks = a.cols / 32;
    const uint8_t* row0 = a.w + r * a.row_bytes;
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (int64_t b = 0; b < nblocks; ++b) {
      for (int i = 0; i < R; ++i) {
        const uint8_t* p = row0 + i * a.row_bytes + b * kBlockBytes;
        const __m128i qs = LoadU128(p + 4);
        const __m256i wq =
            _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(qs), _mm_srli_epi16(qs, 4), 1), low4);
        const float dw = HalfAt(p), mw = HalfAt(p + 2);
        const int64_t g = b / 2, k = b % 2;
        for (int j = 0; j < T; ++j) {
          const auto* x = reinterpret_cast<const ActGroupQ8x2*>(a.xq + (t0 + j) * a.xq_stride) + g;
          const __m256 xy = _mm256_cvtepi32_ps(DotU8S8(wq, Load256(x->q + 32 * k)));
          acc[i][j].v = _mm256_fmadd_ps(_mm256_set1_ps(dw * x->d[k]), xy, acc[i][j].v);
          acc[i][j].s = _mm_fmadd_ss(_mm_set_ss(mw), _mm_set_ss(x->s[k]), acc[i][j].s);
        }
      }
    }
  }

  // The decode shape (one weight row, one activation row), the same
  // operations on the same values in the same order as above, with fewer
  // instructions around them (the loop above spent ~30 a block, ~12 cycles
  // on this AVX2 VM): blocks go in pairs that share an activation group, and
  // d_w and m_w convert together, [d_w, m_w] in lanes 0 and 1; summs then
  // runs as lane 1 of a 128-bit FMA (m_w * s_x + summs, rounded as the scalar
  // FMA rounds it; lanes 0, 2 and 3 are ignored) and moves back to lane 0.
  static void AccumulateOne(const MatmulArgs& a, int64_t r, int64_t t0, GgmlAcc& acc) {
    const int64_t nblocks = a.cols / 32;
    const uint8_t* p = a.w + r * a.row_bytes;
    const auto* x = reinterpret_cast<const ActGroupQ8x2*>(a.xq + t0 * a.xq_stride);
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256 v = acc.v;
    __m128 s = _mm_moveldup_ps(acc.s);  // summs in lane 1
    auto block = [&](const uint8_t* pb, const int8_t* q, const float* d, const float* sx) {
      const __m128i qs = LoadU128(pb + 4);
      const __m256i wq =
          _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(qs), _mm_srli_epi16(qs, 4), 1), low4);
      int32_t dm_bits;
      std::memcpy(&dm_bits, pb, sizeof dm_bits);
      const __m128 dm = _mm_cvtph_ps(_mm_cvtsi32_si128(dm_bits));  // [d_w, m_w, 0, 0]
      const __m256 xy = _mm256_cvtepi32_ps(DotU8S8(wq, Load256(q)));
      v = _mm256_fmadd_ps(_mm256_broadcastss_ps(_mm_mul_ss(dm, _mm_load_ss(d))), xy, v);
      s = _mm_fmadd_ps(dm, _mm_broadcast_ss(sx), s);
    };
    int64_t b = 0;
    for (; b + 2 <= nblocks; b += 2, ++x, p += 2 * kBlockBytes) {
      PrefetchAhead(p);
      block(p, x->q, &x->d[0], &x->s[0]);
      block(p + kBlockBytes, x->q + 32, &x->d[1], &x->s[1]);
    }
    if (b < nblocks) block(p, x->q, &x->d[0], &x->s[0]);
    acc.v = v;
    acc.s = _mm_movehdup_ps(s);
  }
};

// Q4_0, Q5_0 and Q8_0 x Q8_0 in llama.cpp's orders, one block at a time:
// nibbles [low | high] (bytes_from_nibbles_32), less 8 (Q4_0) or less 16
// where the qh bit is clear (Q5_0, bytes_from_bits_32), or the 32 bytes as
// they are (Q8_0); abs(q) x sign(x, q).
inline __m256i Nibbles32(const uint8_t* qs16) {
  const __m128i qs = LoadU128(qs16);
  return _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(qs), _mm_srli_epi16(qs, 4), 1),
                          _mm256_set1_epi8(0x0F));
}
struct Q4_0Bits {
  static constexpr int64_t kBlockBytes = 18;
  static __m256i Values(const uint8_t* p) { return _mm256_sub_epi8(Nibbles32(p + 2), _mm256_set1_epi8(8)); }
};
struct Q5_0Bits {
  static constexpr int64_t kBlockBytes = 22;
  // 0xFF in byte j where bit j of qh is set.
  static __m256i BitsToBytes(uint32_t qh) {
    const __m256i shuf = _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303);
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)), shuf);
    const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
    return _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
  }
  static __m256i Values(const uint8_t* p) {
    uint32_t qh;
    std::memcpy(&qh, p + 2, sizeof qh);
    return _mm256_or_si256(Nibbles32(p + 6),
                           _mm256_andnot_si256(BitsToBytes(qh), _mm256_set1_epi8(static_cast<char>(0xF0))));
  }
};

struct Q8_0Values {
  static constexpr int64_t kBlockBytes = 34;
  static __m256i Values(const uint8_t* p) { return LoadU256(p + 2); }
};

inline __m256i BlockDot(__m256i q_abs, __m256i q, const MatmulArgs& a, int64_t t, int64_t b, float* dx) {
  const auto* x = reinterpret_cast<const ActGroupQ8x2*>(a.xq + t * a.xq_stride) + b / 2;
  const int k = static_cast<int>(b % 2);
  *dx = x->d[k];
  return DotU8S8(q_abs, _mm256_sign_epi8(Load256(x->q + 32 * k), q));
}

// vec_dot: acc = fma(d_w d_x, float(lane sums), acc) per block.
template <class F>
struct SignedGgmlKernel : GgmlAccPolicy {
  static constexpr int kMaxR = 2, kMaxT = 2;

  template <int R, int T>
  static void Accumulate(const MatmulArgs& a, int64_t r, int64_t t0, GgmlAcc (&acc)[R][T]) {
    if constexpr (R == 1 && T == 1) return AccumulateOne(a, r, t0, acc[0][0]);
    const int64_t nblocks = a.cols / 32;
    const uint8_t* row0 = a.w + r * a.row_bytes;
    for (int64_t b = 0; b < nblocks; ++b) {
      for (int i = 0; i < R; ++i) {
        const uint8_t* p = row0 + i * a.row_bytes + b * F::kBlockBytes;
        const __m256i q = F::Values(p);
        const __m256i q_abs = _mm256_sign_epi8(q, q);
        const float dw = HalfAt(p);
        for (int j = 0; j < T; ++j) {
          float dx;
          const __m256 f = _mm256_cvtepi32_ps(BlockDot(q_abs, q, a, t0 + j, b, &dx));
          acc[i][j].v = _mm256_fmadd_ps(_mm256_set1_ps(dw * dx), f, acc[i][j].v);
        }
      }
    }
  }

  // The decode shape: the operations above in the same order, blocks in
  // pairs that share an activation group (as Q4_1GgmlKernel::AccumulateOne).
  static void AccumulateOne(const MatmulArgs& a, int64_t r, int64_t t0, GgmlAcc& acc) {
    const int64_t nblocks = a.cols / 32;
    const uint8_t* p = a.w + r * a.row_bytes;
    const auto* x = reinterpret_cast<const ActGroupQ8x2*>(a.xq + t0 * a.xq_stride);
    __m256 v = acc.v;
    auto block = [&](const uint8_t* pb, const int8_t* xq, const float* d) {
      const __m256i q = F::Values(pb);
      const __m256i raw = DotU8S8(_mm256_sign_epi8(q, q), _mm256_sign_epi8(Load256(xq), q));
      v = _mm256_fmadd_ps(_mm256_set1_ps(HalfAt(pb) * *d), _mm256_cvtepi32_ps(raw), v);
    };
    int64_t b = 0;
    for (; b + 2 <= nblocks; b += 2, ++x, p += 2 * F::kBlockBytes) {
      PrefetchAhead(p);
      block(p, x->q, &x->d[0]);
      block(p + F::kBlockBytes, x->q + 32, &x->d[1]);
    }
    if (b < nblocks) block(p, x->q, &x->d[0]);
    acc.v = v;
  }
};

// Batches (n >= 2 activation rows) of Q4_1, Q5_0 and Q8_0: one weight row
// against up to kBatchRows activation rows at a time, each block decoded
// once. The activations are first packed per tile of kBatchRows rows and per
// block (BatchBlock, PackBatch): the rows' 32 bytes side by side, then their
// d_x and s_x as 8-lane vectors. So the tile walks one stream, and one
// vector multiply gives every row's fp16(d_w) * d_x and, for Q4_1, one
// vector FMA advances every row's summs chain. Each lane does the same
// operation on the same values as the one-row kernels' scalars for that row,
// and each row's eight lanes take the same FMA per block, so every output is
// still ggml's vec_dot bit for bit (batch invariance).
constexpr int kBatchRows = 8;

// A decoded weight block: u . x is the block's dot with activation bytes x,
// as unsigned bytes u times x (Q4_1), or |q| times sign(x, q) (signed types).
struct Q4_1Batch {
  static constexpr int64_t kBlockBytes = 20;
  static constexpr bool kMins = true;
  static constexpr int64_t kQs = 4;
  __m256i u;
  explicit Q4_1Batch(const uint8_t* p) : u(Nibbles32(p + kQs)) {}
  __m256i Dot(__m256i x) const { return DotU8S8(u, x); }
};
template <class F>
struct SignedBatch {
  static constexpr int64_t kBlockBytes = F::kBlockBytes;
  static constexpr bool kMins = false;
  __m256i q, u;
  explicit SignedBatch(const uint8_t* p) : q(F::Values(p)), u(_mm256_sign_epi8(q, q)) {}
  __m256i Dot(__m256i x) const { return DotU8S8(u, _mm256_sign_epi8(x, q)); }
};
using Q5_0Batch = SignedBatch<Q5_0Bits>;
using Q8_0Batch = SignedBatch<Q8_0Values>;

// Block b of a tile's kBatchRows activation rows; rows past n are zero.
struct alignas(32) BatchBlock {
  int8_t q[kBatchRows][32];
  float d[kBatchRows];
  float s[kBatchRows];
};

// [tile][block] for the n activation rows of `a` (a per-thread buffer).
// A thread packs once per product: the later runs of rows it takes with the
// same a.x_id and a.xq reuse its packing (a prefill's product is cut into 16
// runs on 2 threads, and each packed every row before).
const BatchBlock* PackBatch(const MatmulArgs& a, int64_t nblocks) {
  thread_local std::vector<BatchBlock> buf;
  thread_local uint64_t packed_id = 0;
  thread_local const uint8_t* packed_xq = nullptr;
  const int64_t tiles = (a.n + kBatchRows - 1) / kBatchRows;
  if (a.x_id != 0 && a.x_id == packed_id && a.xq == packed_xq && buf.size() == static_cast<size_t>(tiles * nblocks)) {
    return buf.data();
  }
  packed_id = a.x_id;
  packed_xq = a.xq;
  buf.resize(static_cast<size_t>(tiles * nblocks));
  for (int64_t tile = 0; tile < tiles; ++tile) {
    BatchBlock* out = buf.data() + tile * nblocks;
    for (int j = 0; j < kBatchRows; ++j) {
      const int64_t t = tile * kBatchRows + j;
      if (t >= a.n) {
        for (int64_t b = 0; b < nblocks; ++b) {
          std::memset(out[b].q[j], 0, 32);
          out[b].d[j] = out[b].s[j] = 0.0f;
        }
        continue;
      }
      const auto* x = reinterpret_cast<const ActGroupQ8x2*>(a.xq + t * a.xq_stride);
      for (int64_t b = 0; b < nblocks; ++b) {
        std::memcpy(out[b].q[j], x[b / 2].q + 32 * (b % 2), 32);
        out[b].d[j] = x[b / 2].d[b % 2];
        out[b].s[j] = x[b / 2].s[b % 2];
      }
    }
  }
  return buf.data();
}

template <class B, int T>
void BatchTile(const MatmulArgs& a, int64_t r, int64_t t0, const BatchBlock* x) {
  const int64_t nblocks = a.cols / 32;
  const uint8_t* row = a.w + r * a.row_bytes;
  __m256 acc[T];
  for (int j = 0; j < T; ++j) acc[j] = _mm256_setzero_ps();
  __m256 summs = _mm256_setzero_ps();
  for (int64_t b = 0; b < nblocks; ++b, ++x) {
    const uint8_t* p = row + b * B::kBlockBytes;
    const B w(p);
    alignas(32) float dd[kBatchRows];
    _mm256_store_ps(dd, _mm256_mul_ps(_mm256_set1_ps(HalfAt(p)), _mm256_load_ps(x->d)));
    if constexpr (B::kMins) {
      summs = _mm256_fmadd_ps(_mm256_set1_ps(HalfAt(p + 2)), _mm256_load_ps(x->s), summs);
    }
    for (int j = 0; j < T; ++j) {
      const __m256 xy = _mm256_cvtepi32_ps(w.Dot(Load256(x->q[j])));
      acc[j] = _mm256_fmadd_ps(_mm256_broadcast_ss(dd + j), xy, acc[j]);
    }
  }
  alignas(32) float sm[kBatchRows];
  _mm256_store_ps(sm, summs);
  for (int j = 0; j < T; ++j) a.y[(t0 + j) * a.ldy + r] = GgmlSum({acc[j], _mm_set_ss(sm[j])});
}

template <class B, int T>
void BatchTiles(const MatmulArgs& a, int64_t r0, int64_t r1, int64_t t0, const BatchBlock* x) {
  for (int64_t r = r0; r < r1; ++r) BatchTile<B, T>(a, r, t0, x);
}

// One activation row: the one-row kernels (tile_driver.h's decode shape).
template <class B>
struct OneRowKernel;
template <>
struct OneRowKernel<Q4_1Batch> {
  using type = Q4_1GgmlKernel;
};
template <>
struct OneRowKernel<Q5_0Batch> {
  using type = SignedGgmlKernel<Q5_0Bits>;
};
template <>
struct OneRowKernel<Q8_0Batch> {
  using type = SignedGgmlKernel<Q8_0Values>;
};

template <class B>
void BatchRows(const MatmulArgs& a, int64_t r0, int64_t r1) {
  if (a.n == 1) return tiling::Rows<typename OneRowKernel<B>::type>(a, r0, r1);
  const int64_t nblocks = a.cols / 32;
  const BatchBlock* packed = PackBatch(a, nblocks);
  // Weight rows in chunks of ~16 KB, which stay in L1/L2 while every tile of
  // activation rows goes by.
  const int64_t chunk = std::max<int64_t>(1, 16384 / a.row_bytes);
  for (int64_t rc = r0; rc < r1; rc += chunk) {
    const int64_t re = std::min(r1, rc + chunk);
    for (int64_t t0 = 0; t0 < a.n; t0 += kBatchRows) {
      const BatchBlock* x = packed + (t0 / kBatchRows) * nblocks;
      switch (std::min<int64_t>(kBatchRows, a.n - t0)) {
        case 1: BatchTiles<B, 1>(a, rc, re, t0, x); break;
        case 2: BatchTiles<B, 2>(a, rc, re, t0, x); break;
        case 3: BatchTiles<B, 3>(a, rc, re, t0, x); break;
        case 4: BatchTiles<B, 4>(a, rc, re, t0, x); break;
        case 5: BatchTiles<B, 5>(a, rc, re, t0, x); break;
        case 6: BatchTiles<B, 6>(a, rc, re, t0, x); break;
        case 7: BatchTiles<B, 7>(a, rc, re, t0, x); break;
        default: BatchTiles<B, 8>(a, rc, re, t0, x); break;
      }
    }
  }
}

// Q4_0 repacked (ggml_gemv_q4_0_8x8_q8_0): acc = fma(float(block dot), d_w d_x, acc).
struct Q4_0RepackKernel : RepackAccPolicy {
  static constexpr int kMaxR = 2, kMaxT = 2;

  template <int R, int T>
  static void Accumulate(const MatmulArgs& a, int64_t r, int64_t t0, __m128 (&acc)[R][T]) {
    const int64_t nblocks = a.cols / 32;
    const uint8_t* row0 = a.w + r * a.row_bytes;
    for (int64_t b = 0; b < nblocks; ++b) {
      for (int i = 0; i < R; ++i) {
        const uint8_t* p = row0 + i * a.row_bytes + b * Q4_0Bits::kBlockBytes;
        const __m256i q = Q4_0Bits::Values(p);
        const __m256i q_abs = _mm256_sign_epi8(q, q);
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
  tiling::Rows<SignedGgmlKernel<Q4_0Bits>>(a, r0, r1);
}

inline const ActBlockQ8K* XBlock(const MatmulArgs& a, int64_t t, int64_t sb) {
  return reinterpret_cast<const ActBlockQ8K*>(a.xq + t * a.xq_stride) + sb;
}

// u8 values . x, scaled per 128-bit lane by the int16 scales, -> int32.
inline __m256i DotScaled(__m256i q_u8, const int8_t* x, __m256i scales16) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(q_u8, Load256(x)), scales16);
}

// Q4_K: the super-block's eight lanes (lane m: values 4m..4m+3 of each
// 32-value sub-block, times its scale) and four min lanes (m[2k] bsum32[2k]
// + m[2k + 1] bsum32[2k + 1]); ggml's AVX2 loop computes the same integers.
template <int T>
inline void Q4KSuperBlock(const MatmulArgs& a, const uint8_t* p, int64_t t0, int64_t sb, __m256i (&isum)[T],
                          __m128i (&msum)[T]) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  uint64_t sc8, mn8;
  UnpackQ4KScalesPacked(p + 4, &sc8, &mn8);
  for (int j = 0; j < T; ++j) isum[j] = _mm256_setzero_si256();
  for (int c = 0; c < 4; ++c) {
    const __m256i qv = LoadU256(p + 16 + 32 * c);
    const __m256i lo = _mm256_and_si256(qv, low4);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qv, 4), low4);
    const __m256i s_lo = _mm256_set1_epi16(static_cast<int16_t>((sc8 >> (16 * c)) & 0xFF));
    const __m256i s_hi = _mm256_set1_epi16(static_cast<int16_t>((sc8 >> (16 * c + 8)) & 0xFF));
    for (int j = 0; j < T; ++j) {
      const ActBlockQ8K* x = XBlock(a, t0 + j, sb);
      const int8_t* xlo = x->q + 128 * (c / 2) + 32 * (c % 2);  // kQ8KPaired
      isum[j] = _mm256_add_epi32(isum[j], DotScaled(lo, xlo, s_lo));
      isum[j] = _mm256_add_epi32(isum[j], DotScaled(hi, xlo + 64, s_hi));
    }
  }
  const __m128i mn16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(mn8)));
  for (int j = 0; j < T; ++j) {
    const ActBlockQ8K* x = XBlock(a, t0 + j, sb);
    msum[j] = _mm_madd_epi16(mn16, _mm_load_si128(reinterpret_cast<const __m128i*>(x->bsum32)));
  }
}

// Q4_K as ggml_vec_dot_q4_K_q8_K (KAccPolicy, ggml_acc.h).
struct Q4KVecDotKernel : KAccPolicy {
  static constexpr int kMaxR = 1, kMaxT = 4;
  static constexpr int64_t kBlockBytes = 144;

  template <int R, int T>
  static void Accumulate(const MatmulArgs& a, int64_t r, int64_t t0, KAcc (&acc)[R][T]) {
    static_assert(R == 1, "K-quant tiles are one weight row");
    const uint8_t* row = a.w + r * a.row_bytes;
    for (int64_t sb = 0; sb < a.cols / 256; ++sb) {
      const uint8_t* p = row + sb * kBlockBytes;
      const float d = HalfAt(p), dmin = HalfAt(p + 2);
      __m256i isum[T];
      __m128i msum[T];
      Q4KSuperBlock<T>(a, p, t0, sb, isum, msum);
      for (int j = 0; j < T; ++j) {
        const float dx = XBlock(a, t0 + j, sb)->d;
        acc[0][j].v = _mm256_fmadd_ps(_mm256_set1_ps(dx * d), _mm256_cvtepi32_ps(isum[j]), acc[0][j].v);
        acc[0][j].m = _mm_fmadd_ps(_mm_set1_ps(-dx * dmin), _mm_cvtepi32_ps(msum[j]), acc[0][j].m);
      }
    }
  }
};

// Q4_K as ggml_gemv_q4_K_8x8_q8_K (repacked; RepackAccPolicy, ggml_acc.h).
struct Q4KRepackKernel : RepackAccPolicy {
  static constexpr int kMaxR = 1, kMaxT = 4;
  static constexpr int64_t kBlockBytes = 144;

  template <int R, int T>
  static void Accumulate(const MatmulArgs& a, int64_t r, int64_t t0, __m128 (&acc)[R][T]) {
    static_assert(R == 1, "K-quant tiles are one weight row");
    const uint8_t* row = a.w + r * a.row_bytes;
    for (int64_t sb = 0; sb < a.cols / 256; ++sb) {
      const uint8_t* p = row + sb * kBlockBytes;
      const float d = HalfAt(p), dmin = HalfAt(p + 2);
      __m256i isum[T];
      __m128i msum[T];
      Q4KSuperBlock<T>(a, p, t0, sb, isum, msum);
      for (int j = 0; j < T; ++j) {
        const float dx = XBlock(a, t0 + j, sb)->d;
        // lane 0: the super-block's dot, lane 1: its min sum
        const __m128i ints = _mm_hadd_epi32(
            _mm_hadd_epi32(_mm_add_epi32(_mm256_castsi256_si128(isum[j]), _mm256_extracti128_si256(isum[j], 1)),
                           msum[j]),
            _mm_setzero_si128());
        const __m128 scale = _mm_setr_ps(d * dx, dmin * dx, 0.0f, 0.0f);
        acc[0][j] = _mm_fmadd_ps(_mm_cvtepi32_ps(ints), scale, acc[0][j]);
      }
    }
  }
};

void Q4KRows(const MatmulArgs& a, int64_t r0, int64_t r1) {
  if (a.repacked) return tiling::Rows<Q4KRepackKernel>(a, r0, r1);
  tiling::Rows<Q4KVecDotKernel>(a, r0, r1);
}

// Q5_K as ggml_vec_dot_q5_K_q8_K (__AVX2__ branch), kQ8K activations: per
// 64 values c, q = nibble + 16 * fifth bit (qh bit 2c / 2c + 1); eight lanes
// acc = fma(d_x d_w, lanes, acc); the min terms go into one scalar chain
// summs = fma(-d_x dmin_w, float(sum m bsum32), summs) (gcc contracts ggml's
// `summs += dmin * isum`), added after hsum_float_8 (GgmlAccPolicy's s).
// Also the AVX-512 build's Q5_K kernel.
struct Q5KKernel : GgmlAccPolicy {
  static constexpr int kMaxR = 1, kMaxT = 4;
  static constexpr int64_t kBlockBytes = 176;

  template <int R, int T>
  static void Accumulate(const MatmulArgs& a, int64_t r, int64_t t0, GgmlAcc (&acc)[R][T]) {
    static_assert(R == 1, "K-quant tiles are one weight row");
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i bit4 = _mm256_set1_epi8(0x10);
    const uint8_t* row = a.w + r * a.row_bytes;
    for (int64_t sb = 0; sb < a.cols / 256; ++sb) {
      const uint8_t* p = row + sb * kBlockBytes;
      const float d = HalfAt(p), dmin = HalfAt(p + 2);
      uint64_t sc8, mn8;
      UnpackQ4KScalesPacked(p + 4, &sc8, &mn8);
      const __m256i qh = LoadU256(p + 16);
      __m256i isum[T];
      for (int j = 0; j < T; ++j) isum[j] = _mm256_setzero_si256();
      for (int c = 0; c < 4; ++c) {
        const __m256i qv = LoadU256(p + 48 + 32 * c);
        // fifth bits 2c and 2c + 1 moved to bit 4 of each byte
        const __m256i h_lo = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * c), 4), bit4);
        const __m256i h_hi = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * c + 1), 4), bit4);
        const __m256i lo = _mm256_or_si256(_mm256_and_si256(qv, low4), h_lo);
        const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qv, 4), low4), h_hi);
        const __m256i s_lo = _mm256_set1_epi16(static_cast<int16_t>((sc8 >> (16 * c)) & 0xFF));
        const __m256i s_hi = _mm256_set1_epi16(static_cast<int16_t>((sc8 >> (16 * c + 8)) & 0xFF));
        for (int j = 0; j < T; ++j) {
          const ActBlockQ8K* x = XBlock(a, t0 + j, sb);
          isum[j] = _mm256_add_epi32(isum[j], DotScaled(lo, x->q + 64 * c, s_lo));
          isum[j] = _mm256_add_epi32(isum[j], DotScaled(hi, x->q + 64 * c + 32, s_hi));
        }
      }
      const __m128i mn16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(mn8)));
      for (int j = 0; j < T; ++j) {
        const ActBlockQ8K* x = XBlock(a, t0 + j, sb);
        const __m128i prod = _mm_madd_epi16(mn16, _mm_load_si128(reinterpret_cast<const __m128i*>(x->bsum32)));
        const __m128i msum = _mm_hadd_epi32(_mm_hadd_epi32(prod, _mm_setzero_si128()), _mm_setzero_si128());
        acc[0][j].v = _mm256_fmadd_ps(_mm256_set1_ps(x->d * d), _mm256_cvtepi32_ps(isum[j]), acc[0][j].v);
        acc[0][j].s = _mm_fmadd_ss(_mm_set_ss(-x->d * dmin), _mm_cvtepi32_ps(msum), acc[0][j].s);
      }
    }
  }
};

// Q6_K as ggml_vec_dot_q6_K_q8_K: each 32-value chunk's 256-bit dot already
// has ggml's lanes (lane m: values 4m..4m+3), less 32 (sc bsum16) per lane
// pair as ggml; acc = fma(d_x d_w, lanes, acc) (GgmlAccPolicy).
struct Q6KKernel : GgmlAccPolicy {
  static constexpr int kMaxR = 1, kMaxT = 4;
  static constexpr int64_t kBlockBytes = 210;

  template <int R, int T>
  static void Accumulate(const MatmulArgs& a, int64_t r, int64_t t0, GgmlAcc (&acc)[R][T]) {
    static_assert(R == 1, "K-quant tiles are one weight row");
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i bits45 = _mm256_set1_epi8(0x30);
    const uint8_t* row = a.w + r * a.row_bytes;
    for (int64_t sb = 0; sb < a.cols / 256; ++sb) {
      const uint8_t* p = row + sb * kBlockBytes;
      const int8_t* sc = reinterpret_cast<const int8_t*>(p + 192);
      __m256i isum[T];
      for (int j = 0; j < T; ++j) isum[j] = _mm256_setzero_si256();
      for (int h = 0; h < 2; ++h) {
        const __m256i ql0 = LoadU256(p + 64 * h);
        const __m256i ql1 = LoadU256(p + 64 * h + 32);
        const __m256i qh = LoadU256(p + 128 + 32 * h);
        __m256i q[4];
        q[0] = _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), bits45));
        q[1] = _mm256_or_si256(_mm256_and_si256(ql1, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits45));
        q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4), _mm256_and_si256(qh, bits45));
        q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                               _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits45));
        for (int k = 0; k < 4; ++k) {
          const int s = 8 * h + 2 * k;
          const __m256i scales = _mm256_set_m128i(_mm_set1_epi16(sc[s + 1]), _mm_set1_epi16(sc[s]));
          for (int j = 0; j < T; ++j) {
            const ActBlockQ8K* x = XBlock(a, t0 + j, sb);
            isum[j] = _mm256_add_epi32(isum[j], DotScaled(q[k], x->q + 128 * h + 32 * k, scales));
          }
        }
      }
      const __m256i sc16 = _mm256_cvtepi8_epi16(LoadU128(p + 192));
      const float d = HalfAt(p + 208);
      for (int j = 0; j < T; ++j) {
        const ActBlockQ8K* x = XBlock(a, t0 + j, sb);
        const __m256i corr = _mm256_madd_epi16(sc16, Load256(x->bsum16));
        isum[j] = _mm256_sub_epi32(isum[j], _mm256_slli_epi32(corr, 5));
        acc[0][j].v = _mm256_fmadd_ps(_mm256_set1_ps(x->d * d), _mm256_cvtepi32_ps(isum[j]), acc[0][j].v);
      }
    }
  }
};

// Float weights, 8 columns per step; the column tail goes through a
// zero-padded stack buffer.
struct LoadF32 {
  static __m256 Load(const uint8_t* row, int64_t c) { return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + c); }
  static float At(const uint8_t* row, int64_t c) {
    float v;
    std::memcpy(&v, row + 4 * c, sizeof v);
    return v;
  }
};
struct LoadF16 {
  static __m256 Load(const uint8_t* row, int64_t c) { return _mm256_cvtph_ps(LoadU128(row + 2 * c)); }
  static float At(const uint8_t* row, int64_t c) { return HalfAt(row + 2 * c); }
};
struct LoadBf16 {
  static __m256 Load(const uint8_t* row, int64_t c) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(LoadU128(row + 2 * c)), 16));
  }
  static float At(const uint8_t* row, int64_t c) {
    uint16_t b;
    std::memcpy(&b, row + 2 * c, sizeof b);
    const uint32_t u = static_cast<uint32_t>(b) << 16;
    float v;
    std::memcpy(&v, &u, sizeof v);
    return v;
  }
};

template <class L>
struct FloatKernel : FloatAcc {
  static constexpr int kMaxR = 2, kMaxT = 4;

  template <int R, int T>
  static void Accumulate(const MatmulArgs& a, int64_t r, int64_t t0, __m256 (&acc)[R][T]) {
    const uint8_t* row0 = a.w + r * a.row_bytes;
    const float* x0 = a.x + t0 * a.cols;
    int64_t c = 0;
    for (; c + 8 <= a.cols; c += 8) {
      for (int i = 0; i < R; ++i) {
        const __m256 w = L::Load(row0 + i * a.row_bytes, c);
        for (int j = 0; j < T; ++j) {
          acc[i][j] = _mm256_fmadd_ps(w, _mm256_loadu_ps(x0 + j * a.cols + c), acc[i][j]);
        }
      }
    }
    if (c < a.cols) {
      const int rest = static_cast<int>(a.cols - c);
      for (int i = 0; i < R; ++i) {
        alignas(32) float wt[8] = {};
        for (int k = 0; k < rest; ++k) wt[k] = L::At(row0 + i * a.row_bytes, c + k);
        for (int j = 0; j < T; ++j) {
          alignas(32) float xt[8] = {};
          std::memcpy(xt, x0 + j * a.cols + c, sizeof(float) * rest);
          acc[i][j] = _mm256_fmadd_ps(_mm256_load_ps(wt), _mm256_load_ps(xt), acc[i][j]);
        }
      }
    }
  }
};

}  // namespace

RowsKernel GetAvx2Kernel(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return tiling::Rows<FloatKernel<LoadF32>>;
    case GgmlType::F16: return tiling::Rows<FloatKernel<LoadF16>>;
    case GgmlType::BF16: return tiling::Rows<FloatKernel<LoadBf16>>;
    case GgmlType::Q4_0: return Q4_0Rows;
    case GgmlType::Q4_1: return BatchRows<Q4_1Batch>;
    case GgmlType::Q5_0: return BatchRows<Q5_0Batch>;
    case GgmlType::Q8_0: return BatchRows<Q8_0Batch>;
    case GgmlType::Q4_K: return Q4KRows;
    case GgmlType::Q5_K: return tiling::Rows<Q5KKernel>;
    case GgmlType::Q6_K: return tiling::Rows<Q6KKernel>;
  }
  return nullptr;
}

#else  // !TROUPE_HAVE_AVX2

RowsKernel GetAvx2Kernel(GgmlType) { return nullptr; }

#endif

}  // namespace troupe
