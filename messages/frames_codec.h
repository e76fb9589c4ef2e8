// Frames codec: a Troupe message as ZeroMQ frames (transport/frames.h) and
// back, with its tensor as an at::Tensor — Envelope, tensor frame and the
// receiver's checks (message_codec.h, tensor_codec.h) in one call each way.
//
// Tensors travel as f32 without copying: an outbound tensor's storage is
// shared with ZeroMQ until it is sent (do not write to it afterwards); an
// inbound f32 frame becomes a tensor over the received bytes.
//
// Pure functions, thread-safe.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "messages/message_codec.h"
#include "messages/troupe.pb.h"
#include "transport/frames.h"

namespace troupe {

struct Received {
  v1::Envelope envelope;
  at::Tensor tensor;  // defined iff the envelope is a Step with a tensor frame
  // A StepBurst: one per step, defined iff that step has a tensor frame.
  std::vector<at::Tensor> burst_tensors;
};

// Decodes and validates (messages/ DecodeMessage) and counts rejections.
// Consumes `frames`.
WireResult<Received> DecodeFrames(transport::Frames& frames, const DecodeLimits& limits, RejectCounters* rejects);

// Encodes `envelope` (stamping the protocol version) and, when `tensor` is
// defined (only for a Step), its frame in `dtype` (f32 unless a route hop
// asks for int8 blocks).
WireResult<transport::Frames> EncodeFrames(v1::Envelope envelope, const at::Tensor& tensor,
                                           v1::Dtype dtype = v1::DTYPE_F32);

// Encodes a StepBurst envelope with `tensors[i]` (undefined: none) for its
// step i, every frame in `dtype` (messages/ EncodeBurst).
WireResult<transport::Frames> EncodeBurstFrames(v1::Envelope envelope, const std::vector<at::Tensor>& tensors,
                                                v1::Dtype dtype = v1::DTYPE_F32);

}  // namespace troupe
