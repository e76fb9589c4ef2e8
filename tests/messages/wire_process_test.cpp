// Every message type and every tensor encoding (alone, and in one StepBurst)
// crosses a real process
// boundary: a forked child sends them over a ZeroMQ DEALER (transport/) to
// this process's ROUTER on tcp://127.0.0.1 (OS-chosen port), and what arrives
// decodes (messages/ DecodeMessage, full validation) to exactly what was sent.
// The child leaves once this process answers that all of it arrived.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <optional>
#include <vector>

#include "messages/message_codec.h"
#include "messages/tensor_frame.h"
#include "tests/messages/sample_envelopes.h"
#include "transport/frames.h"
#include "transport/link.h"
#include "transport/security.h"

namespace troupe {
namespace {

// The tensor steps the child sends: one per encoding, same values each time.
std::vector<float> Values() {
  std::vector<float> v(3 * 576);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37f * static_cast<float>(i)) * 3.0f;
  return v;
}
const v1::Dtype kDtypes[] = {v1::DTYPE_F32, v1::DTYPE_BF16, v1::DTYPE_F16, v1::DTYPE_INT8_BLOCK32};

std::vector<OutboundMessage> AllMessages() {
  std::vector<OutboundMessage> out;
  for (v1::Envelope e : testing_samples::SampleEnvelopes()) {
    if (e.body_case() == v1::Envelope::kStep) e.mutable_step()->clear_tensor();
    auto m = EncodeMessage(std::move(e));
    if (m.ok()) out.push_back(std::move(m).value());
  }
  const std::vector<float> values = Values();
  for (v1::Dtype dt : kDtypes) {
    auto frame = EncodeTensorFrame(dt, {3, 576}, values.data());
    if (!frame.ok()) continue;
    v1::Envelope e = NewEnvelope(7);
    v1::Step* step = e.mutable_step();
    step->set_session_id(42);
    step->set_first_position(5 + static_cast<uint32_t>(dt));
    step->set_token_count(3);
    auto m = EncodeMessage(std::move(e), std::move(frame).value());
    if (m.ok()) out.push_back(std::move(m).value());
  }
  // A burst: one step per encoding, with a step without a tensor between.
  v1::Envelope burst = NewEnvelope(8);
  std::vector<std::optional<TensorFrame>> frames;
  for (v1::Dtype dt : kDtypes) {
    for (bool with_tensor : {true, false}) {
      v1::Step* step = burst.mutable_step_burst()->add_steps();
      step->set_session_id(50 + static_cast<uint64_t>(frames.size()));
      step->set_token_count(3);
      frames.push_back(with_tensor ? std::optional<TensorFrame>(*EncodeTensorFrame(dt, {3, 576}, values.data()))
                                   : std::nullopt);
    }
  }
  auto m = EncodeBurst(std::move(burst), std::move(frames));
  if (m.ok()) out.push_back(std::move(m).value());
  return out;
}

TEST(WireAcrossProcesses, EveryMessageTypeAndTensorEncodingRoundTrips) {
  zmq::context_t ctx;
  auto listener = transport::Listener::Bind(ctx, "tcp://127.0.0.1:*", transport::PlainSecurity());
  ASSERT_TRUE(listener.ok()) << listener.status().ToString();
  const std::string endpoint = (*listener)->endpoint();
  const std::vector<OutboundMessage> expected = AllMessages();
  ASSERT_GE(expected.size(), 15u + 4u);

  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the sending process
    int rc = 0;
    {
      zmq::context_t cctx;
      auto conn = transport::Connection::Connect(cctx, endpoint, "sender", transport::PlainSecurity());
      if (!conn.ok()) ::_exit(2);
      for (const OutboundMessage& m : AllMessages()) {
        transport::Frames frames;
        frames.push_back(transport::CopyFrame(m.header));
        if (m.tensor) frames.push_back(transport::CopyFrame(m.tensor->data, m.tensor->size));
        for (const TensorFrame& t : m.burst_tensors) frames.push_back(transport::CopyFrame(t.data, t.size));
        for (int attempt = 0;; ++attempt) {
          Status s = (*conn)->Send(frames);
          if (s.ok()) break;
          if (!transport::IsWouldBlock(s) || attempt > 1000) {
            rc = 3;
            break;
          }
          ::usleep(1000);
        }
      }
      // Wait for the parent's word that everything arrived before the
      // context closes (linger 0 would drop what is still queued: a fixed
      // second was not always enough under AddressSanitizer on a busy machine).
      if (rc == 0 && !(*conn)->Receive(60000).ok()) rc = 4;
    }
    ::_exit(rc);
  }

  size_t received = 0;
  for (; received < expected.size(); ++received) {
    auto in = (*listener)->Receive(10000);
    ASSERT_TRUE(in.ok()) << "message " << received << ": " << in.status().ToString();
    EXPECT_EQ(in->peer, "sender");
    std::vector<FrameRef> refs;
    for (const auto& f : in->frames) refs.push_back(FrameRef{f.data(), f.size(), nullptr});
    auto decoded = DecodeMessage(refs.data(), refs.size(), DecodeLimits{});
    ASSERT_TRUE(decoded.ok()) << "message " << received << ": " << decoded.error().text;
    const OutboundMessage& want = expected[received];
    v1::Envelope sent;
    ASSERT_TRUE(sent.ParseFromString(want.header));
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(decoded->envelope, sent))
        << "message " << received << ": " << decoded->envelope.ShortDebugString();
    ASSERT_EQ(decoded->tensor.has_value(), want.tensor.has_value());
    if (want.tensor) {
      EXPECT_EQ(decoded->tensor->dtype, want.tensor->dtype);
      EXPECT_EQ(decoded->tensor->shape, want.tensor->shape);
      const std::vector<float> got = DecodeTensorFrame(*decoded->tensor);
      const std::vector<float> sent = DecodeTensorFrame(*want.tensor);
      EXPECT_EQ(got, sent) << "tensor bytes changed in transit";
    }
    std::vector<const TensorFrame*> got_burst;
    for (const std::optional<TensorFrame>& t : decoded->burst_tensors) {
      if (t) got_burst.push_back(&*t);
    }
    ASSERT_EQ(got_burst.size(), want.burst_tensors.size()) << "message " << received;
    for (size_t i = 0; i < got_burst.size(); ++i) {
      EXPECT_EQ(got_burst[i]->dtype, want.burst_tensors[i].dtype);
      EXPECT_EQ(DecodeTensorFrame(*got_burst[i]), DecodeTensorFrame(want.burst_tensors[i]))
          << "burst tensor " << i << " changed in transit";
    }
  }
  transport::Frames done;
  done.push_back(transport::CopyFrame(std::string("done")));
  EXPECT_TRUE((*listener)->Send("sender", done).ok());
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "sender exit status " << status;
  EXPECT_EQ(received, expected.size());
}

}  // namespace
}  // namespace troupe
