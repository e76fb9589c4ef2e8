#include "messages/frames_codec.h"

#include <memory>
#include <vector>

#include "messages/envelope_codec.h"
#include "messages/tensor_codec.h"

namespace troupe {

WireResult<Received> DecodeFrames(transport::Frames& frames, const DecodeLimits& limits, RejectCounters* rejects) {
  std::vector<FrameRef> refs;
  refs.reserve(frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    if (i == 0) {
      refs.push_back(FrameRef{frames[0].data(), frames[0].size(), nullptr});
    } else {
      // The tensor frame stays alive as long as any tensor made from it.
      auto owned = std::make_shared<zmq::message_t>(std::move(frames[i]));
      refs.push_back(FrameRef{owned->data(), owned->size(), owned});
    }
  }
  WireResult<InboundMessage> m = DecodeMessage(refs.data(), refs.size(), limits, rejects);
  if (!m.ok()) return m.error();
  auto decode = [&](const TensorFrame& frame, at::Tensor* to) -> std::optional<WireError> {
    WireResult<at::Tensor> t = DecodeTensor(frame);
    if (!t.ok()) {
      if (rejects) rejects->Count(t.error().code);
      return t.error();
    }
    *to = std::move(*t);
    return std::nullopt;
  };
  Received out;
  out.envelope = std::move(m->envelope);
  if (m->tensor) {
    if (auto e = decode(*m->tensor, &out.tensor)) return *e;
  }
  out.burst_tensors.resize(m->burst_tensors.size());
  for (size_t i = 0; i < m->burst_tensors.size(); ++i) {
    if (!m->burst_tensors[i]) continue;
    if (auto e = decode(*m->burst_tensors[i], &out.burst_tensors[i])) return *e;
  }
  frames.clear();
  return out;
}

namespace {

WireResult<std::optional<TensorFrame>> FrameOf(const at::Tensor& tensor, v1::Dtype dtype) {
  if (!tensor.defined()) return std::optional<TensorFrame>();
  WireResult<TensorFrame> f = EncodeTensor(tensor, dtype == v1::DTYPE_UNSPECIFIED ? v1::DTYPE_F32 : dtype);
  if (!f.ok()) return f.error();
  return std::optional<TensorFrame>(std::move(*f));
}

transport::Frames FramesOf(const OutboundMessage& m) {
  transport::Frames frames;
  frames.push_back(transport::CopyFrame(m.header));
  if (m.tensor) frames.push_back(transport::SharedFrame(m.tensor->owner, m.tensor->data, m.tensor->size));
  for (const TensorFrame& t : m.burst_tensors) frames.push_back(transport::SharedFrame(t.owner, t.data, t.size));
  return frames;
}

}  // namespace

WireResult<transport::Frames> EncodeFrames(v1::Envelope envelope, const at::Tensor& tensor, v1::Dtype dtype) {
  WireResult<std::optional<TensorFrame>> frame = FrameOf(tensor, dtype);
  if (!frame.ok()) return frame.error();
  WireResult<OutboundMessage> m = EncodeMessage(std::move(envelope), std::move(*frame));
  if (!m.ok()) return m.error();
  return FramesOf(*m);
}

WireResult<transport::Frames> EncodeBurstFrames(v1::Envelope envelope, const std::vector<at::Tensor>& tensors,
                                                v1::Dtype dtype) {
  std::vector<std::optional<TensorFrame>> frames;
  frames.reserve(tensors.size());
  for (const at::Tensor& t : tensors) {
    WireResult<std::optional<TensorFrame>> frame = FrameOf(t, dtype);
    if (!frame.ok()) return frame.error();
    frames.push_back(std::move(*frame));
  }
  WireResult<OutboundMessage> m = EncodeBurst(std::move(envelope), std::move(frames));
  if (!m.ok()) return m.error();
  return FramesOf(*m);
}

}  // namespace troupe
