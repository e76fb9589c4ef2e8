#include "messages/tensor_codec.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/from_blob.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "messages/tensor_encoding.h"

namespace troupe {
namespace {

// The scalar type whose in-memory layout is exactly the wire dtype's, if any.
bool SameLayout(at::ScalarType type, v1::Dtype dtype) {
  return (dtype == v1::DTYPE_F32 && type == at::kFloat) || (dtype == v1::DTYPE_BF16 && type == at::kBFloat16) ||
         (dtype == v1::DTYPE_F16 && type == at::kHalf);
}

// Frames over the tensor's own storage; the owner is a reference to it.
WireResult<TensorFrame> FrameOverTensor(const at::Tensor& tensor, v1::Dtype dtype) {
  v1::TensorDesc desc;
  desc.set_dtype(dtype);
  for (int64_t d : tensor.sizes()) desc.add_shape(d);
  const size_t size = static_cast<size_t>(tensor.numel()) * tensor.element_size();
  const void* data = tensor.data_ptr();
  DecodeLimits limits;
  limits.max_tensor_bytes = size;
  limits.reject_non_finite = false;
  return MakeTensorFrame(desc, data, size, std::make_shared<const at::Tensor>(tensor), limits);
}

void ReleaseOwner(void* context) { delete static_cast<std::shared_ptr<const void>*>(context); }

WireError Internal(const std::string& what, const std::exception& e) {
  return WireError{v1::INTERNAL, what + ": " + e.what()};
}

}  // namespace

WireResult<TensorFrame> EncodeTensor(const at::Tensor& tensor, v1::Dtype dtype) {
  if (!tensor.defined()) return WireError{v1::BAD_TENSOR, "cannot encode an undefined tensor"};
  if (!DtypeKnown(dtype)) {
    return WireError{v1::BAD_TENSOR, "cannot encode to unknown " + DtypeName(dtype)};
  }
  if (tensor.dim() < 1 || tensor.dim() > kMaxTensorRank) {
    return WireError{v1::BAD_TENSOR, "cannot encode a tensor of rank " + std::to_string(tensor.dim())};
  }
  try {
    if (tensor.device().is_cpu() && tensor.is_contiguous() && SameLayout(tensor.scalar_type(), dtype)) {
      return FrameOverTensor(tensor, dtype);
    }
    const at::Tensor values = tensor.to(at::kCPU, at::kFloat).contiguous();
    if (dtype == v1::DTYPE_F32) return FrameOverTensor(values, dtype);
    const std::vector<int64_t> shape(values.sizes().begin(), values.sizes().end());
    return EncodeTensorFrame(dtype, shape, values.data_ptr<float>());
  } catch (const std::exception& e) {
    return Internal("encoding a tensor", e);
  }
}

WireResult<at::Tensor> DecodeTensor(const TensorFrame& frame) {
  WireResult<int64_t> numel = ValidateTensorDesc(frame.Desc(), frame.size, SIZE_MAX);
  if (!numel.ok()) return numel.error();
  try {
    const auto aligned = reinterpret_cast<uintptr_t>(frame.data) % alignof(float) == 0;
    if (frame.dtype == v1::DTYPE_F32 && frame.owner && aligned) {
      return at::for_blob(const_cast<uint8_t*>(frame.data), frame.shape)
          .context(new std::shared_ptr<const void>(frame.owner), &ReleaseOwner)
          .options(at::TensorOptions().dtype(at::kFloat))
          .make_tensor();
    }
    // A tensor over a buffer of our own, not at::empty: a step's tensor is
    // made once a hop, after the model's weights went through the caches,
    // and the dispatcher's cold path costs more than the copy.
    const size_t bytes = (static_cast<size_t>(*numel) * sizeof(float) + 63) / 64 * 64;
    std::unique_ptr<float, decltype(&std::free)> values(static_cast<float*>(std::aligned_alloc(64, bytes)), &std::free);
    if (values == nullptr) throw std::bad_alloc();
    DecodeValues(frame.dtype, frame.data, *numel, values.get());
    at::Tensor out = at::for_blob(values.get(), frame.shape)
                         .deleter([](void* p) { std::free(p); })
                         .options(at::TensorOptions().dtype(at::kFloat))
                         .make_tensor();
    float* owned_by_tensor = values.release();
    (void)owned_by_tensor;
    return out;
  } catch (const std::exception& e) {
    return Internal("decoding a tensor", e);
  }
}

WireResult<at::Tensor> DecodeTensor(const v1::TensorDesc& desc, const void* data, size_t size,
                                    std::shared_ptr<const void> owner, const DecodeLimits& limits) {
  WireResult<TensorFrame> frame = MakeTensorFrame(desc, data, size, std::move(owner), limits);
  if (!frame.ok()) return frame.error();
  return DecodeTensor(*frame);
}

}  // namespace troupe
