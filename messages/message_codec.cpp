#include "messages/message_codec.h"

#include <utility>

#include "messages/envelope_codec.h"

namespace troupe {
namespace {

// BAD_REQUEST unless a burst holds 1..kMaxBurstSteps steps.
std::optional<WireError> BurstSizeError(const v1::StepBurst& burst) {
  if (burst.steps_size() == 0) return WireError{v1::BAD_REQUEST, "step_burst message has no steps"};
  if (burst.steps_size() > kMaxBurstSteps) {
    return WireError{v1::BAD_REQUEST, "step_burst message has " + std::to_string(burst.steps_size()) +
                                          " steps, at most " + std::to_string(kMaxBurstSteps)};
  }
  return std::nullopt;
}

WireResult<InboundMessage> Decode(const FrameRef* frames, size_t count, const DecodeLimits& limits) {
  if (count < 1 || count > 1 + static_cast<size_t>(kMaxBurstSteps)) {
    return WireError{v1::BAD_FRAMES, "message has " + std::to_string(count) +
                                         " frames, expected a header and at most one tensor a step"};
  }
  WireResult<v1::Envelope> envelope = DecodeEnvelope(frames[0].data, frames[0].size, limits.max_header_bytes);
  if (!envelope.ok()) return envelope.error();
  InboundMessage message;
  if (envelope->has_step_burst()) {
    const v1::StepBurst& burst = envelope->step_burst();
    if (auto bad = BurstSizeError(burst)) return *bad;
    size_t described = 0;
    for (const v1::Step& s : burst.steps()) described += s.has_tensor() ? 1 : 0;
    if (count != 1 + described) {
      return WireError{v1::BAD_FRAMES, "step_burst describes " + std::to_string(described) + " tensors, " +
                                           std::to_string(count - 1) + " tensor frames follow"};
    }
    message.burst_tensors.resize(static_cast<size_t>(burst.steps_size()));
    size_t next = 1;
    for (int i = 0; i < burst.steps_size(); ++i) {
      if (!burst.steps(i).has_tensor()) continue;
      const FrameRef& f = frames[next++];
      WireResult<TensorFrame> tensor = MakeTensorFrame(burst.steps(i).tensor(), f.data, f.size, f.owner, limits);
      if (!tensor.ok()) {
        WireError e = tensor.error();
        e.text = "step " + std::to_string(i) + " of the burst: " + e.text;
        return e;
      }
      message.burst_tensors[static_cast<size_t>(i)] = std::move(tensor).value();
    }
    message.envelope = std::move(envelope).value();
    return message;
  }
  const bool wants_tensor = envelope->has_step() && envelope->step().has_tensor();
  if (count > 2 || wants_tensor != (count == 2)) {
    return WireError{v1::BAD_FRAMES,
                     count > 2 ? std::string(BodyName(*envelope)) + " message has " + std::to_string(count) +
                                     " frames, expected a header and at most one tensor"
                     : wants_tensor ? "step describes a tensor but no tensor frame follows"
                                    : std::string(BodyName(*envelope)) + " message has an unexpected tensor frame"};
  }
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

WireResult<OutboundMessage> EncodeBurst(v1::Envelope envelope, std::vector<std::optional<TensorFrame>> tensors) {
  if (!envelope.has_step_burst()) {
    return WireError{v1::INTERNAL, std::string("EncodeBurst takes a step_burst, not ") + BodyName(envelope)};
  }
  v1::StepBurst* burst = envelope.mutable_step_burst();
  if (auto bad = BurstSizeError(*burst)) return *bad;
  if (tensors.size() != static_cast<size_t>(burst->steps_size())) {
    return WireError{v1::INTERNAL, "a burst of " + std::to_string(burst->steps_size()) + " steps given " +
                                       std::to_string(tensors.size()) + " tensor slots"};
  }
  envelope.set_protocol_version(kProtocolVersion);
  OutboundMessage message;
  for (int i = 0; i < burst->steps_size(); ++i) {
    std::optional<TensorFrame>& t = tensors[static_cast<size_t>(i)];
    if (t) {
      *burst->mutable_steps(i)->mutable_tensor() = t->Desc();
      message.burst_tensors.push_back(std::move(*t));
    } else {
      burst->mutable_steps(i)->clear_tensor();
    }
  }
  message.header = EncodeEnvelope(envelope);
  return message;
}

WireResult<InboundMessage> DecodeMessage(const FrameRef* frames, size_t count, const DecodeLimits& limits,
                                         RejectCounters* rejects) {
  WireResult<InboundMessage> result = Decode(frames, count, limits);
  if (!result.ok() && rejects != nullptr) rejects->Count(result.error().code);
  return result;
}

}  // namespace troupe
