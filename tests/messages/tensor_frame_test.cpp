// Tensor descriptions are checked against their frames (dtype, rank, dims,
// exact size, limits, NaN/Inf) and frames keep their bytes alive.
#include "messages/tensor_frame.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "messages/tensor_encoding.h"

namespace troupe {
namespace {

v1::TensorDesc Desc(v1::Dtype dtype, std::vector<int64_t> shape) {
  v1::TensorDesc desc;
  desc.set_dtype(dtype);
  for (int64_t d : shape) desc.add_shape(d);
  return desc;
}

constexpr size_t kMax = size_t{1} << 30;

v1::ErrorCode CodeOf(const v1::TensorDesc& desc, size_t size, size_t max = kMax) {
  WireResult<int64_t> r = ValidateTensorDesc(desc, size, max);
  return r.ok() ? v1::ERROR_CODE_UNSPECIFIED : r.error().code;
}

TEST(TensorFrameTest, AcceptsMatchingDescriptions) {
  WireResult<int64_t> n = ValidateTensorDesc(Desc(v1::DTYPE_F32, {2, 576}), 2 * 576 * 4, kMax);
  ASSERT_TRUE(n.ok()) << n.error().ToString();
  EXPECT_EQ(*n, 1152);
  EXPECT_TRUE(ValidateTensorDesc(Desc(v1::DTYPE_BF16, {1, 1, 1, 3}), 6, kMax).ok());
  EXPECT_TRUE(ValidateTensorDesc(Desc(v1::DTYPE_INT8_BLOCK32, {3, 11}), 2 * 34, kMax).ok());
  EXPECT_TRUE(ValidateTensorDesc(Desc(v1::DTYPE_F16, {int64_t{1} << 31}), size_t{1} << 32, size_t{1} << 32).ok());
}

TEST(TensorFrameTest, RejectsUnknownDtype) {
  EXPECT_EQ(CodeOf(Desc(v1::DTYPE_UNSPECIFIED, {4}), 16), v1::BAD_TENSOR);
  EXPECT_EQ(CodeOf(Desc(static_cast<v1::Dtype>(77), {4}), 16), v1::BAD_TENSOR);
}

TEST(TensorFrameTest, RejectsRankOutsideOneToFour) {
  EXPECT_EQ(CodeOf(Desc(v1::DTYPE_F32, {}), 4), v1::BAD_TENSOR);
  EXPECT_EQ(CodeOf(Desc(v1::DTYPE_F32, {1, 1, 1, 1, 1}), 4), v1::BAD_TENSOR);
}

TEST(TensorFrameTest, RejectsDimsOutsideOneTo2Pow31) {
  EXPECT_EQ(CodeOf(Desc(v1::DTYPE_F32, {2, 0}), 0), v1::BAD_TENSOR);
  EXPECT_EQ(CodeOf(Desc(v1::DTYPE_F32, {-1, -4}), 16), v1::BAD_TENSOR);
  EXPECT_EQ(CodeOf(Desc(v1::DTYPE_F32, {(int64_t{1} << 31) + 1}), 4), v1::BAD_TENSOR);
  EXPECT_EQ(CodeOf(Desc(v1::DTYPE_F32, {std::numeric_limits<int64_t>::min()}), 4), v1::BAD_TENSOR);
}

TEST(TensorFrameTest, RejectsSizeMismatchBothWays) {
  const v1::TensorDesc desc = Desc(v1::DTYPE_F32, {2, 3});
  EXPECT_EQ(CodeOf(desc, 23), v1::BAD_TENSOR);
  EXPECT_EQ(CodeOf(desc, 25), v1::BAD_TENSOR);
  EXPECT_EQ(CodeOf(desc, 0), v1::BAD_TENSOR);
  EXPECT_EQ(CodeOf(Desc(v1::DTYPE_INT8_BLOCK32, {33}), 34), v1::BAD_TENSOR);  // needs 2 blocks
  WireResult<int64_t> r = ValidateTensorDesc(desc, 20, kMax);
  EXPECT_EQ(r.error().text, "tensor [2, 3] f32 needs 24 bytes, frame has 20");
}

TEST(TensorFrameTest, HugeDescriptionsAreOversizedWithoutOverflow) {
  const int64_t big = int64_t{1} << 31;
  EXPECT_EQ(CodeOf(Desc(v1::DTYPE_F32, {big, big, big, big}), 16), v1::OVERSIZED);
  EXPECT_EQ(CodeOf(Desc(v1::DTYPE_F32, {big, big}), 16), v1::OVERSIZED);
  EXPECT_EQ(CodeOf(Desc(v1::DTYPE_F32, {1024, 1024}), 4 << 20, (4 << 20) - 1), v1::OVERSIZED);
}

TEST(TensorFrameTest, MakeTensorFrameChecksFrameSizeFirst) {
  DecodeLimits limits;
  limits.max_tensor_bytes = 16;
  std::vector<uint8_t> bytes(20);
  WireResult<TensorFrame> r =
      MakeTensorFrame(Desc(v1::DTYPE_UNSPECIFIED, {}), bytes.data(), bytes.size(), nullptr, limits);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, v1::OVERSIZED);
}

TEST(TensorFrameTest, MakeTensorFrameFlagsNonFiniteUnlessAllowed) {
  const std::vector<float> x = {1.0f, std::nanf(""), 2.0f};
  DecodeLimits limits;
  WireResult<TensorFrame> r = MakeTensorFrame(Desc(v1::DTYPE_F32, {3}), x.data(), 12, nullptr, limits);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, v1::NON_FINITE);
  EXPECT_EQ(r.error().text, "tensor [3] f32 has NaN or Inf at index 1");
  limits.reject_non_finite = false;
  EXPECT_TRUE(MakeTensorFrame(Desc(v1::DTYPE_F32, {3}), x.data(), 12, nullptr, limits).ok());
}

