// A whole message as the transport sees it: one header frame (an encoded
// Envelope) and, for a Step whose `tensor` is set, one raw tensor frame; for a
// StepBurst, one raw tensor frame for each of its steps whose `tensor` is
// set, in step order. The transport strips its routing frames and hands the
// rest here.
//
// DecodeMessage checks, in this order, and reports the first failure:
//   no frame, or more than 1 + kMaxBurstSteps     BAD_FRAMES
//   the header frame (DecodeEnvelope)             OVERSIZED, BAD_HEADER,
//                                                 VERSION_MISMATCH, UNKNOWN_TYPE
//   a StepBurst with no step, or more than
//   kMaxBurstSteps                                BAD_REQUEST
//   one tensor frame for each tensor description
//   (a Step's, a StepBurst's steps'), no other    BAD_FRAMES
//   each tensor frame (MakeTensorFrame)           OVERSIZED, BAD_TENSOR, NON_FINITE
// and counts every rejection in `rejects` (when not null). Nothing that fails
// here should reach a model: one bad frame rejects the whole burst.
//
// Pure functions, thread-safe (RejectCounters is).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "messages/protocol.h"
#include "messages/reject_counters.h"
#include "messages/tensor_frame.h"
#include "messages/troupe.pb.h"
#include "messages/wire_error.h"

namespace troupe {

// One received frame. `owner` keeps the bytes alive; only a tensor frame's
// owner is kept (the header is parsed into a copy). A null owner makes the
// decoded TensorFrame borrow the bytes.
struct FrameRef {
  const void* data = nullptr;
  size_t size = 0;
  std::shared_ptr<const void> owner;
};

struct OutboundMessage {
  std::string header;                 // frame 1
  std::optional<TensorFrame> tensor;  // a Step's frame 2, sent without copying
  // A StepBurst's frames 2.., one for each step with a tensor, in step
  // order, sent without copying.
  std::vector<TensorFrame> burst_tensors;
};

struct InboundMessage {
  v1::Envelope envelope;
  std::optional<TensorFrame> tensor;  // validated; set iff the Step has a tensor
  // A StepBurst: one entry per step, validated, set iff that step has a tensor.
  std::vector<std::optional<TensorFrame>> burst_tensors;
};

// Stamps kProtocolVersion, writes tensor->Desc() into the Step's `tensor`
// (clearing it when there is no tensor) and encodes the header. INTERNAL when
// a tensor is given for a body other than a Step.
WireResult<OutboundMessage> EncodeMessage(v1::Envelope envelope, std::optional<TensorFrame> tensor = std::nullopt);

// A StepBurst with `tensors[i]` for its step i (none: the step carries
// none): stamps the version, writes or clears each step's `tensor`, encodes
// the header. INTERNAL when the envelope is not a StepBurst or the counts
// differ; BAD_REQUEST for no step or more than kMaxBurstSteps.
WireResult<OutboundMessage> EncodeBurst(v1::Envelope envelope, std::vector<std::optional<TensorFrame>> tensors);

WireResult<InboundMessage> DecodeMessage(const FrameRef* frames, size_t count, const DecodeLimits& limits,
                                         RejectCounters* rejects = nullptr);

}  // namespace troupe
