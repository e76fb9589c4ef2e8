// Batch invariance: a row's product is bit-identical whatever else is in the
// batch (n = 1 or n = 17, any position in the batch), whatever the thread
// count, and whether the matrix is multiplied alone or in a shared-input
// MultiplyShared call. The distributed ring depends on this: a shard batches
// the steps of many sessions, a replayed session is re-run as one prefill,
// and both must reproduce the single-process answer token for token.
//
// Checked for every weight type, on every instruction set this CPU runs
// (results may differ between instruction sets, never within one), with
// shapes that leave partial tiles, partial SIMD groups and leftover rows.
#include <gtest/gtest.h>

#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "pipeline/format/model_source.h"
#include "pipeline/quant/kernels.h"
#include "pipeline/quant/qmatrix.h"
#include "quant_test_util.h"

namespace troupe {
namespace {

using testing_util::RandomActivations;
using testing_util::RandomMatrix;

// 13 and 16: row lanes, part and all of a register's 16
// (kernels_avx512_lanes.cpp); 17 and 35: row pairs with an odd one out, in
// one chunk of pairs and over two (kernels_avx512_pairs.cpp); 17 takes one
// weight row at a time where its pairs fit L1 (576 columns) and four at a
// time where they do not (1536).
constexpr int64_t kBatches[] = {1, 2, 3, 4, 5, 13, 16, 17, 35};
constexpr int64_t kMaxOffset = 2;  // batches also start at rows 1 and 2 of x
constexpr int kThreads[] = {1, 2, 3};
constexpr int64_t kRows = kBatches[std::size(kBatches) - 1] + kMaxOffset;  // activation rows in x

std::vector<Isa> Isas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (IsaAvailable(isa)) isas.push_back(isa);
  }
  return isas;
}

// x: [kRows, cols] with an outlier, like the massive activations of real models.
std::vector<float> Activations(int64_t cols, uint32_t seed) {
  std::vector<float> x = RandomActivations(kRows, cols, seed);
  x[5] = 250.0f;
  return x;
}

// y[t] = the product of row t of x alone (n = 1, one thread).
std::vector<std::vector<float>> RowsAlone(const QuantMatrix& w, Isa isa, const std::vector<float>& x) {
  std::vector<std::vector<float>> y(kRows, std::vector<float>(w.rows()));
  for (int64_t t = 0; t < kRows; ++t) {
    MultiplyWithIsa(w, isa, x.data() + t * w.cols(), 1, y[t].data(), 1);
  }
  return y;
}

void ExpectBatchInvariant(const QuantMatrix& w, const std::string& what, const std::vector<Isa>& isas) {
  const std::vector<float> x = Activations(w.cols(), 7);
  for (Isa isa : isas) {
    const auto alone = RowsAlone(w, isa, x);
    for (int64_t n : kBatches) {
      for (int64_t offset = 0; offset <= kMaxOffset; ++offset) {
        for (int threads : kThreads) {
          std::vector<float> y(n * w.rows());
          MultiplyWithIsa(w, isa, x.data() + offset * w.cols(), n, y.data(), threads);
          for (int64_t t = 0; t < n; ++t) {
            ASSERT_EQ(0, std::memcmp(alone[offset + t].data(), y.data() + t * w.rows(), w.rows() * sizeof(float)))
                << what << " (" << IsaName(isa) << "): row " << offset + t << " at position " << t << " of a batch of "
                << n << " (" << threads << " threads) differs from the row alone";
          }
        }
      }
    }
  }
}

struct Spec {
  GgmlType type;
  int64_t cols;
  int64_t rows;
};

// 259 rows: not a multiple of 4 (tiles) or 16 (thread split points), and
// large enough that 2 and 3 threads are used even for n = 1. 264 = 8 * 33:
// Q4_0 and Q4_K then take their repacked-order kernels (GgmlRepacks).
constexpr int64_t kMatrixRows = 259;
constexpr int64_t kRepackedRows = 264;

