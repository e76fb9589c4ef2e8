// Q4_1 and Q8_0 products in llama.cpp's exact order of operations.
//
// On x86 ggml runs the __AVX2__ branch of ggml_vec_dot_q4_1_q8_1 /
// ggml_vec_dot_q8_0_q8_0 (ggml-cpu/arch/x86/quants.c) whether or not AVX-512
// is there: eight fp32 lanes, lane p accumulating the int32 dot of values
// 4p..4p+3 of each block as acc[p] = fma(d_w * d_x, float(isum), acc[p]) block
// after block, then hsum_float_8 = ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)) and,
// for Q4_1, + summs where summs = fma(m_w, s_x, summs) block after block. The
// reference below spells that out in scalar code with std::fma; our AVX2 and
// AVX-512 kernels must give the same bits. The scalar kernel follows ggml's
// portable loop (sumf += (d_w d_x) * sumi + m_w s_x, no fusing).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "pipeline/quant/activations.h"
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

// Activation block b of a quantized row: 32 int8 values in value order and
// the (d, s) pair (s unused for Q8_0).
struct ActBlock {
  int8_t q[32];
  float d, s;
};

// Q4_1 and Q8_0 both read layout kQ8x2 (ggml Q8_1 / Q8_0 blocks).
ActBlock Q8Act(const std::vector<uint8_t>& xq, int64_t b) {
  const auto* g = reinterpret_cast<const ActGroupQ8x2*>(xq.data()) + b / 2;
  const int k = static_cast<int>(b % 2);
  ActBlock a;
  std::memcpy(a.q, g->q + 32 * k, 32);
  a.d = g->d[k];
  a.s = g->s[k];
  return a;
}
ActBlock Q4Act(const std::vector<uint8_t>& xq, int64_t b) { return Q8Act(xq, b); }

// ggml's x86 (__AVX2__) loop, in scalar code.
float GgmlX86Dot(GgmlType type, const uint8_t* w, const std::vector<uint8_t>& xq, int64_t cols) {
  float acc[8] = {};
  float summs = 0.0f;
  for (int64_t b = 0; b < cols / 32; ++b) {
    int32_t v[32];
    float dw, mw = 0.0f;
    ActBlock x;
    if (type == GgmlType::Q4_1) {
      const uint8_t* blk = w + 20 * b;
      dw = Fp16ToFp32(U16(blk));
      mw = Fp16ToFp32(U16(blk + 2));
      for (int j = 0; j < 16; ++j) {
        v[j] = blk[4 + j] & 0x0F;
        v[16 + j] = blk[4 + j] >> 4;
      }
      x = Q4Act(xq, b);
    } else {
      const uint8_t* blk = w + 34 * b;
      dw = Fp16ToFp32(U16(blk));
      for (int j = 0; j < 32; ++j) v[j] = static_cast<int8_t>(blk[2 + j]);
      x = Q8Act(xq, b);
    }
    const float dd = dw * x.d;
    for (int p = 0; p < 8; ++p) {
      int32_t isum = 0;
      for (int k = 0; k < 4; ++k) isum += v[4 * p + k] * x.q[4 * p + k];
      acc[p] = std::fma(dd, static_cast<float>(isum), acc[p]);
    }
    if (type == GgmlType::Q4_1) summs = std::fma(mw, x.s, summs);
  }
  return Hsum8(acc) + summs;
}

// ggml's portable loop (ggml_vec_dot_*_generic), unfused.
float GgmlGenericDot(GgmlType type, const uint8_t* w, const std::vector<uint8_t>& xq, int64_t cols) {
  volatile float sumf = 0.0f;  // volatile: keep every rounding step of ggml's C
  for (int64_t b = 0; b < cols / 32; ++b) {
    if (type == GgmlType::Q4_1) {
      const uint8_t* blk = w + 20 * b;
      const ActBlock x = Q4Act(xq, b);
      int32_t s0 = 0, s1 = 0;
      for (int j = 0; j < 16; ++j) {
        s0 += (blk[4 + j] & 0x0F) * x.q[j];
        s1 += (blk[4 + j] >> 4) * x.q[16 + j];
      }
      volatile float dd = Fp16ToFp32(U16(blk)) * x.d;
      volatile float t1 = dd * static_cast<float>(s0 + s1);
      volatile float t2 = Fp16ToFp32(U16(blk + 2)) * x.s;
      volatile float t = t1 + t2;
      sumf = sumf + t;
    } else {
      const uint8_t* blk = w + 34 * b;
      const ActBlock x = Q8Act(xq, b);
      int32_t s = 0;
      // Widened to int32 first: GCC 12 -march=native (AVX512-VNNI) was seen
      // to miscompile the direct int8 x int8 sum in this function.
      int32_t wv[32], xv[32];
      for (int j = 0; j < 32; ++j) wv[j] = static_cast<int8_t>(blk[2 + j]), xv[j] = x.q[j];
      for (int j = 0; j < 32; ++j) s += wv[j] * xv[j];
      volatile float dd = Fp16ToFp32(U16(blk)) * x.d;
      volatile float t = static_cast<float>(s) * dd;
      sumf = sumf + t;
    }
  }
  return sumf;
}

