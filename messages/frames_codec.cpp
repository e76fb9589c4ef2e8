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
  Received out;
  out.envelope = std::move(m->envelope);
  if (m->tensor) {
    WireResult<at::Tensor> t = DecodeTensor(*m->tensor);
    if (!t.ok()) {
      if (rejects) rejects->Count(t.error().code);
      return t.error();
    }
    out.tensor = std::move(*t);
  }
  frames.clear();
  return out;
}

WireResult<transport::Frames> EncodeFrames(v1::Envelope envelope, const at::Tensor& tensor, v1::Dtype dtype) {
  std::optional<TensorFrame> frame;
  if (tensor.defined()) {
    WireResult<TensorFrame> f = EncodeTensor(tensor, dtype == v1::DTYPE_UNSPECIFIED ? v1::DTYPE_F32 : dtype);
    if (!f.ok()) return f.error();
    frame = std::move(*f);
  }
  WireResult<OutboundMessage> m = EncodeMessage(std::move(envelope), frame);
  if (!m.ok()) return m.error();
  transport::Frames frames;
  frames.push_back(transport::CopyFrame(m->header));
  if (m->tensor) {
    frames.push_back(transport::SharedFrame(m->tensor->owner, m->tensor->data, m->tensor->size));
  }
  return frames;
}

}  // namespace troupe
