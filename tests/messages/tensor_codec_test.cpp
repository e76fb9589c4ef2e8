// at::Tensor <-> frames: zero-copy where the layout allows (checked by
// pointer), conversions within each encoding's error bound, lifetimes, and
// the reject paths.
#include "messages/tensor_codec.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/zeros.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "messages/message_codec.h"
#include "messages/tensor_encoding.h"
#include "pipeline/quant/half.h"

namespace troupe {
namespace {

// Deterministic values over many magnitudes, both signs.
at::Tensor Hidden(int64_t tokens = 3, int64_t hidden = 576) {
  at::Tensor t = at::empty({tokens, hidden}, at::TensorOptions().dtype(at::kFloat));
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  float* p = t.data_ptr<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = normal(rng);
  return t;
}

TEST(TensorCodecTest, F32EncodeIsZeroCopyAndHoldsTheTensor) {
  const at::Tensor h = Hidden();
  ASSERT_EQ(h.use_count(), 1u);
  WireResult<TensorFrame> frame = EncodeTensor(h, v1::DTYPE_F32);
  ASSERT_TRUE(frame.ok()) << frame.error().ToString();
  EXPECT_EQ(frame->data, static_cast<const uint8_t*>(h.data_ptr()));
  EXPECT_EQ(frame->size, static_cast<size_t>(h.numel()) * 4);
  EXPECT_EQ(frame->shape, (std::vector<int64_t>{3, 576}));
  EXPECT_EQ(h.use_count(), 2u) << "the frame holds the tensor";
  void* hint = frame->NewFreeHint();
  frame = WireError{};
  EXPECT_EQ(h.use_count(), 2u) << "the ZeroMQ hint holds it after the frame is gone";
  TensorFrame::FreeHint(nullptr, hint);
  EXPECT_EQ(h.use_count(), 1u);
}

TEST(TensorCodecTest, Bf16AndF16TensorsEncodeWithoutCopy) {
  const at::Tensor h = Hidden();
  for (auto [type, dtype] : {std::pair{at::kBFloat16, v1::DTYPE_BF16}, std::pair{at::kHalf, v1::DTYPE_F16}}) {
    const at::Tensor t = h.to(type);
    WireResult<TensorFrame> frame = EncodeTensor(t, dtype);
    ASSERT_TRUE(frame.ok());
    EXPECT_EQ(frame->data, static_cast<const uint8_t*>(t.data_ptr()));
    WireResult<at::Tensor> back = DecodeTensor(*frame);
    ASSERT_TRUE(back.ok());
    EXPECT_TRUE(at::equal(*back, t.to(at::kFloat)));
  }
}

// Decoded values within each encoding's bound of the input.
void ExpectWithinBound(const at::Tensor& x, v1::Dtype dtype) {
  WireResult<TensorFrame> frame = EncodeTensor(x, dtype);
  ASSERT_TRUE(frame.ok()) << frame.error().ToString();
  EXPECT_EQ(frame->size, *EncodedBytes(dtype, x.numel()));
  WireResult<at::Tensor> y = DecodeTensor(*frame);
  ASSERT_TRUE(y.ok()) << y.error().ToString();
  ASSERT_EQ(y->sizes(), x.sizes());
  ASSERT_EQ(y->scalar_type(), at::kFloat);
  const at::Tensor xc = x.to(at::kFloat).contiguous();
  const float* a = xc.data_ptr<float>();
  const float* b = y->data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    float bound = 0.0f;
    switch (dtype) {
      case v1::DTYPE_BF16: bound = std::ldexp(std::fabs(a[i]), -8); break;
      case v1::DTYPE_F16: bound = std::ldexp(std::fabs(a[i]), -11); break;
      case v1::DTYPE_INT8_BLOCK32: {
        uint16_t d;
        std::memcpy(&d, frame->data + (i / 32) * 34, 2);
        bound = Fp16ToFp32(d) * 0.5f * (1.0f + 1e-6f);
        break;
      }
      default: break;
    }
    ASSERT_LE(std::fabs(b[i] - a[i]), bound) << DtypeName(dtype) << " at " << i << ": " << a[i];
  }
}

TEST(TensorCodecTest, EveryEncodingRoundTripsWithinItsBound) {
  const at::Tensor h = Hidden(5, 576);
  for (v1::Dtype dtype : {v1::DTYPE_F32, v1::DTYPE_BF16, v1::DTYPE_F16, v1::DTYPE_INT8_BLOCK32}) {
    ExpectWithinBound(h, dtype);
    ExpectWithinBound(h.reshape({5, 2, 288}), dtype);
    ExpectWithinBound(h.narrow(1, 0, 37), dtype);  // non-contiguous, last block short
  }
}

TEST(TensorCodecTest, NonContiguousAndOtherTypesAreConverted) {
  const at::Tensor h = Hidden(4, 8);
  const at::Tensor t = h.t();  // [8, 4], not contiguous
  WireResult<TensorFrame> frame = EncodeTensor(t, v1::DTYPE_F32);
  ASSERT_TRUE(frame.ok());
  EXPECT_NE(frame->data, static_cast<const uint8_t*>(h.data_ptr()));
  EXPECT_TRUE(at::equal(*DecodeTensor(*frame), t));
  const at::Tensor d = h.to(at::kDouble);
  EXPECT_TRUE(at::equal(*DecodeTensor(*EncodeTensor(d, v1::DTYPE_F32)), h));
}

TEST(TensorCodecTest, F32DecodeIsZeroCopyOverTheReceivedFrame) {
  const at::Tensor h = Hidden(2, 64);
  auto received = std::make_shared<std::vector<float>>(h.data_ptr<float>(), h.data_ptr<float>() + h.numel());
  const void* data = received->data();
  std::weak_ptr<std::vector<float>> watch = received;
  v1::TensorDesc desc;
  desc.set_dtype(v1::DTYPE_F32);
  desc.add_shape(2);
  desc.add_shape(64);
  WireResult<at::Tensor> t = DecodeTensor(desc, data, 2 * 64 * 4, std::move(received));
  ASSERT_TRUE(t.ok()) << t.error().ToString();
  EXPECT_EQ(t->data_ptr(), data);
  EXPECT_TRUE(at::equal(*t, h));
  EXPECT_FALSE(watch.expired());
  t = WireError{};
  EXPECT_TRUE(watch.expired()) << "the tensor released the frame";
}

TEST(TensorCodecTest, MisalignedOrBorrowedF32IsCopied) {
  const at::Tensor h = Hidden(1, 16);
  auto buffer = std::make_shared<std::vector<uint8_t>>(16 * 4 + 1);
  std::memcpy(buffer->data() + 1, h.data_ptr(), 16 * 4);
  v1::TensorDesc desc;
  desc.set_dtype(v1::DTYPE_F32);
  desc.add_shape(1);
  desc.add_shape(16);
  WireResult<at::Tensor> t = DecodeTensor(desc, buffer->data() + 1, 64, buffer);
  ASSERT_TRUE(t.ok());
  EXPECT_NE(t->data_ptr(), static_cast<void*>(buffer->data() + 1));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data_ptr()) % 64, 0u) << "a copy of its own, 64-byte aligned";
  EXPECT_TRUE(at::equal(*t, h));
  std::weak_ptr<std::vector<uint8_t>> watch = buffer;
  buffer.reset();
  EXPECT_TRUE(watch.expired()) << "the copy does not hold the frame";
  t->mul_(2.0f);  // it owns its values: writable, and still the frame's values (doubled)
  EXPECT_TRUE(at::equal(*t, h.mul(2.0)));
  WireResult<at::Tensor> borrowed = DecodeTensor(desc, h.data_ptr(), 64, nullptr);
  ASSERT_TRUE(borrowed.ok());
  EXPECT_NE(borrowed->data_ptr(), h.data_ptr());
  EXPECT_TRUE(at::equal(*borrowed, h));
}