TEST(BatchInvariance, EveryWeightTypeGivesBitIdenticalRows) {
  // Columns leave partial groups: Q4 160 = 5 blocks (one past a group of 4),
  // Q8_0 544 = 17 blocks (odd), float 37 (a partial vector).
  const Spec specs[] = {
      {GgmlType::F32, 37, kMatrixRows},     {GgmlType::F32, 576, kMatrixRows},     {GgmlType::F16, 576, kMatrixRows},
      {GgmlType::BF16, 576, kMatrixRows},   {GgmlType::Q4_0, 160, kMatrixRows},    {GgmlType::Q4_0, 576, kRepackedRows},
      {GgmlType::Q4_1, 160, kMatrixRows},   {GgmlType::Q4_1, 1536, kMatrixRows},   {GgmlType::Q5_0, 160, kMatrixRows},
      {GgmlType::Q5_0, 640, kRepackedRows}, {GgmlType::Q8_0, 544, kMatrixRows},    {GgmlType::Q8_0, 576, kMatrixRows},
      {GgmlType::Q4_K, 512, kMatrixRows},   {GgmlType::Q4_K, 1024, kRepackedRows}, {GgmlType::Q5_K, 512, kMatrixRows},
      {GgmlType::Q6_K, 768, kMatrixRows},
  };
  for (const Spec& s : specs) {
    const std::vector<uint8_t> bytes = RandomMatrix(s.type, s.rows, s.cols, 11);
    Result<QuantMatrix> w = QuantMatrix::Create(s.type, s.rows, s.cols, bytes.data(), bytes.size());
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ExpectBatchInvariant(
        *w, std::string(ggml_type_name(s.type)) + " [" + std::to_string(s.rows) + ", " + std::to_string(s.cols) + "]",
        Isas());
  }
}

// Each matrix of a shared-input call gives, row for row, what it gives alone
// for that activation row alone.
TEST(BatchInvariance, SharedInputCallsGiveBitIdenticalRows) {
  struct Set {
    int64_t cols;
    std::vector<GgmlType> types;
  };
  const Set sets[] = {
      {576, {GgmlType::Q4_1, GgmlType::Q8_0, GgmlType::F16, GgmlType::Q4_0, GgmlType::BF16, GgmlType::Q5_0}},
      {512, {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q4_1, GgmlType::F32, GgmlType::Q4_K, GgmlType::Q5_K}},
  };
  for (const Set& set : sets) {
    std::vector<std::vector<uint8_t>> bytes;
    std::vector<QuantMatrix> mats;
    for (size_t i = 0; i < set.types.size(); ++i) {
      const int64_t rows = 64 + 37 * static_cast<int64_t>(i);
      bytes.push_back(RandomMatrix(set.types[i], rows, set.cols, 20 + static_cast<uint32_t>(i)));
      mats.push_back(
          QuantMatrix::Create(set.types[i], rows, set.cols, bytes.back().data(), bytes.back().size()).value());
    }
    const std::vector<float> x = Activations(set.cols, 9);
    for (Isa isa : Isas()) {
      std::vector<std::vector<std::vector<float>>> alone;
      alone.reserve(mats.size());
      for (const QuantMatrix& m : mats) alone.push_back(RowsAlone(m, isa, x));
      for (int64_t n : kBatches) {
        for (int threads : kThreads) {
          std::vector<std::vector<float>> ys;
          std::vector<MatmulOutput> outs;
          ys.reserve(mats.size());
          for (const QuantMatrix& m : mats) ys.emplace_back(n * m.rows(), -1.0f);
          for (size_t i = 0; i < mats.size(); ++i) outs.push_back({&mats[i], ys[i].data()});
          const int64_t offset = n % 3;
          MultiplySharedWithIsa(isa, outs.data(), static_cast<int>(outs.size()), x.data() + offset * set.cols, n,
                                threads);
          for (size_t i = 0; i < mats.size(); ++i) {
            for (int64_t t = 0; t < n; ++t) {
              ASSERT_EQ(0, std::memcmp(alone[i][offset + t].data(), ys[i].data() + t * mats[i].rows(),
                                       mats[i].rows() * sizeof(float)))
                  << ggml_type_name(mats[i].type()) << " (matrix " << i << ", " << IsaName(isa) << "): row "
                  << offset + t << " of a shared batch of " << n << " (" << threads
                  << " threads) differs from the row alone";
            }
          }
        }
      }
    }
  }
}

// The matrices of the default model on the instruction set Multiply uses.
TEST(BatchInvariance, RealModelMatricesGiveBitIdenticalRows) {
  auto src = ModelSource::Open(TROUPE_DEFAULT_MODEL);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  for (const char* name : {"blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.3.ffn_down.weight",
                           "blk.3.ffn_gate.weight", "token_embd.weight"}) {
    auto w = QuantMatrix::FromView(*(*src)->Find(name));
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ExpectBatchInvariant(w.value(), name, {BestIsa()});
  }
}

}  // namespace
}  // namespace troupe
