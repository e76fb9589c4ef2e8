// QuantMatrix::Multiply against dequantize + a naive fp64 dot, for every type,
// several shapes, activation row counts and thread counts, on every
// instruction set this CPU runs.
//
// The bound tested, per output y[t, r] with weights w = W[r, :] and
// activations x = x[t, :] (b(j) = the activation block holding column j):
//   |y - ref| <= sum_j |w_j| * d_b(j) / 2                    (8-bit activations)
//              + sum_j (|w_j| + |m_j|) * 127 * |h_b(j) - d_b(j)|  (fp16 scales)
//              + sum_b |m_b| * (2^-11 * S_b + 2^-25)          (Q4_1: fp16 s)
//              + cols * 2^-24 * sum_j (|w_j| + 4 wmax_j) * (|x_j| + d_b(j))
// where d_b = max|x| over the block / 127 (blocks of 32 values for Q4_0,
// Q4_1, Q5_0, Q8_0; 256 for the K-quants; 0 for float weights), h_b =
// fp16(d_b) the scale the 32-value blocks actually use (h_b = d_b for the
// K-quants, whose ggml Q8_K scale stays fp32), m_j the Q4_1 min of j's
// weight block (0 for other types; |d_w q_j| <= |w_j| + |m_j|), S_b = sum
// over the block of (|x_j| + d_b / 2) (bounds |d_b sum q|, which the fp16 s
// rounds), and wmax_j
// the largest |w| in j's weight block (it bounds the size of the scale/min
// partial sums that fp32 adds up). The first term is the worst case of
// rounding each activation to the nearest multiple of d_b; the next two are
// ggml's fp16 rounding of the activation scales (activations.h); the last is
// a loose fp32 accumulation bound. SIMD results must also match the scalar
// kernel to within the fp32 term alone, since both see the same quantized
// activations. A statistical check adds that the RMS error is within 2x of
// what uniform rounding of the activations predicts (the fp16 scale terms
// add about 1% to that variance).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/quant/activations.h"
#include "pipeline/quant/half.h"
#include "pipeline/quant/kernels.h"
#include "pipeline/quant/qmatrix.h"
#include "quant_test_util.h"

namespace troupe {
namespace {

using testing_util::RandomActivations;
using testing_util::RandomMatrix;

struct Case {
  GgmlType type;
  int64_t cols;
};

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  return std::string(ggml_type_name(info.param.type)) + "_" + std::to_string(info.param.cols);
}

int64_t ActBlock(GgmlType type) {
  switch (ActLayoutFor(type)) {
    case ActLayout::kQ8x2: return 32;
    case ActLayout::kQ8K:
    case ActLayout::kQ8KPaired: return 256;
    case ActLayout::kNone: return 0;
  }
  return 0;
}

// Reference outputs and the per-output tolerances of the header comment.
struct Reference {
  std::vector<double> y;      // [n, rows]
  std::vector<double> quant;  // activation-quantization term
  std::vector<double> fp;     // fp32 accumulation term
  std::vector<double> var;    // expected error variance: sum_j w_j^2 d_b(j)^2 / 12
};

Reference ComputeReference(GgmlType type, const std::vector<uint8_t>& wq, const std::vector<float>& w, int64_t rows,
                           int64_t cols, const std::vector<float>& x, int64_t n) {
  const int64_t ab = ActBlock(type);
  const int64_t wb = ggml_block_values(type);
  std::vector<double> dx(x.size(), 0.0), hx(x.size(), 0.0);
  if (ab > 0) {
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t b = 0; b < cols; b += ab) {
        float amax = 0.0f;
        for (int64_t j = b; j < b + ab; ++j) amax = std::max(amax, std::fabs(x[t * cols + j]));
        const float d = amax / 127.0f;
        const float h = ab == 32 ? Fp16ToFp32(Fp32ToFp16(d)) : d;
        for (int64_t j = b; j < b + ab; ++j) {
          dx[t * cols + j] = amax / 127.0;
          hx[t * cols + j] = h;
        }
      }
    }
  }
  std::vector<double> wmax(w.size(), 0.0), mins(w.size(), 0.0);
  if (wb > 1) {
    for (int64_t k = 0; k < rows * cols; k += wb) {
      float m = 0.0f;
      for (int64_t j = k; j < k + wb; ++j) m = std::max(m, std::fabs(w[j]));
      for (int64_t j = k; j < k + wb; ++j) wmax[j] = m;
    }
  }
  if (type == GgmlType::Q4_1) {  // block = fp16 d, fp16 m, 16 bytes
    for (int64_t k = 0; k < rows * cols / 32; ++k) {
      uint16_t m;
      std::memcpy(&m, wq.data() + 20 * k + 2, sizeof m);
      for (int64_t j = 32 * k; j < 32 * k + 32; ++j) mins[j] = std::fabs(Fp16ToFp32(m));
    }
  }
  Reference ref;
  ref.y.resize(n * rows);
  ref.quant.resize(n * rows);
  ref.fp.resize(n * rows);
  ref.var.resize(n * rows);
  const double eps = std::ldexp(1.0, -24);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t r = 0; r < rows; ++r) {
      double y = 0, q = 0, mag = 0, var = 0, block_s = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t wi = r * cols + c, xi = t * cols + c;
        const double wv = w[wi], xv = x[xi], d = dx[xi];
        y += wv * xv;
        q += std::fabs(wv) * d / 2 + (std::fabs(wv) + mins[wi]) * 127 * std::fabs(hx[xi] - d);
        block_s += std::fabs(xv) + d / 2;
        if (c % 32 == 31) {  // the fp16 s of a Q4_1 block
          q += mins[wi] * (std::ldexp(block_s, -11) + std::ldexp(1.0, -25));
          block_s = 0;
        }
        var += wv * wv * d * d / 12;
        mag += (std::fabs(wv) + 4 * wmax[wi]) * (std::fabs(xv) + d);
      }
      ref.y[t * rows + r] = y;
      ref.quant[t * rows + r] = q * (1 + 1e-6);
      ref.fp[t * rows + r] = cols * eps * mag + 1e-30;
      ref.var[t * rows + r] = var;
    }
  }
  return ref;
}

