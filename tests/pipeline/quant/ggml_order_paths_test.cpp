// Q4_0, Q5_0, Q4_K and Q6_K products in llama.cpp's exact order of
// operations, spelled out in scalar code with std::fma (the style of
// ggml_order_test.cpp, which covers Q4_1 and Q8_0). ggml_reference_test.cpp
// checks the same kernels against llama.cpp's own library; this file states
// what that order is, so a failure there can be read here.
//
// vec_dot (ggml-cpu/arch/x86/quants.c, __AVX2__ branch): eight fp32 lanes,
//   lane m = the int32 sum of values 4m..4m+3 of every 32-value chunk (with
//   its scale for the K-quants), acc[m] = fma(d_w d_x, float(lane), acc[m])
//   per block / super-block, then hsum_float_8. Q4_K adds four min lanes
//   (fma with -d_x dmin_w), summed (m0 + m2) + (m1 + m3), after it; Q6_K
//   subtracts 32 (sc[2m] bsum16[2m] + sc[2m + 1] bsum16[2m + 1]) from lane m.
// Repacked gemv (ggml-cpu/arch/x86/repack.cpp; Q4_0 and Q4_K when rows % 8
//   == 0): one chain per output, acc = fma(float(block dot), d_w d_x, acc),
//   and for Q4_K acc_min = fma(float(sum m bsum32), dmin_w d_x, acc_min),
//   y = acc - acc_min.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "pipeline/quant/activations.h"
#include "pipeline/quant/blocks.h"
#include "pipeline/quant/half.h"
#include "pipeline/quant/kernels.h"
#include "pipeline/quant/qmatrix.h"
#include "quant_test_util.h"

