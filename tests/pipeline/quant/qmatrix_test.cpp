// QuantMatrix construction: validation failures name the problem; rows are
// found where ggml puts them.

#include "pipeline/quant/qmatrix.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "quant_test_util.h"

namespace troupe {
namespace {

using testing_util::RandomMatrix;

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(QuantMatrixTest, CreateAcceptsWellFormedMatrices) {
  const std::vector<uint8_t> buf(2 * 20 * 18);
  Result<QuantMatrix> m = QuantMatrix::Create(GgmlType::Q4_1, 2, 576, buf.data(), buf.size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->rows(), 2);
  EXPECT_EQ(m->cols(), 576);
  EXPECT_EQ(m->row_bytes(), 360);
  EXPECT_EQ(m->type(), GgmlType::Q4_1);
  EXPECT_EQ(m->data(), buf.data());
}

TEST(QuantMatrixTest, CreateRejectsUnsupportedType) {
  const std::vector<uint8_t> buf(1024);
  Result<QuantMatrix> m = QuantMatrix::Create(static_cast<GgmlType>(10), 1, 256, buf.data(), buf.size());  // Q2_K
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kUnsupported);
  EXPECT_TRUE(Contains(m.status().message(), "type code 10")) << m.status().message();
}

TEST(QuantMatrixTest, CreateRejectsColsNotMultipleOfBlock) {
  const std::vector<uint8_t> buf(4096);
  Result<QuantMatrix> m = QuantMatrix::Create(GgmlType::Q4_K, 1, 576, buf.data(), buf.size());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(m.status().message(), "Q4_K")) << m.status().message();
  EXPECT_TRUE(Contains(m.status().message(), "not a multiple of the block size 256")) << m.status().message();
  EXPECT_FALSE(QuantMatrix::Create(GgmlType::Q8_0, 1, 48, buf.data(), 34).ok());
}

TEST(QuantMatrixTest, CreateRejectsWrongByteCount) {
  const std::vector<uint8_t> buf(1000);
  Result<QuantMatrix> m = QuantMatrix::Create(GgmlType::Q8_0, 3, 64, buf.data(), 203);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(m.status().message(), "expected 204 bytes (3 rows x 68 bytes), got 203"))
      << m.status().message();
}

TEST(QuantMatrixTest, CreateRejectsBadShapesAndOverflow) {
  const std::vector<uint8_t> buf(64);
  EXPECT_FALSE(QuantMatrix::Create(GgmlType::F32, 0, 16, buf.data(), 0).ok());
  EXPECT_FALSE(QuantMatrix::Create(GgmlType::F32, 4, -4, buf.data(), 64).ok());
  EXPECT_FALSE(QuantMatrix::Create(GgmlType::F32, 4, 4, nullptr, 64).ok());
  const int64_t huge = std::numeric_limits<int64_t>::max() / 2;
  Result<QuantMatrix> m = QuantMatrix::Create(GgmlType::F32, huge, 64, buf.data(), buf.size());
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(Contains(m.status().message(), "overflow")) << m.status().message();
  const int64_t max_cols = std::numeric_limits<int64_t>::max() / 256 * 256;
  m = QuantMatrix::Create(GgmlType::Q6_K, 2, max_cols, buf.data(), buf.size());
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(Contains(m.status().message(), "overflow")) << m.status().message();
}

TEST(QuantMatrixTest, FromViewChecksRankAndNamesTheTensor) {
  const std::vector<uint8_t> buf(4 * 8 * 2);
  TensorView v;
  v.name = "blk.0.attn_q.weight";
  v.type = GgmlType::F16;
  v.shape = {4, 8};
  v.data = buf.data();
  v.n_bytes = buf.size();
  Result<QuantMatrix> m = QuantMatrix::FromView(v);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->rows(), 4);
  EXPECT_EQ(m->cols(), 8);

  v.shape = {2, 2, 8};
  m = QuantMatrix::FromView(v);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(Contains(m.status().message(), "blk.0.attn_q.weight"));
  EXPECT_TRUE(Contains(m.status().message(), "2-D"));

  v.shape = {4, 8};
  v.n_bytes = 63;
  m = QuantMatrix::FromView(v);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(Contains(m.status().message(), "blk.0.attn_q.weight"));
  EXPECT_TRUE(Contains(m.status().message(), "expected 64 bytes"));
}

TEST(QuantMatrixTest, DequantizeRowReadsTheRightRow) {
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q8_0,
                        GgmlType::Q5_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    const int64_t rows = 5, cols = 512;
    const std::vector<uint8_t> w = RandomMatrix(type, rows, cols, 7);
    Result<QuantMatrix> m = QuantMatrix::Create(type, rows, cols, w.data(), w.size());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    std::vector<float> all(rows * cols), row(cols);
    dequantize(type, w.data(), all.data(), rows * cols);
    for (int64_t r = 0; r < rows; ++r) {
      m->DequantizeRow(r, row.data());
      for (int64_t c = 0; c < cols; ++c) {
        ASSERT_EQ(row[c], all[r * cols + c]) << ggml_type_name(type) << " " << r << " " << c;
      }
    }
  }
}

}  // namespace
}  // namespace troupe
