// libFuzzer target: whole messages (header frame + optional tensor frame)
// through DecodeEnvelope and DecodeMessage. Input layout: fuzz_input.h.
// Properties checked (a violation aborts): a rejection is counted exactly
// once; an accepted envelope re-encodes to the same canonical bytes; an
// accepted tensor decodes to finite values (non-finite ones are rejected).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>

#include "messages/envelope_codec.h"
#include "messages/message_codec.h"
#include "messages/sampling_params_proto.h"
#include "tests/fuzz/fuzz_input.h"

namespace troupe::fuzz {
namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "envelope_fuzz: property violated: %s\n", what);
    std::abort();
  }
}

// Deterministic serialization (map entries sorted), so equal messages give
// equal bytes.
std::string Canonical(const v1::Envelope& e) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream out(&stream);
    out.SetSerializationDeterministic(true);
    e.SerializeToCodedStream(&out);
  }
  return bytes;
}

void CheckEnvelope(const v1::Envelope& e, size_t max_header) {
  const std::string bytes = Canonical(e);
  WireResult<v1::Envelope> again = DecodeEnvelope(bytes.data(), bytes.size(), bytes.size());
  Check(again.ok(), "an accepted envelope re-decodes");
  Check(Canonical(*again) == bytes, "re-encoding is a fixed point");
  Check(std::string(BodyName(e)) != "none", "an accepted envelope has a body");
  // The sampling mirror converts (or are refused as BAD_REQUEST).
  if (e.has_job_submit()) {
    WireResult<SamplingParams> p = SamplingParamsFromProto(e.job_submit().sampling());
    Check(p.ok() || p.error().code == v1::BAD_REQUEST, "sampling params convert or are BAD_REQUEST");
  }
}

}  // namespace
}  // namespace troupe::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace troupe;
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 logs otherwise
    return true;
  }();
  (void)quiet;
  DecodeLimits limits;
  limits.max_header_bytes = size_t{1} << 16;
  limits.max_tensor_bytes = size_t{1} << 20;

  WireResult<v1::Envelope> whole = DecodeEnvelope(data, size, limits.max_header_bytes);
  if (whole.ok()) fuzz::CheckEnvelope(*whole, limits.max_header_bytes);

  const std::vector<FrameRef> frames = fuzz::SplitEnvelopeInput(data, size);
  RejectCounters rejects;
  WireResult<InboundMessage> message = DecodeMessage(frames.data(), frames.size(), limits, &rejects);
  if (!message.ok()) {
    fuzz::Check(rejects.Total() == 1, "a rejection is counted once");
    fuzz::Check(rejects.Get(message.error().code) == 1, "under its own code");
    fuzz::Check(!message.error().text.empty(), "a rejection names the problem");
    return 0;
  }
  fuzz::Check(rejects.Total() == 0, "an accepted message is not counted");
  fuzz::CheckEnvelope(message->envelope, limits.max_header_bytes);
  fuzz::Check(message->tensor.has_value() == message->envelope.step().has_tensor(),
              "a tensor frame iff the step describes one");
  if (message->tensor) {
    for (float v : DecodeTensorFrame(*message->tensor)) {
      fuzz::Check(std::isfinite(v), "accepted tensors are finite");
    }
  }
  const auto& burst = message->envelope.step_burst().steps();
  fuzz::Check(message->burst_tensors.size() == static_cast<size_t>(burst.size()), "a tensor slot per burst step");
  for (int i = 0; i < burst.size() && i < static_cast<int>(message->burst_tensors.size()); ++i) {
    const std::optional<TensorFrame>& t = message->burst_tensors[static_cast<size_t>(i)];
    fuzz::Check(t.has_value() == burst[i].has_tensor(), "a burst step's tensor frame iff it describes one");
    if (!t) continue;
    for (float v : DecodeTensorFrame(*t)) fuzz::Check(std::isfinite(v), "accepted tensors are finite");
  }
  return 0;
}