TEST(TensorCodecTest, WholeStepMessageRoundTrip) {
  const at::Tensor h = Hidden(2, 576);
  v1::Envelope e;
  e.mutable_step()->set_session_id(1);
  e.mutable_step()->set_token_count(2);
  WireResult<OutboundMessage> out = EncodeMessage(e, *EncodeTensor(h, v1::DTYPE_F32));
  ASSERT_TRUE(out.ok());
  const FrameRef frames[2] = {{out->header.data(), out->header.size(), nullptr},
                              {out->tensor->data, out->tensor->size, out->tensor->owner}};
  WireResult<InboundMessage> in = DecodeMessage(frames, 2, DecodeLimits());
  ASSERT_TRUE(in.ok()) << in.error().ToString();
  WireResult<at::Tensor> t = DecodeTensor(*in->tensor);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->data_ptr(), h.data_ptr()) << "in-process, not one copy end to end";
  EXPECT_TRUE(at::equal(*t, h));
}

TEST(TensorCodecTest, EncodeRejects) {
  EXPECT_EQ(EncodeTensor(at::Tensor(), v1::DTYPE_F32).error().code, v1::BAD_TENSOR);
  EXPECT_EQ(EncodeTensor(at::zeros({}), v1::DTYPE_F32).error().code, v1::BAD_TENSOR);
  EXPECT_EQ(EncodeTensor(at::zeros({1, 1, 1, 1, 2}), v1::DTYPE_F32).error().code, v1::BAD_TENSOR);
  EXPECT_EQ(EncodeTensor(at::zeros({2, 0}), v1::DTYPE_F32).error().code, v1::BAD_TENSOR);
  EXPECT_EQ(EncodeTensor(at::zeros({2}), v1::DTYPE_UNSPECIFIED).error().code, v1::BAD_TENSOR);
  at::Tensor x = at::zeros({40});
  x[3] = std::nan("");
  EXPECT_EQ(EncodeTensor(x, v1::DTYPE_INT8_BLOCK32).error().code, v1::NON_FINITE);
  x[3] = 1e6;
  EXPECT_EQ(EncodeTensor(x, v1::DTYPE_F16).error().code, v1::BAD_TENSOR);
  EXPECT_TRUE(EncodeTensor(x, v1::DTYPE_BF16).ok());
}

