#include "messages/message_codec.h"

#include <utility>

#include "messages/envelope_codec.h"

namespace troupe {
namespace {

WireResult<InboundMessage> Decode(const FrameRef* frames, size_t count, const DecodeLimits& limits) {
  if (count < 1 || count > 2) {
    return WireError{v1::BAD_FRAMES,
                     "message has " + std::to_string(count) + " frames, expected a header and at most one tensor"};
  }
  WireResult<v1::Envelope> envelope = DecodeEnvelope(frames[0].data, frames[0].size, limits.max_header_bytes);
  if (!envelope.ok()) return envelope.error();
  const bool wants_tensor = envelope->has_step() && envelope->step().has_tensor();
  if (wants_tensor != (count == 2)) {
    return WireError{v1::BAD_FRAMES,
                     wants_tensor ? "step describes a tensor but no tensor frame follows"
                                  : std::string(BodyName(*envelope)) + " message has an unexpected tensor frame"};
  }
  InboundMessage message;
  if (wants_tensor) {
    WireResult<TensorFrame> tensor =
        MakeTensorFrame(envelope->step().tensor(), frames[1].data, frames[1].size, frames[1].owner, limits);
    if (!tensor.ok()) return tensor.error();
    message.tensor = std::move(tensor).value();
  }
  message.envelope = std::move(envelope).value();
  return message;
}

}  // namespace

WireResult<OutboundMessage> EncodeMessage(v1::Envelope envelope, std::optional<TensorFrame> tensor) {
  envelope.set_protocol_version(kProtocolVersion);
  if (tensor) {
    if (!envelope.has_step()) {
      return WireError{v1::INTERNAL, std::string("a tensor frame can only follow a step, not ") + BodyName(envelope)};
    }
    *envelope.mutable_step()->mutable_tensor() = tensor->Desc();
  } else if (envelope.has_step()) {
    envelope.mutable_step()->clear_tensor();
  }
  OutboundMessage message;
  message.header = EncodeEnvelope(envelope);
  message.tensor = std::move(tensor);
  return message;
}

WireResult<InboundMessage> DecodeMessage(const FrameRef* frames, size_t count, const DecodeLimits& limits,
                                         RejectCounters* rejects) {
  WireResult<InboundMessage> result = Decode(frames, count, limits);
  if (!result.ok() && rejects != nullptr) rejects->Count(result.error().code);
  return result;
}

}  // namespace troupe