class MultiplyTest : public ::testing::TestWithParam<Case> {};

TEST_P(MultiplyTest, MatchesFp32ReferenceOnEveryIsa) {
  const GgmlType type = GetParam().type;
  const int64_t rows = 259, cols = GetParam().cols;  // 259: odd, not a tile multiple
  const std::vector<uint8_t> wq = RandomMatrix(type, rows, cols, 1234 + cols);
  Result<QuantMatrix> m = QuantMatrix::Create(type, rows, cols, wq.data(), wq.size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::vector<float> w(rows * cols);
  dequantize(type, wq.data(), w.data(), rows * cols);

  for (int64_t n : {1, 3, 17}) {
    const std::vector<float> x = RandomActivations(n, cols, 99 + n);
    const Reference ref = ComputeReference(type, wq, w, rows, cols, x, n);
    std::vector<float> y_scalar(n * rows);
    MultiplyWithIsa(*m, Isa::kScalar, x.data(), n, y_scalar.data(), 1);
    // Typical error is far below the worst case: rounding errors uniform in
    // [-d/2, d/2] give variance sum_j w_j^2 d^2 / 12. The observed RMS error
    // is ~1x that's square root; it is noisy for short rows (all outputs share
    // one draw of activation errors), so the limit is 2x.
    if (ActBlock(type) > 0) {
      double err2 = 0, var = 0;
      for (int64_t k = 0; k < n * rows; ++k) {
        err2 += (y_scalar[k] - ref.y[k]) * (y_scalar[k] - ref.y[k]);
        var += ref.var[k];
      }
      EXPECT_LT(std::sqrt(err2 / var), 2.0) << "n=" << n;
    }
    for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
      if (!IsaAvailable(isa)) continue;
      for (int threads : {1, 2}) {
        std::vector<float> y(n * rows, std::numeric_limits<float>::quiet_NaN());
        MultiplyWithIsa(*m, isa, x.data(), n, y.data(), threads);
        for (int64_t k = 0; k < n * rows; ++k) {
          const double tol = ref.quant[k] + ref.fp[k];
          ASSERT_LE(std::fabs(y[k] - ref.y[k]), tol)
              << IsaName(isa) << " threads=" << threads << " n=" << n << " t=" << k / rows << " r=" << k % rows
              << " y=" << y[k] << " ref=" << ref.y[k];
          ASSERT_LE(std::fabs(y[k] - y_scalar[k]), 2 * ref.fp[k])
              << IsaName(isa) << " vs scalar, threads=" << threads << " n=" << n << " t=" << k / rows
              << " r=" << k % rows;
        }
      }
    }
  }
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q8_0,
                        GgmlType::Q5_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    const bool k_quant = ggml_block_values(type) == 256;
    for (int64_t cols : {256, 576, 1536, 4096}) {
      if (k_quant && cols % 256 != 0) continue;
      cases.push_back({type, cols});
    }
  }
  // Block counts that leave partial SIMD groups (1 and 3 blocks past a group
  // of 4; an odd number of Q8_0 blocks) and float widths off the vector size.
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q8_0}) {
    cases.push_back({type, 160});
    cases.push_back({type, 224});
  }
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) cases.push_back({type, 37});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MultiplyTest, ::testing::ValuesIn(AllCases()), CaseName);