TEST(TensorCodecTest, DecodeRejects) {
  const at::Tensor h = at::arange(8, at::TensorOptions().dtype(at::kFloat));
  v1::TensorDesc desc;
  desc.set_dtype(v1::DTYPE_F32);
  desc.add_shape(8);
  EXPECT_EQ(DecodeTensor(desc, h.data_ptr(), 28, nullptr).error().code, v1::BAD_TENSOR);
  DecodeLimits small;
  small.max_tensor_bytes = 16;
  EXPECT_EQ(DecodeTensor(desc, h.data_ptr(), 32, nullptr, small).error().code, v1::OVERSIZED);
  at::Tensor n = h.clone();
  n[6] = INFINITY;
  WireResult<at::Tensor> r = DecodeTensor(desc, n.data_ptr(), 32, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, v1::NON_FINITE);
  EXPECT_NE(r.error().text.find("index 6"), std::string::npos);
  DecodeLimits allow;
  allow.reject_non_finite = false;
  EXPECT_TRUE(DecodeTensor(desc, n.data_ptr(), 32, nullptr, allow).ok());
  // A hand-built frame whose size contradicts its shape.
  TensorFrame bad;
  bad.dtype = v1::DTYPE_F32;
  bad.shape = {8};
  bad.data = static_cast<const uint8_t*>(h.data_ptr());
  bad.size = 16;
  EXPECT_EQ(DecodeTensor(bad).error().code, v1::BAD_TENSOR);
}

}  // namespace
}  // namespace troupe
