// Wire: a Troupe message as ZeroMQ frames and back, with its tensor as an
// at::Tensor — the glue between messages/ (Envelope, tensor frames, checks)
// and transport/ (frames).
//
// Tensors travel as f32 without copying: an outbound tensor's storage is
// shared with ZeroMQ until it is sent (do not write to it afterwards); an
// inbound f32 frame becomes a tensor over the received bytes.
//
// Pure functions, thread-safe.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "messages/message_codec.h"
#include "messages/troupe.pb.h"
#include "transport/frames.h"
#include "transport/poll_loop.h"

namespace troupe::actors {

// Where a message came from, and so where a reply goes: a link and, for a
// listener, the peer's routing id. link 0 is this node itself (a local actor).
struct Origin {
  transport::LinkId link = 0;
  std::string peer;
};

struct Received {
  v1::Envelope envelope;
  at::Tensor tensor;  // defined iff the envelope is a Step with a tensor frame
};

// Decodes and validates (messages/ DecodeMessage) and counts rejections.
// Consumes `frames`.
WireResult<Received> DecodeFrames(transport::Frames& frames, const DecodeLimits& limits,
                                  RejectCounters* rejects);

// Encodes `envelope` (stamping the protocol version) and, when `tensor` is
// defined (only for a Step), its f32 frame.
WireResult<transport::Frames> EncodeFrames(v1::Envelope envelope, const at::Tensor& tensor);

// An Error envelope: `code`, `text`, the reporting node and, when non-zero,
// the session.
v1::Envelope ErrorEnvelope(v1::ErrorCode code, const std::string& text, const std::string& node_id,
                           uint64_t session_id = 0, uint64_t request_id = 0);

}  // namespace troupe::actors
