// Tensor codec: at::Tensor <-> TensorFrame (the raw frame of a Step; byte
// layouts in messages/tensor_encoding.h). Needs libtorch: link
// troupe_tensor_codec. This header only forward-declares at::Tensor; callers
// that use the results include <ATen/core/Tensor.h>.
//
// Copies are avoided where the layout allows:
//  * Encode, zero-copy: a contiguous CPU tensor whose scalar type already is
//    the wire dtype (float -> F32, bfloat16 -> BF16, half -> F16). The frame
//    points at the tensor's storage and its owner holds a reference to the
//    tensor, so the storage lives until the frame (and every ZeroMQ hint made
//    from it) is released. Do not modify the tensor in place meanwhile.
//  * Encode, otherwise: the tensor is brought to CPU fp32 contiguous and
//    encoded into a new buffer owned by the frame.
//  * Decode, zero-copy: an F32 frame with a non-null owner whose data is
//    4-byte aligned becomes a tensor over the frame's bytes that keeps the
//    owner alive; writing to it writes into the owner's buffer. (A received
//    ZeroMQ frame may sit at any offset of the receive buffer: CURVE frames
//    seen on the ring mostly do not qualify.)
//  * Decode, otherwise: a new fp32 tensor over a 64-byte aligned buffer of
//    its own (BF16, F16 and INT8 are expanded).
// Decoded tensors are fp32, on CPU, with the frame's shape.
//
// Errors: EncodeTensor — BAD_TENSOR for an undefined tensor, rank outside
// [1, 4], a zero or too large dim, an unknown dtype, and the EncodeValues
// errors (f16/int8 overflow, NON_FINITE for NaN/Inf into int8); INTERNAL when
// libtorch throws. DecodeTensor(frame) — ValidateTensorDesc's errors when the
// frame contradicts its description (a hand-built frame); the desc overload —
// everything MakeTensorFrame checks (OVERSIZED, BAD_TENSOR, NON_FINITE).
// Thread-safe (pure functions).
#pragma once

#include <cstddef>
#include <memory>

#include "messages/protocol.h"
#include "messages/tensor_frame.h"
#include "messages/troupe.pb.h"
#include "messages/wire_error.h"

namespace at {
class Tensor;
}  // namespace at

namespace troupe {

WireResult<TensorFrame> EncodeTensor(const at::Tensor& tensor, v1::Dtype dtype);

// A frame from DecodeMessage / MakeTensorFrame / EncodeTensor[Frame].
WireResult<at::Tensor> DecodeTensor(const TensorFrame& frame);

// Validates (MakeTensorFrame with `limits`) and decodes raw bytes.
WireResult<at::Tensor> DecodeTensor(const v1::TensorDesc& desc, const void* data, size_t size,
                                    std::shared_ptr<const void> owner, const DecodeLimits& limits = DecodeLimits());

}  // namespace troupe