TEST(TensorFrameTest, EncodeDecodeEveryDtype) {
  std::vector<float> x(2 * 40);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i)) * 3.0f;
  for (v1::Dtype dtype : {v1::DTYPE_F32, v1::DTYPE_BF16, v1::DTYPE_F16, v1::DTYPE_INT8_BLOCK32}) {
    SCOPED_TRACE(DtypeName(dtype));
    WireResult<TensorFrame> frame = EncodeTensorFrame(dtype, {2, 40}, x.data());
    ASSERT_TRUE(frame.ok()) << frame.error().ToString();
    EXPECT_EQ(frame->dtype, dtype);
    EXPECT_EQ(frame->shape, (std::vector<int64_t>{2, 40}));
    EXPECT_EQ(frame->size, *EncodedBytes(dtype, 80));
    ASSERT_NE(frame->owner, nullptr);
    const std::vector<float> y = DecodeTensorFrame(*frame);
    ASSERT_EQ(y.size(), x.size());
    const float tolerance = dtype == v1::DTYPE_F32 ? 0.0f : 3.0f / 127.0f;
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], x[i], tolerance) << i;
    // The description round-trips too.
    const v1::TensorDesc desc = frame->Desc();
    EXPECT_EQ(desc.dtype(), dtype);
    EXPECT_EQ(desc.shape_size(), 2);
  }
}

TEST(TensorFrameTest, EncodeRejectsBadShapes) {
  const float x[4] = {1, 2, 3, 4};
  EXPECT_EQ(EncodeTensorFrame(v1::DTYPE_F32, {}, x).error().code, v1::BAD_TENSOR);
  EXPECT_EQ(EncodeTensorFrame(v1::DTYPE_F32, {0}, x).error().code, v1::BAD_TENSOR);
  EXPECT_EQ(EncodeTensorFrame(v1::DTYPE_F32, {1, 1, 1, 1, 4}, x).error().code, v1::BAD_TENSOR);
  EXPECT_EQ(EncodeTensorFrame(v1::DTYPE_UNSPECIFIED, {4}, x).error().code, v1::BAD_TENSOR);
}

TEST(TensorFrameTest, FreeHintKeepsTheOwnerAlive) {
  const float x[2] = {1, 2};
  WireResult<TensorFrame> frame = EncodeTensorFrame(v1::DTYPE_F32, {2}, x);
  ASSERT_TRUE(frame.ok());
  std::weak_ptr<const void> watch = frame->owner;
  void* hint = frame->NewFreeHint();
  const uint8_t* data = frame->data;
  frame = WireError{};  // drop the frame: the hint still holds the bytes
  EXPECT_FALSE(watch.expired());
  float first;
  std::memcpy(&first, data, 4);
  EXPECT_EQ(first, 1.0f);
  TensorFrame::FreeHint(const_cast<uint8_t*>(data), hint);
  EXPECT_TRUE(watch.expired());
}

}  // namespace
}  // namespace troupe