TEST(GgmlOrder, Q4_1AndQ8_0MatchLlamaCppBitForBit) {
  // Column counts with every remainder of blocks mod 4 (the AVX-512 kernels
  // take four Q4_1 / two Q8_0 blocks per step) and the model's 576 and 1536.
  for (GgmlType type : {GgmlType::Q4_1, GgmlType::Q8_0}) {
    for (int64_t cols : {32, 64, 96, 128, 160, 576, 1536}) {
      const int64_t rows = 21, n = 5;
      const std::vector<uint8_t> wbytes = RandomMatrix(type, rows, cols, 7 + static_cast<uint32_t>(cols));
      auto w = QuantMatrix::Create(type, rows, cols, wbytes.data(), wbytes.size());
      ASSERT_TRUE(w.ok());
      const std::vector<float> x = RandomActivations(n, cols, 11);
      const ActLayout layout = ActLayoutFor(type);
      std::vector<std::vector<float>> want_x86(n), want_generic(n);
      for (int64_t t = 0; t < n; ++t) {
        std::vector<uint8_t> xq(static_cast<size_t>(ActRowBytes(layout, cols)) + 64);
        QuantizeActRow(layout, &x[t * cols], cols, xq.data());
        for (int64_t r = 0; r < rows; ++r) {
          want_x86[t].push_back(GgmlX86Dot(type, w->data() + r * w->row_bytes(), xq, cols));
          want_generic[t].push_back(GgmlGenericDot(type, w->data() + r * w->row_bytes(), xq, cols));
        }
      }
      for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
        if (!IsaAvailable(isa)) continue;
        for (int64_t batch : {int64_t{1}, n}) {  // decode and prefill tiles
          std::vector<float> y(static_cast<size_t>(batch * rows));
          MultiplyWithIsa(*w, isa, x.data(), batch, y.data(), 1);
          for (int64_t t = 0; t < batch; ++t) {
            const auto& want = isa == Isa::kScalar ? want_generic[t] : want_x86[t];
            int bad = 0;
            for (int64_t r = 0; r < rows; ++r) bad += y[t * rows + r] != want[r];
            EXPECT_EQ(bad, 0) << ggml_type_name(type) << " cols " << cols << " isa " << IsaName(isa) << " batch "
                              << batch << " t " << t;
          }
        }
      }
    }
  }
}

// Hand-checked values. A Q8_0 row whose activations quantize to themselves
// (amax 127, so d = 1): lane 0 = 127 * 127 + 3, seven lanes of 4. And the
// horizontal-sum tree on lanes {2^24, 1 x 7}: hsum_float_8 gives
// (fl(2^24 + 1) + (1 + 1)) + ((1 + 1) + (1 + 1)) = (2^24 + 2) + 4 = 2^24 + 6
// (fl(2^24 + 1) = 2^24, ties to even), a left-to-right sum stays at 2^24.
TEST(GgmlOrder, Q8_0HorizontalSumOrder) {
  // Weight block: d = 1, q = 127 at value 0..3 of lane 0; 1 elsewhere.
  std::vector<uint8_t> w(34 * 2, 0);  // two blocks (64 columns): second all zero
  const uint16_t one = Fp32ToFp16(1.0f);
  std::memcpy(w.data(), &one, 2);
  std::memcpy(w.data() + 34, &one, 2);
  std::vector<float> x(64, 0.0f);
  // Activations quantize to q = 127 * x / amax with d = amax / 127; choose
  // amax = 127 so d = 1 and q = x.
  for (int j = 0; j < 32; ++j) x[j] = 1.0f;
  x[0] = 127.0f;
  for (int j = 0; j < 32; ++j) w[2 + j] = 1;
  w[2] = 127;
  auto m = QuantMatrix::Create(GgmlType::Q8_0, 1, 64, w.data(), w.size());
  ASSERT_TRUE(m.ok());
  std::vector<uint8_t> xq(static_cast<size_t>(ActRowBytes(ActLayout::kQ8x2, 64)));
  QuantizeActRow(ActLayout::kQ8x2, x.data(), 64, xq.data());
  const float want = GgmlX86Dot(GgmlType::Q8_0, w.data(), xq, 64);
  EXPECT_EQ(want, 16132.0f + 7 * 4.0f);
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    if (!IsaAvailable(isa)) continue;
    float y = 0;
    MultiplyWithIsa(*m, isa, x.data(), 1, &y, 1);
    EXPECT_EQ(y, want) << IsaName(isa);
  }
  // The tree itself: lanes {2^24, 1 x 7}.
  const float lanes[8] = {16777216.0f, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(Hsum8(lanes), 16777222.0f);
  float seq = 0;
  for (float v : lanes) seq += v;
  EXPECT_EQ(seq, 16777216.0f);
}

}  // namespace
}  // namespace troupe
