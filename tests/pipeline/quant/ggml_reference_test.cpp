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
#include "pipeline/format/gguf_file.h"
#include "pipeline/quant/activations.h"
#include "pipeline/quant/half.h"
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

// dequantize() (embedding rows, DequantizeRow) against ggml's dequantize_row_*.
TEST_P(GgmlReferenceTest, DequantizeBitExactWithGgml) {
  const GgmlType type = GetParam();
  const int64_t n = 16 * 256;
  const std::vector<uint8_t> w = RandomMatrix(type, 1, n, 3);
  std::vector<float> want(n), got(n);
  ASSERT_TRUE(Ref().DequantizeRow(type, w.data(), want.data(), n)) << ggml_type_name(type);
  dequantize(type, w.data(), got.data(), n);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(Bits(want[i]), Bits(got[i])) << ggml_type_name(type) << " value " << i;
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

// Our activation quantization against ggml's own quantize_row_q8_0 / _q8_1
// / _q8_K: the same int8 values and the same scales, bit for bit.
TEST(GgmlReferenceActivations, QuantizeRowsMatchGgml) {
  static GgmlReference ref;
  if (!ref.available()) GTEST_SKIP() << ref.why();
  const int64_t cols = 4096;
  std::vector<float> x = RandomActivations(8, cols, 5);
  for (int64_t c = 0; c < 32; ++c) x[c] = 0.0f;                               // an all-zero block
  for (int64_t c = 32; c < 64; ++c) x[c] = 1e-30f * static_cast<float>(c);    // a tiny one
  for (int64_t c = 64; c < 96; ++c) x[c] = static_cast<float>(c % 8) - 3.5f;  // halves: ties
  for (int64_t c = 256; c < 512; ++c) x[c] = c == 300 ? -7.0f : 0.5f;         // Q8_K's max negative
  int64_t blocks = 0;
  for (int64_t t = 0; t < 8; ++t) {
    const float* row = x.data() + t * cols;
    std::vector<uint8_t> ours(static_cast<size_t>(ActRowBytes(ActLayout::kQ8x2, cols)));
    QuantizeActRow(ActLayout::kQ8x2, row, cols, ours.data());
    std::vector<uint8_t> g0(static_cast<size_t>(cols / 32 * 34)), g1(static_cast<size_t>(cols / 32 * 36));
    ref.QuantizeRow(GgmlReference::Q8::k0, row, cols, g0.data());
    ref.QuantizeRow(GgmlReference::Q8::k1, row, cols, g1.data());
    for (int64_t b = 0; b < cols / 32; ++b, ++blocks) {
      const auto* g = reinterpret_cast<const ActGroupQ8x2*>(ours.data()) + b / 2;
      const int k = static_cast<int>(b % 2);
      uint16_t d0, d1, s1;
      std::memcpy(&d0, g0.data() + b * 34, 2);
      std::memcpy(&d1, g1.data() + b * 36, 2);
      std::memcpy(&s1, g1.data() + b * 36 + 2, 2);
      ASSERT_EQ(0, std::memcmp(g->q + 32 * k, g0.data() + b * 34 + 2, 32))
          << "Q8_0 values, row " << t << " block " << b;
      ASSERT_EQ(0, std::memcmp(g->q + 32 * k, g1.data() + b * 36 + 4, 32))
          << "Q8_1 values, row " << t << " block " << b;
      ASSERT_EQ(Bits(g->d[k]), Bits(Fp16ToFp32(d0))) << "Q8_0 d, row " << t << " block " << b;
      ASSERT_EQ(Bits(g->d[k]), Bits(Fp16ToFp32(d1))) << "Q8_1 d, row " << t << " block " << b;
      ASSERT_EQ(Bits(g->s[k]), Bits(Fp16ToFp32(s1))) << "Q8_1 s, row " << t << " block " << b;
    }
    std::vector<uint8_t> ok(static_cast<size_t>(ActRowBytes(ActLayout::kQ8K, cols)));
    QuantizeActRow(ActLayout::kQ8K, row, cols, ok.data());
    std::vector<uint8_t> gk(static_cast<size_t>(cols / 256 * 292));
    ref.QuantizeRow(GgmlReference::Q8::kK, row, cols, gk.data());
    for (int64_t b = 0; b < cols / 256; ++b, ++blocks) {
      const auto* blk = reinterpret_cast<const ActBlockQ8K*>(ok.data()) + b;
      const uint8_t* gb = gk.data() + b * 292;
      float d;
      std::memcpy(&d, gb, 4);
      ASSERT_EQ(Bits(blk->d), Bits(d)) << "Q8_K d, row " << t << " block " << b;
      ASSERT_EQ(0, std::memcmp(blk->q, gb + 4, 256)) << "Q8_K values, row " << t << " block " << b;
      ASSERT_EQ(0, std::memcmp(blk->bsum16, gb + 260, 32)) << "Q8_K sums, row " << t << " block " << b;
    }
  }
  std::printf("[ info ] activation blocks compared with ggml: %lld\n", static_cast<long long>(blocks));
}

// Every 2-D quantized weight of the real models (the default SmolLM2 Q4_1 and
// Gemma 3 270M Q4_K_M: Q5_0, Q8_0, Q4_K repacked, Q6_K), one activation row
// each, against llama.cpp. Skips a model that is not downloaded.
TEST(GgmlReferenceModels, EveryQuantizedWeightBitExact) {
  static GgmlReference ref;
  if (!ref.available()) GTEST_SKIP() << ref.why();
  const std::string models[] = {TROUPE_DEFAULT_MODEL,
                                std::string(TROUPE_SOURCE_DIR) + "/.deps/model-gemma3/gemma-3-270m-q4_k_m.gguf"};
  int files = 0;
  for (const std::string& path : models) {
    auto file = GgufFile::Open(path);
    if (!file.ok()) continue;
    ++files;
    int tensors = 0, repacked = 0;
    for (const TensorView& tv : file.value()->tensors()) {
      if (tv.shape.size() != 2 || ggml_block_values(tv.type) == 1) continue;
      auto m = QuantMatrix::FromView(tv);
      ASSERT_TRUE(m.ok()) << tv.name;
      const std::vector<uint8_t> w(tv.data, tv.data + tv.n_bytes);
      const std::vector<float> x = RandomActivations(1, tv.cols(), static_cast<uint32_t>(tensors));
      const bool repack = GgmlReference::Repacks(tv.type, tv.rows()) && ref.has_repack();
      std::vector<float> want(static_cast<size_t>(tv.rows())), got(want.size());
      ASSERT_TRUE(ref.MatMul(tv.type, tv.rows(), tv.cols(), w, x.data(), 1, repack, want.data(), 2)) << ref.why();
      m.value().Multiply(x.data(), 1, got.data(), 2);
      int64_t differ = 0;
      for (size_t r = 0; r < want.size(); ++r) differ += Bits(want[r]) != Bits(got[r]) ? 1 : 0;
      EXPECT_EQ(differ, 0) << path << ": " << tv.name << " (" << ggml_type_name(tv.type) << " [" << tv.rows() << ", "
                           << tv.cols() << "]" << (repack ? ", repacked" : "") << ")";
      ++tensors;
      repacked += repack ? 1 : 0;
    }
    std::printf("[ info ] %s: %d quantized weights compared (%d repacked by llama.cpp)\n", path.c_str(), tensors,
                repacked);
  }
  if (files == 0)
    GTEST_SKIP() << "neither model file is here: scripts/setup.sh installs SmolLM2, --with-test-deps Gemma 3";
}

INSTANTIATE_TEST_SUITE_P(AllQuantTypes, GgmlReferenceTest,
                         ::testing::Values(GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q8_0,
                                           GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K),
                         [](const ::testing::TestParamInfo<GgmlType>& info) {
                           return std::string(ggml_type_name(info.param));
                         });

}  // namespace
}  // namespace troupe
