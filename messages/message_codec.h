// A whole message as the transport sees it: one header frame (an encoded
// Envelope) and, only for a Step whose `tensor` is set, one raw tensor frame.
// The transport strips its routing frames and hands the rest here.
//
// DecodeMessage checks, in this order, and reports the first failure:
//   no frame, or more than two                    BAD_FRAMES
//   the header frame (DecodeEnvelope)             OVERSIZED, BAD_HEADER,
//                                                 VERSION_MISMATCH, UNKNOWN_TYPE
//   a tensor frame iff the body is a Step with a
//   tensor description                            BAD_FRAMES
//   the tensor frame (MakeTensorFrame)            OVERSIZED, BAD_TENSOR, NON_FINITE
// and counts every rejection in `rejects` (when not null). Nothing that fails
// here should reach a model.
//
// Pure functions, thread-safe (RejectCounters is).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

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
  std::optional<TensorFrame> tensor;  // frame 2, sent without copying
};

struct InboundMessage {
  v1::Envelope envelope;
  std::optional<TensorFrame> tensor;  // validated; set iff the Step has a tensor
};

// Stamps kProtocolVersion, writes tensor->Desc() into the Step's `tensor`
// (clearing it when there is no tensor) and encodes the header. INTERNAL when
// a tensor is given for a body other than a Step.
WireResult<OutboundMessage> EncodeMessage(v1::Envelope envelope, std::optional<TensorFrame> tensor = std::nullopt);

WireResult<InboundMessage> DecodeMessage(const FrameRef* frames, size_t count, const DecodeLimits& limits,
                                         RejectCounters* rejects = nullptr);

}  // namespace troupe
