#include "messages/tensor_frame.h"

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>

#include "messages/tensor_encoding.h"

namespace troupe {
namespace {

std::string ShapeString(const google::protobuf::RepeatedField<int64_t>& shape) {
  std::ostringstream os;
  os << '[';
  for (int i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

WireError BadTensor(std::string text) { return WireError{v1::BAD_TENSOR, std::move(text)}; }

}  // namespace

int64_t TensorFrame::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(n, d, &n)) return -1;
  }
  return n;
}

v1::TensorDesc TensorFrame::Desc() const {
  v1::TensorDesc desc;
  desc.set_dtype(dtype);
  for (int64_t d : shape) desc.add_shape(d);
  return desc;
}

void* TensorFrame::NewFreeHint() const { return new std::shared_ptr<const void>(owner); }

void TensorFrame::FreeHint(void* /*data*/, void* hint) { delete static_cast<std::shared_ptr<const void>*>(hint); }

WireResult<int64_t> ValidateTensorDesc(const v1::TensorDesc& desc, size_t frame_size, size_t max_bytes) {
  if (!DtypeKnown(desc.dtype())) {
    return BadTensor("unknown tensor " + DtypeName(desc.dtype()));
  }
  const int rank = desc.shape_size();
  if (rank < 1 || rank > kMaxTensorRank) {
    return BadTensor("tensor rank " + std::to_string(rank) + " outside [1, " + std::to_string(kMaxTensorRank) + "]");
  }
  // With every dim <= 2^31 and rank <= 4 the product can still overflow
  // int64, so it is checked step by step against what max_bytes allows.
  int64_t numel = 1;
  bool too_big = false;
  for (int i = 0; i < rank; ++i) {
    const int64_t d = desc.shape(i);
    if (d < 1 || d > kMaxTensorDim) {
      return BadTensor("tensor shape " + ShapeString(desc.shape()) + ": dim " + std::to_string(i) +
                       " outside [1, 2^31]");
    }
    if (!too_big && __builtin_mul_overflow(numel, d, &numel)) too_big = true;
  }
  const std::optional<size_t> encoded = too_big ? std::nullopt : EncodedBytes(desc.dtype(), numel);
  const size_t bytes = encoded.value_or(SIZE_MAX);
  // The text is made only for a rejection: every step's tensor passes here
  // twice a hop, where a string stream costs more than the checks.
  auto what = [&] { return "tensor " + ShapeString(desc.shape()) + " " + DtypeName(desc.dtype()); };
  if (!encoded || bytes > max_bytes) {
    return WireError{v1::OVERSIZED, what() + " exceeds the " + std::to_string(max_bytes) + "-byte tensor limit"};
  }
  if (bytes != frame_size) {
    return BadTensor(what() + " needs " + std::to_string(bytes) + " bytes, frame has " + std::to_string(frame_size));
  }
  return numel;
}

WireResult<TensorFrame> MakeTensorFrame(const v1::TensorDesc& desc, const void* data, size_t size,
                                        std::shared_ptr<const void> owner, const DecodeLimits& limits) {
  if (size > limits.max_tensor_bytes) {
    return WireError{v1::OVERSIZED, "tensor frame of " + std::to_string(size) + " bytes exceeds the " +
                                        std::to_string(limits.max_tensor_bytes) + "-byte limit"};
  }
  WireResult<int64_t> numel = ValidateTensorDesc(desc, size, limits.max_tensor_bytes);
  if (!numel.ok()) return numel.error();
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (limits.reject_non_finite) {
    const int64_t bad = FindNonFinite(desc.dtype(), bytes, *numel);
    if (bad >= 0) {
      return WireError{v1::NON_FINITE, "tensor " + ShapeString(desc.shape()) + " " + DtypeName(desc.dtype()) +
                                           " has NaN or Inf at index " + std::to_string(bad)};
    }
  }
  TensorFrame frame;
  frame.dtype = desc.dtype();
  frame.shape.assign(desc.shape().begin(), desc.shape().end());
  frame.data = bytes;
  frame.size = size;
  frame.owner = std::move(owner);
  return frame;
}

WireResult<TensorFrame> EncodeTensorFrame(v1::Dtype dtype, const std::vector<int64_t>& shape, const float* values) {
  v1::TensorDesc desc;
  desc.set_dtype(dtype);
  for (int64_t d : shape) desc.add_shape(d);
  if (!DtypeKnown(dtype)) return BadTensor("cannot encode to unknown " + DtypeName(dtype));
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 1 || d > kMaxTensorDim || __builtin_mul_overflow(numel, d, &numel)) {
      return BadTensor("cannot encode tensor of shape " + ShapeString(desc.shape()));
    }
  }
  const std::optional<size_t> bytes = EncodedBytes(dtype, numel);
  if (!bytes) return BadTensor("tensor " + ShapeString(desc.shape()) + " is too large to encode");
  auto buffer = std::make_shared<std::vector<uint8_t>>(*bytes);
  if (std::optional<WireError> error = EncodeValues(dtype, values, numel, buffer->data())) {
    return *std::move(error);
  }
  DecodeLimits limits;
  limits.max_tensor_bytes = *bytes;
  limits.reject_non_finite = false;
  const uint8_t* data = buffer->data();
  return MakeTensorFrame(desc, data, *bytes, std::move(buffer), limits);
}

std::vector<float> DecodeTensorFrame(const TensorFrame& frame) {
  std::vector<float> values(static_cast<size_t>(frame.numel()));
  DecodeValues(frame.dtype, frame.data, frame.numel(), values.data());
  return values;
}

}  // namespace troupe
