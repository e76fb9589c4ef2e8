// QuantMatrix::Multiply against llama.cpp's own CPU matmul (GgmlReference:
// the ggml libraries llama-cpp-python built, driven through dlopen), bit for
// bit, for one activation row (the decode path) and for every weight type we
// load, on shapes where llama.cpp repacks the weight (Q4_0 / Q4_K with
// rows % 8 == 0: gemv on the interleaved q*_8x8 blocks) and where it does not
// (vec_dot). Several activation rows: each of our rows must equal our one-row
// result (batch invariance); llama.cpp's own batched rows are only reported,
// since its prefill path (gemm, llamafile sgemm) rounds differently.
// Skips when llama-cpp-python is not installed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ggml_reference.h"
#include "pipeline/quant/kernels.h"
#include "pipeline/quant/qmatrix.h"
#include "quant_test_util.h"

namespace troupe {
namespace {

using testing_util::GgmlReference;
using testing_util::RandomActivations;
using testing_util::RandomMatrix;

struct Shape {
  int64_t rows, cols;
};

class GgmlReferenceTest : public ::testing::TestWithParam<GgmlType> {
 protected:
  static GgmlReference& Ref() {
    static GgmlReference ref;
    return ref;
  }
  void SetUp() override {
    if (!Ref().available()) GTEST_SKIP() << Ref().why();
  }
};

std::vector<Shape> ShapesFor(GgmlType type) {
  const int64_t bv = ggml_block_values(type);
  if (bv == 256) {  // K-quants: rows % 8 == 0 (repacked for Q4_K) and not; Gemma 3 270M's shapes
    return {{8, 256}, {16, 512}, {640, 1024}, {64, 2048}, {12, 256}, {20, 768}, {7, 1280}, {1, 256}};
  }
  return {{8, 32}, {16, 64}, {24, 96}, {1024, 640}, {64, 2048}, {12, 160}, {20, 640}, {9, 2048}, {1, 32}};
}

uint32_t Bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

std::string Hex(float v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", Bits(v));
  return buf;
}

TEST_P(GgmlReferenceTest, OneTokenBitExactWithLlamaCpp) {
  const GgmlType type = GetParam();
  int shapes = 0, repacked = 0, compared = 0;
  uint32_t seed = 1;
  for (const Shape& s : ShapesFor(type)) {
    for (int trial = 0; trial < 3; ++trial, ++seed) {
      const std::vector<uint8_t> w = RandomMatrix(type, s.rows, s.cols, seed);
      const std::vector<float> x = RandomActivations(1, s.cols, seed + 1000);
      const bool repack = GgmlReference::Repacks(type, s.rows) && Ref().has_repack();
      std::vector<float> want(static_cast<size_t>(s.rows)), got(static_cast<size_t>(s.rows));
      ASSERT_TRUE(Ref().MatMul(type, s.rows, s.cols, w, x.data(), 1, repack, want.data())) << Ref().why();
      auto m = QuantMatrix::Create(type, s.rows, s.cols, w.data(), w.size());
      ASSERT_TRUE(m.ok()) << m.status().ToString();
      for (Isa isa : {Isa::kAvx512, Isa::kAvx2}) {  // what Multiply runs (BestIsa) and the AVX2-only path
        if (!IsaAvailable(isa)) continue;
        MultiplyWithIsa(m.value(), isa, x.data(), 1, got.data(), 2);
        int64_t differ = 0, first = -1;
        for (int64_t r = 0; r < s.rows; ++r) {
          if (Bits(want[r]) != Bits(got[r]) && differ++ == 0) first = r;
        }
        EXPECT_EQ(differ, 0) << ggml_type_name(type) << " [" << s.rows << ", " << s.cols << "] "
                             << (repack ? "repacked" : "vec_dot") << " " << IsaName(isa) << " seed " << seed << ": "
                             << differ << " rows differ; first row " << first << ": llama.cpp " << want[first] << " ("
                             << Hex(want[first]) << "), ours " << got[first] << " (" << Hex(got[first]) << ")";
        ++compared;
      }
      ++shapes;
      repacked += repack ? 1 : 0;
    }
  }
  RecordProperty("matrices", shapes);
  RecordProperty("products_compared", compared);
  std::printf("[ info ] %s: %d matrices (%d repacked by llama.cpp), %d products compared bit for bit\n",
              ggml_type_name(type), shapes, repacked, compared);
  RecordProperty("repacked", repacked);
}

// Rows of a batch: ours equal our one-row results; llama.cpp's batched rows
// against its one-row results are counted, not asserted.
TEST_P(GgmlReferenceTest, BatchRowsEqualOneTokenRows) {
  const GgmlType type = GetParam();
  const int64_t bv = ggml_block_values(type);
  const Shape shapes[] = {{16, 4 * bv}, {12, 8 * bv}};
  int64_t ggml_batch_differs = 0, ggml_values = 0;
  for (const Shape& s : shapes) {
    for (int64_t n : {2, 4, 5, 9}) {
      const std::vector<uint8_t> w = RandomMatrix(type, s.rows, s.cols, 77 + static_cast<uint32_t>(n));
      const std::vector<float> x = RandomActivations(n, s.cols, 99 + static_cast<uint32_t>(n));
      auto m = QuantMatrix::Create(type, s.rows, s.cols, w.data(), w.size());
      ASSERT_TRUE(m.ok());
      std::vector<float> batch(static_cast<size_t>(n * s.rows)), one(static_cast<size_t>(s.rows));
      std::vector<float> gbatch(batch.size()), gone(one.size());
      m.value().Multiply(x.data(), n, batch.data(), 2);
      const bool repack = GgmlReference::Repacks(type, s.rows) && Ref().has_repack();
      ASSERT_TRUE(Ref().MatMul(type, s.rows, s.cols, w, x.data(), n, repack, gbatch.data()));
      for (int64_t t = 0; t < n; ++t) {
        m.value().Multiply(x.data() + t * s.cols, 1, one.data(), 1);
        for (int64_t r = 0; r < s.rows; ++r) {
          ASSERT_EQ(Bits(one[r]), Bits(batch[t * s.rows + r])) << ggml_type_name(type) << " row " << t << " of " << n;
        }
        ASSERT_TRUE(Ref().MatMul(type, s.rows, s.cols, w, x.data() + t * s.cols, 1, repack, gone.data()));
        for (int64_t r = 0; r < s.rows; ++r) {
          ggml_batch_differs += Bits(gone[r]) != Bits(gbatch[t * s.rows + r]) ? 1 : 0;
          ++ggml_values;
        }
      }
    }
  }
  RecordProperty("llama_cpp_batch_rows_differing_from_its_one_row", static_cast<int>(ggml_batch_differs));
  std::printf("[ info ] %s: llama.cpp batched vs one-row outputs differing: %lld of %lld\n", ggml_type_name(type),
              static_cast<long long>(ggml_batch_differs), static_cast<long long>(ggml_values));
}

INSTANTIATE_TEST_SUITE_P(AllQuantTypes, GgmlReferenceTest,
                         ::testing::Values(GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q8_0,
                                           GgmlType::Q4_K, GgmlType::Q6_K),
                         [](const ::testing::TestParamInfo<GgmlType>& info) {
                           return std::string(ggml_type_name(info.param));
                         });

}  // namespace
}  // namespace troupe
