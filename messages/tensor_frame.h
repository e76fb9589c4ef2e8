// TensorFrame: one raw tensor frame plus its description (dtype, shape) and
// whatever keeps its bytes alive. The unit the codec hands to the transport
// (outbound) and gets back from it (inbound). Torch-free.
//
// Ownership: `data` points into memory owned by `owner` (a tensor, a received
// ZeroMQ message, a byte vector...). A frame with a null owner only borrows
// its bytes, which must outlive it. Copies share the owner. A TensorFrame is a
// value: immutable once built, safe to read from several threads.
//
// Zero-copy send with cppzmq, keeping the owner alive until ZeroMQ is done
// (the free function may run on any thread):
//   zmq::message_t msg(const_cast<uint8_t*>(f.data), f.size,
//                      &TensorFrame::FreeHint, f.NewFreeHint());
// Zero-copy receive: wrap the message in a shared_ptr and pass it as owner
// (FrameRef in messages/message_codec.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "messages/protocol.h"
#include "messages/troupe.pb.h"
#include "messages/wire_error.h"

namespace troupe {

struct TensorFrame {
  v1::Dtype dtype = v1::DTYPE_UNSPECIFIED;
  std::vector<int64_t> shape;  // row-major, rank 1..kMaxTensorRank
  const uint8_t* data = nullptr;
  size_t size = 0;                    // bytes, == EncodedBytes(dtype, numel())
  std::shared_ptr<const void> owner;  // keeps data alive; null = borrowed

  int64_t numel() const;  // -1 if the product overflows int64
  v1::TensorDesc Desc() const;

  // A heap copy of `owner` for a ZeroMQ free function; FreeHint(data, hint)
  // releases it. Precondition: owner is not null.
  void* NewFreeHint() const;
  static void FreeHint(void* data, void* hint);
};

// Checks a description against a frame of `frame_size` bytes and returns the
// element count. In order: dtype known, else BAD_TENSOR; rank in
// [1, kMaxTensorRank] and every dim in [1, kMaxTensorDim], else BAD_TENSOR;
// frame_size == EncodedBytes(dtype, numel) exactly, else BAD_TENSOR (a
// description implying more than max_bytes is OVERSIZED).
WireResult<int64_t> ValidateTensorDesc(const v1::TensorDesc& desc, size_t frame_size, size_t max_bytes);

// Builds a frame over (data, size) described by desc: ValidateTensorDesc,
// then, with limits.reject_non_finite, NON_FINITE naming the first NaN/Inf
// index. `size` above limits.max_tensor_bytes is OVERSIZED before anything
// else is looked at. Does not copy: the result shares `owner`.
WireResult<TensorFrame> MakeTensorFrame(const v1::TensorDesc& desc, const void* data, size_t size,
                                        std::shared_ptr<const void> owner, const DecodeLimits& limits);

// Encodes fp32 values of the given shape into a new owned frame (validated
// like an inbound frame, without the non-finite check). Errors: BAD_TENSOR
// for a bad shape or dtype, and the EncodeValues errors.
WireResult<TensorFrame> EncodeTensorFrame(v1::Dtype dtype, const std::vector<int64_t>& shape, const float* values);

// The frame's values as fp32 (numel() of them). Precondition: a frame built
// by MakeTensorFrame or EncodeTensorFrame.
std::vector<float> DecodeTensorFrame(const TensorFrame& frame);

}  // namespace troupe