namespace troupe {
namespace {

using testing_util::Hsum8;
using testing_util::RandomActivations;
using testing_util::RandomMatrix;
using testing_util::U16;

// One quantized activation row in value order: Q8_0 blocks (q, fp16-rounded
// d) or Q8_K super-blocks (q, d, 16-value sums).
struct ActRow {
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int32_t> bsum16;
};

ActRow Quantize(GgmlType type, const float* x, int64_t cols) {
  ActRow a;
  a.q.resize(static_cast<size_t>(cols));
  if (ggml_block_values(type) == 32) {
    std::vector<uint8_t> buf(static_cast<size_t>(ActRowBytes(ActLayout::kQ8x2, cols)) + 64);
    uint8_t* p = buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;
    QuantizeActRow(ActLayout::kQ8x2, x, cols, p);
    for (int64_t b = 0; b < cols / 32; ++b) {
      const auto* g = reinterpret_cast<const ActGroupQ8x2*>(p) + b / 2;
      std::memcpy(&a.q[32 * b], g->q + 32 * (b % 2), 32);
      a.d.push_back(g->d[b % 2]);
    }
    return a;
  }
  std::vector<uint8_t> buf(static_cast<size_t>(ActRowBytes(ActLayout::kQ8K, cols)) + 64);
  uint8_t* p = buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;
  QuantizeActRow(ActLayout::kQ8K, x, cols, p);  // value order (Q4_K's kernels read kQ8KPaired)
  for (int64_t b = 0; b < cols / 256; ++b) {
    const auto* blk = reinterpret_cast<const ActBlockQ8K*>(p) + b;
    std::memcpy(&a.q[256 * b], blk->q, 256);
    a.d.push_back(blk->d);
    for (int i = 0; i < 16; ++i) a.bsum16.push_back(blk->bsum16[i]);
  }
  return a;
}

// The 32 signed values of a Q4_0 / Q5_0 block.
void Values32(GgmlType type, const uint8_t* blk, int32_t v[32]) {
  const bool q5 = type == GgmlType::Q5_0;
  uint32_t qh = 0;
  if (q5) std::memcpy(&qh, blk + 2, sizeof qh);
  const uint8_t* qs = blk + (q5 ? 6 : 2);
  for (int j = 0; j < 16; ++j) {
    v[j] = q5 ? static_cast<int32_t>((qs[j] & 15) | ((qh >> j) & 1) << 4) - 16 : (qs[j] & 15) - 8;
    v[j + 16] = q5 ? static_cast<int32_t>((qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4) - 16 : (qs[j] >> 4) - 8;
  }
}

float Dot32(GgmlType type, const uint8_t* w, const ActRow& x, int64_t cols, bool repacked) {
  const int64_t bb = ggml_block_bytes(type);
  float lanes[8] = {}, acc = 0.0f;
  for (int64_t b = 0; b < cols / 32; ++b) {
    int32_t v[32];
    Values32(type, w + b * bb, v);
    const float dd = Fp16ToFp32(U16(w + b * bb)) * x.d[b];
    int32_t block = 0;
    for (int m = 0; m < 8; ++m) {
      int32_t lane = 0;
      for (int k = 0; k < 4; ++k) lane += v[4 * m + k] * x.q[32 * b + 4 * m + k];
      lanes[m] = std::fma(dd, static_cast<float>(lane), lanes[m]);
      block += lane;
    }
    acc = std::fma(static_cast<float>(block), dd, acc);
  }
  return repacked ? acc : Hsum8(lanes);
}

float DotQ4K(const uint8_t* w, const ActRow& x, int64_t cols, bool repacked) {
  float lanes[8] = {}, mlanes[4] = {}, acc = 0.0f, acc_min = 0.0f;
  for (int64_t sb = 0; sb < cols / 256; ++sb) {
    const uint8_t* p = w + sb * 144;
    const float dw = Fp16ToFp32(U16(p)), dmin = Fp16ToFp32(U16(p + 2)), dx = x.d[sb];
    uint8_t sc[8], mn[8];
    UnpackQ4KScales(p + 4, sc, mn);
    int32_t q[256];
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        q[64 * c + l] = p[16 + 32 * c + l] & 15;
        q[64 * c + 32 + l] = p[16 + 32 * c + l] >> 4;
      }
    }
    const int8_t* xq = &x.q[256 * sb];
    int32_t bsum32[8];
    for (int s = 0; s < 8; ++s) bsum32[s] = x.bsum16[16 * sb + 2 * s] + x.bsum16[16 * sb + 2 * s + 1];
    int32_t total = 0, mins = 0;
    for (int m = 0; m < 8; ++m) {
      int32_t lane = 0;
      for (int s = 0; s < 8; ++s) {
        int32_t part = 0;
        for (int k = 0; k < 4; ++k) part += q[32 * s + 4 * m + k] * xq[32 * s + 4 * m + k];
        lane += sc[s] * part;
      }
      lanes[m] = std::fma(dx * dw, static_cast<float>(lane), lanes[m]);
      total += lane;
    }
    for (int k = 0; k < 4; ++k) {
      const int32_t pk = mn[2 * k] * bsum32[2 * k] + mn[2 * k + 1] * bsum32[2 * k + 1];
      mlanes[k] = std::fma(-dx * dmin, static_cast<float>(pk), mlanes[k]);
      mins += pk;
    }
    acc = std::fma(static_cast<float>(total), dw * dx, acc);
    acc_min = std::fma(static_cast<float>(mins), dmin * dx, acc_min);
  }
  if (repacked) return acc - acc_min;
  return Hsum8(lanes) + ((mlanes[0] + mlanes[2]) + (mlanes[1] + mlanes[3]));
}

float DotQ6K(const uint8_t* w, const ActRow& x, int64_t cols) {
  float lanes[8] = {};
  for (int64_t sb = 0; sb < cols / 256; ++sb) {
    BlockQ6K blk;
    std::memcpy(&blk, w + sb * 210, sizeof blk);
    int32_t q[256];
    for (int h = 0; h < 2; ++h) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t* ql = blk.ql + 64 * h;
        const uint8_t hb = blk.qh[32 * h + l];
        q[128 * h + l] = (ql[l] & 15) | (hb & 3) << 4;
        q[128 * h + 32 + l] = (ql[l + 32] & 15) | ((hb >> 2) & 3) << 4;
        q[128 * h + 64 + l] = (ql[l] >> 4) | ((hb >> 4) & 3) << 4;
        q[128 * h + 96 + l] = (ql[l + 32] >> 4) | ((hb >> 6) & 3) << 4;
      }
    }
    const int8_t* xq = &x.q[256 * sb];
    const int32_t* bs = &x.bsum16[16 * sb];
    const float d = x.d[sb] * Fp16ToFp32(blk.d);
    for (int m = 0; m < 8; ++m) {
      int32_t lane = 0;
      for (int c = 0; c < 8; ++c) {
        int32_t part = 0;
        for (int k = 0; k < 4; ++k) part += q[32 * c + 4 * m + k] * xq[32 * c + 4 * m + k];
        lane += blk.scales[(32 * c + 4 * m) / 16] * part;
      }
      lane -= 32 * (blk.scales[2 * m] * bs[2 * m] + blk.scales[2 * m + 1] * bs[2 * m + 1]);
      lanes[m] = std::fma(d, static_cast<float>(lane), lanes[m]);
    }
  }
  return Hsum8(lanes);
}

