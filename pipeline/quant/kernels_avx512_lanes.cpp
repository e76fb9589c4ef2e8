// AVX-512 kernels for kMinLaneRows..kLaneRows (11..16) activation rows of
// Q8_0 and Q4_1 weights over row lanes (ActLaneBlock, activations.h): a
// 512-bit register holds ggml lane p (values 4p..4p+3 of a block) of all 16
// activation rows, and the weight's four values of that lane are broadcast
// from memory into the VNNI dot, so one dot, conversion and FMA serve 16
// outputs and the scale product d_w * d_x is one multiply per block for all
// of them. The pair kernels (kernels_avx512_pairs.cpp) spend a multiply per
// pair and block, which at 16 rows made them bound by the FMA ports: the
// Q8_0 LM head of the default model [49152,576] went 93 -> ~147 GFLOP/s on
// one thread (bench/README.md, "Row lanes").
//
// The order is ggml's, bit for bit (the same as the one-row and pair
// kernels, so batch invariance holds): per output, eight fp32 lanes
//   acc[p] = fma(fp16(d_w) * fp16(d_x), float(isum_p(block)), acc[p])
// block after block, then hsum_float_8 (GgmlSum's tree, here for 16 outputs
// at once), plus for Q4_1 the chain summs = fma(fp16(m_w), fp16(s_x), summs)
// in block order. The activations are unsigned (x + 128), so each lane's
// integer dot starts from -128 * the sum of the weight's four values: the
// same int32 isum_p as a signed dot.
//
// Per weight row, each chunk of kChunkBlocks blocks first has its weights
// prepared (Q4_1's nibbles unpacked, every lane's -128 * sum) into a small
// buffer, then its dots read them from there: reading them back right after
// the stores that wrote them stalled on store forwarding.

#include "pipeline/quant/kernels.h"

#include "pipeline/quant/avx512_guard.h"

#if defined(TROUPE_HAVE_AVX512)
#include <algorithm>
#include <cstring>

#include "pipeline/quant/activations.h"
#endif

namespace troupe {

#if defined(TROUPE_HAVE_AVX512)
namespace {

constexpr int64_t kChunkBlocks = 64;

inline float HalfAt(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof h);
  return _cvtsh_ss(h);
}

// -128 * the sum of each ggml lane's four signed weight values, from the 32
// weight bytes as unsigned (Q4_1, values 0..15) or signed (Q8_0).
inline __m256i LaneOffsetsUnsigned(__m256i w) {
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), w, _mm256_set1_epi8(static_cast<char>(-128)));
}
inline __m256i LaneOffsetsSigned(__m256i w) {
  const __m256i sums = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(static_cast<char>(0x80)), w);
  return _mm256_sub_epi32(_mm256_setzero_si256(), sums);
}

// Q8_0 block: fp16 d, 32 signed bytes, used in place.
struct Q8_0Lanes {
  static constexpr bool kMins = false;
  static constexpr int64_t kBlockBytes = 34;
  static void Prepare(const uint8_t* blk, uint8_t* /*values*/, int32_t* offsets) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
    _mm256_store_si256(reinterpret_cast<__m256i*>(offsets), LaneOffsetsSigned(w));
  }
  static const uint8_t* Values(const uint8_t* blk, const uint8_t* /*values*/) { return blk + 2; }
  static float D(const uint8_t* blk) { return HalfAt(blk); }
  static float M(const uint8_t* /*blk*/) { return 0.0f; }
};

// Q4_1 block: fp16 d, fp16 m, 16 bytes of nibbles (value j < 16 the low
// nibble of byte j, value j + 16 its high nibble), unpacked to 32 bytes.
struct Q4_1Lanes {
  static constexpr bool kMins = true;
  static constexpr int64_t kBlockBytes = 20;
  static void Prepare(const uint8_t* blk, uint8_t* values, int32_t* offsets) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 4));
    const __m256i w = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));
    _mm256_store_si256(reinterpret_cast<__m256i*>(values), w);
    _mm256_store_si256(reinterpret_cast<__m256i*>(offsets), LaneOffsetsUnsigned(w));
  }
  static const uint8_t* Values(const uint8_t* /*blk*/, const uint8_t* values) { return values; }
  static float D(const uint8_t* blk) { return HalfAt(blk); }
  static float M(const uint8_t* blk) { return HalfAt(blk + 2); }
};

template <class K>
void LaneRows(const MatmulArgs& a, int64_t r0, int64_t r1) {
  const int64_t blocks = a.cols / 32;
  const auto* xl = reinterpret_cast<const ActLaneBlock*>(a.xl);
  alignas(64) uint8_t values[kChunkBlocks * 32];
  alignas(64) int32_t offsets[kChunkBlocks * 8];
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = a.w + r * a.row_bytes;
    __m512 acc[8];
#pragma GCC unroll 8
    for (int p = 0; p < 8; ++p) acc[p] = _mm512_setzero_ps();
    __m512 summs = _mm512_setzero_ps();
    for (int64_t c0 = 0; c0 < blocks; c0 += kChunkBlocks) {
      const int64_t c1 = std::min(blocks, c0 + kChunkBlocks);
      for (int64_t b = c0; b < c1; ++b)
        K::Prepare(row + b * K::kBlockBytes, values + 32 * (b - c0), offsets + 8 * (b - c0));
      for (int64_t b = c0; b < c1; ++b) {
        const uint8_t* blk = row + b * K::kBlockBytes;
        const ActLaneBlock& x = xl[b];
        const __m512 scale = _mm512_mul_ps(_mm512_set1_ps(K::D(blk)), _mm512_load_ps(x.d));
        if constexpr (K::kMins) summs = _mm512_fmadd_ps(_mm512_set1_ps(K::M(blk)), _mm512_load_ps(x.s), summs);
        const uint8_t* w = K::Values(blk, values + 32 * (b - c0));
        const int32_t* off = offsets + 8 * (b - c0);
#pragma GCC unroll 8
        for (int p = 0; p < 8; ++p) {
          int32_t w4;
          std::memcpy(&w4, w + 4 * p, sizeof w4);
          const __m512i isum =
              _mm512_dpbusd_epi32(_mm512_set1_epi32(off[p]), _mm512_load_si512(x.x[p]), _mm512_set1_epi32(w4));
          acc[p] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(isum), acc[p]);
        }
      }
    }
    // GgmlSum of each output, lanes in registers: ((v0 + v4) + (v2 + v6)) +
    // ((v1 + v5) + (v3 + v7)), then + summs.
    __m512 sum = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0], acc[4]), _mm512_add_ps(acc[2], acc[6])),
                               _mm512_add_ps(_mm512_add_ps(acc[1], acc[5]), _mm512_add_ps(acc[3], acc[7])));
    if constexpr (K::kMins) sum = _mm512_add_ps(sum, summs);
    alignas(64) float out[kLaneRows];
    _mm512_store_ps(out, sum);
    for (int64_t t = 0; t < a.n; ++t) a.y[t * a.ldy + r] = out[t];
  }
}

}  // namespace

RowsKernel GetAvx512LaneKernel(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_1: return LaneRows<Q4_1Lanes>;
    case GgmlType::Q8_0: return LaneRows<Q8_0Lanes>;
    default: return nullptr;
  }
}

#else  // !TROUPE_HAVE_AVX512

RowsKernel GetAvx512LaneKernel(GgmlType) { return nullptr; }

#endif

}  // namespace troupe