TEST(MultiplyTest, DefaultThreadsAndConcurrentCallers) {
  const int64_t rows = 1536, cols = 576, n = 2;
  const std::vector<uint8_t> wq = RandomMatrix(GgmlType::Q4_1, rows, cols, 5);
  Result<QuantMatrix> m = QuantMatrix::Create(GgmlType::Q4_1, rows, cols, wq.data(), wq.size());
  ASSERT_TRUE(m.ok());
  const std::vector<float> x = RandomActivations(n, cols, 6);
  std::vector<float> expected(n * rows);
  m->Multiply(x.data(), n, expected.data(), 1);
  std::vector<float> y0(n * rows);
  m->Multiply(x.data(), n, y0.data());  // omp default thread count
  EXPECT_EQ(y0, expected);
  std::vector<std::vector<float>> out(4, std::vector<float>(n * rows));
  std::vector<std::thread> callers;
  for (int i = 0; i < 4; ++i) {
    callers.emplace_back([&, i] {
      for (int k = 0; k < 20; ++k) m->Multiply(x.data(), n, out[i].data(), 1 + i % 2);
    });
  }
  for (auto& c : callers) c.join();
  for (const auto& y : out) EXPECT_EQ(y, expected);
}

// MultiplyShared gives exactly what separate Multiply calls give, whatever
// the thread count and mix of formats (row results never depend on how rows
// are split; batch_invariance_test.cpp checks that row by row).
TEST(MultiplyTest, SharedInputMatchesSeparateCalls) {
  const int64_t cols = 576;
  struct Spec {
    GgmlType type;
    int64_t rows;
  };
  const Spec specs[] = {
      {GgmlType::Q4_1, 1536}, {GgmlType::Q8_0, 192}, {GgmlType::F16, 100}, {GgmlType::Q4_0, 37}, {GgmlType::Q4_1, 192}};
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<QuantMatrix> mats;
  for (const Spec& s : specs) {
    bytes.push_back(RandomMatrix(s.type, s.rows, cols, 40 + static_cast<uint32_t>(s.rows)));
    mats.push_back(QuantMatrix::Create(s.type, s.rows, cols, bytes.back().data(), bytes.back().size()).value());
  }
  for (int64_t n : {1, 5}) {
    const std::vector<float> x = RandomActivations(n, cols, 8);
    for (int threads : {1, 2, 3}) {
      std::vector<std::vector<float>> ys;
      std::vector<MatmulOutput> outs;
      for (const QuantMatrix& m : mats) ys.emplace_back(n * m.rows(), -1.0f);
      for (size_t i = 0; i < mats.size(); ++i) outs.push_back({&mats[i], ys[i].data()});
      MultiplyShared(outs.data(), static_cast<int>(outs.size()), x.data(), n, threads);
      for (size_t i = 0; i < mats.size(); ++i) {
        std::vector<float> expected(n * mats[i].rows());
        mats[i].Multiply(x.data(), n, expected.data(), 1);
        EXPECT_EQ(ys[i], expected) << "matrix " << i << " n=" << n << " threads=" << threads;
      }
    }
  }
}

}  // namespace
}  // namespace troupe