float Reference(GgmlType type, const uint8_t* w, const ActRow& x, int64_t cols, bool repacked) {
  switch (type) {
    case GgmlType::Q4_K: return DotQ4K(w, x, cols, repacked);
    case GgmlType::Q6_K: return DotQ6K(w, x, cols);
    default: return Dot32(type, w, x, cols, repacked);
  }
}

TEST(GgmlOrderPaths, Q4_0Q5_0Q4_KQ6_KMatchLlamaCppOrderBitForBit) {
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q4_K, GgmlType::Q6_K}) {
    const int64_t bv = ggml_block_values(type);
    for (int64_t rows : {16, 21}) {  // repacked (Q4_0, Q4_K) and not
      for (int64_t blocks : {1, 3, 5, 8}) {
        const int64_t cols = blocks * bv, n = 5;
        const std::vector<uint8_t> wbytes = RandomMatrix(type, rows, cols, 3 + static_cast<uint32_t>(cols + rows));
        auto w = QuantMatrix::Create(type, rows, cols, wbytes.data(), wbytes.size());
        ASSERT_TRUE(w.ok());
        const bool repacked = GgmlRepacks(type, rows);
        const std::vector<float> x = RandomActivations(n, cols, 13);
        std::vector<std::vector<float>> want(n);
        for (int64_t t = 0; t < n; ++t) {
          const ActRow xq = Quantize(type, &x[t * cols], cols);
          for (int64_t r = 0; r < rows; ++r) {
            want[t].push_back(Reference(type, w->data() + r * w->row_bytes(), xq, cols, repacked));
          }
        }
        for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
          if (!IsaAvailable(isa)) continue;
          for (int64_t batch : {int64_t{1}, n}) {
            std::vector<float> y(static_cast<size_t>(batch * rows));
            MultiplyWithIsa(*w, isa, x.data(), batch, y.data(), 1);
            for (int64_t t = 0; t < batch; ++t) {
              int bad = 0;
              for (int64_t r = 0; r < rows; ++r) bad += y[t * rows + r] != want[t][r];
              EXPECT_EQ(bad, 0) << ggml_type_name(type) << " [" << rows << ", " << cols << "] "
                                << (repacked ? "repacked" : "vec_dot") << " " << IsaName(isa) << " batch " << batch
                                << " row " << t;
            }
          }
        }
      }
    }
  }
}

// The two Q4_K orders differ: on the same weights and activations the
// repacked gemv and vec_dot give different bits for some rows (so following
// the right one per shape matters), while both stay within rounding.
TEST(GgmlOrderPaths, Q4_KRepackedAndVecDotOrdersDiffer) {
  const int64_t rows = 64, cols = 2048;
  const std::vector<uint8_t> w = RandomMatrix(GgmlType::Q4_K, rows, cols, 5);
  const std::vector<float> x = RandomActivations(1, cols, 6);
  const ActRow xq = Quantize(GgmlType::Q4_K, x.data(), cols);
  int differ = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float a = DotQ4K(w.data() + r * 8 * 144, xq, cols, true);
    const float b = DotQ4K(w.data() + r * 8 * 144, xq, cols, false);
    differ += a != b;
    EXPECT_NEAR(a, b, 1e-4 * (std::fabs(a) + 1));
  }
  EXPECT_GT(differ, 0);
}

}  // namespace
}  // namespace troupe
