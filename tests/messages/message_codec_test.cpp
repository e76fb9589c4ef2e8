// Whole messages (header + optional tensor frame, or a StepBurst's header and
// its steps' frames): a Step with its tensor and a burst with its tensors
// round-trip; every reject path gives its code, is counted, and yields no
// message.
#include "messages/message_codec.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "messages/envelope_codec.h"
#include "tests/messages/sample_envelopes.h"

namespace troupe {
namespace {

using testing_samples::SampleEnvelopes;

v1::Envelope StepEnvelope() {
  v1::Envelope e = NewEnvelope(7);
  v1::Step* step = e.mutable_step();
  step->set_session_id(42);
  step->set_first_position(1);
  step->set_token_count(2);
  return e;
}

TensorFrame Frame(v1::Dtype dtype, const std::vector<int64_t>& shape, float fill = 0.5f) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> x(static_cast<size_t>(n), fill);
  WireResult<TensorFrame> frame = EncodeTensorFrame(dtype, shape, x.data());
  EXPECT_TRUE(frame.ok());
  return *frame;
}

// Frames pointing into an OutboundMessage, as the receiving side would see them.
std::vector<FrameRef> Frames(const OutboundMessage& m) {
  std::vector<FrameRef> frames = {{m.header.data(), m.header.size(), nullptr}};
  if (m.tensor) frames.push_back({m.tensor->data, m.tensor->size, m.tensor->owner});
  for (const TensorFrame& t : m.burst_tensors) frames.push_back({t.data, t.size, t.owner});
  return frames;
}

// A burst of `n` one-row steps of sessions 100, 101, ...
v1::Envelope BurstEnvelope(int n) {
  v1::Envelope e = NewEnvelope(9);
  for (int i = 0; i < n; ++i) {
    v1::Step* step = e.mutable_step_burst()->add_steps();
    step->set_session_id(100 + static_cast<uint64_t>(i));
    step->set_first_position(5);
    step->set_token_count(1);
  }
  return e;
}

class MessageCodecTest : public ::testing::Test {
 protected:
  // Decodes and expects rejection with `code`, counted once.
  void ExpectReject(const std::vector<FrameRef>& frames, v1::ErrorCode code,
                    const DecodeLimits& limits = DecodeLimits()) {
    const uint64_t before = rejects_.Get(code);
    WireResult<InboundMessage> r = DecodeMessage(frames.data(), frames.size(), limits, &rejects_);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, code) << r.error().ToString();
    EXPECT_FALSE(r.error().text.empty());
    EXPECT_EQ(rejects_.Get(code), before + 1);
  }
  RejectCounters rejects_;
};

TEST_F(MessageCodecTest, StepWithTensorRoundTrips) {
  const TensorFrame frame = Frame(v1::DTYPE_BF16, {2, 64}, 1.25f);
  WireResult<OutboundMessage> out = EncodeMessage(StepEnvelope(), frame);
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  ASSERT_TRUE(out->tensor);
  EXPECT_EQ(out->tensor->data, frame.data) << "the frame is passed on, not copied";

  const std::vector<FrameRef> frames = Frames(*out);
  WireResult<InboundMessage> in = DecodeMessage(frames.data(), frames.size(), DecodeLimits(), &rejects_);
  ASSERT_TRUE(in.ok()) << in.error().ToString();
  EXPECT_EQ(in->envelope.protocol_version(), kProtocolVersion);
  EXPECT_EQ(in->envelope.request_id(), 7u);
  EXPECT_EQ(in->envelope.step().session_id(), 42u);
  EXPECT_EQ(in->envelope.step().tensor().dtype(), v1::DTYPE_BF16);
  ASSERT_TRUE(in->tensor);
  EXPECT_EQ(in->tensor->shape, (std::vector<int64_t>{2, 64}));
  EXPECT_EQ(in->tensor->data, frame.data) << "decoding does not copy the tensor frame";
  EXPECT_EQ(in->tensor->owner, frame.owner);
  for (float v : DecodeTensorFrame(*in->tensor)) ASSERT_EQ(v, 1.25f);
  EXPECT_EQ(rejects_.Total(), 0u);
}

TEST_F(MessageCodecTest, EveryBodyRoundTripsAsAOneFrameMessage) {
  for (v1::Envelope e : SampleEnvelopes()) {
    SCOPED_TRACE(BodyName(e));
    if (e.has_step()) e.mutable_step()->clear_tensor();
    e.set_protocol_version(0);  // EncodeMessage stamps it
    WireResult<OutboundMessage> out = EncodeMessage(e);
    ASSERT_TRUE(out.ok());
    EXPECT_FALSE(out->tensor);
    const std::vector<FrameRef> frames = Frames(*out);
    WireResult<InboundMessage> in = DecodeMessage(frames.data(), 1, DecodeLimits(), &rejects_);
    ASSERT_TRUE(in.ok()) << in.error().ToString();
    e.set_protocol_version(kProtocolVersion);
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(e, in->envelope));
    EXPECT_FALSE(in->tensor);
  }
}

TEST_F(MessageCodecTest, EncodeWritesOrClearsTheDescription) {
  v1::Envelope e = StepEnvelope();
  e.mutable_step()->mutable_tensor()->set_dtype(v1::DTYPE_F16);  // stale
  WireResult<OutboundMessage> out = EncodeMessage(e);
  ASSERT_TRUE(out.ok());
  const std::vector<FrameRef> frames = Frames(*out);
  EXPECT_TRUE(DecodeMessage(frames.data(), 1, DecodeLimits()).ok());

  WireResult<OutboundMessage> bad = EncodeMessage(SampleEnvelopes()[1], Frame(v1::DTYPE_F32, {4}));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, v1::INTERNAL);
}

TEST_F(MessageCodecTest, WrongFrameCountsAreBadFrames) {
  ExpectReject({}, v1::BAD_FRAMES);
  WireResult<OutboundMessage> out = EncodeMessage(StepEnvelope(), Frame(v1::DTYPE_F32, {2, 4}));
  std::vector<FrameRef> frames = Frames(*out);
  ExpectReject({frames[0]}, v1::BAD_FRAMES);                        // tensor missing
  ExpectReject({frames[0], frames[1], frames[1]}, v1::BAD_FRAMES);  // one too many
  WireResult<OutboundMessage> plain = EncodeMessage(SampleEnvelopes()[2]);
  ExpectReject({Frames(*plain)[0], frames[1]}, v1::BAD_FRAMES);  // unexpected tensor
}

TEST_F(MessageCodecTest, HeaderRejectsAreCounted) {
  const std::string garbage = "\xff\xff\xff not protobuf";
  ExpectReject({{garbage.data(), garbage.size(), nullptr}}, v1::BAD_HEADER);

  v1::Envelope old = SampleEnvelopes()[2];
  old.set_protocol_version(kProtocolVersion + 1);
  const std::string old_bytes = EncodeEnvelope(old);
  ExpectReject({{old_bytes.data(), old_bytes.size(), nullptr}}, v1::VERSION_MISMATCH);

  const std::string empty = EncodeEnvelope(NewEnvelope());
  ExpectReject({{empty.data(), empty.size(), nullptr}}, v1::UNKNOWN_TYPE);

  DecodeLimits small;
  small.max_header_bytes = 8;
  const std::string big = EncodeEnvelope(SampleEnvelopes()[0]);
  ExpectReject({{big.data(), big.size(), nullptr}}, v1::OVERSIZED, small);
}

TEST_F(MessageCodecTest, TensorRejectsAreCounted) {
  WireResult<OutboundMessage> out = EncodeMessage(StepEnvelope(), Frame(v1::DTYPE_F32, {2, 4}));
  std::vector<FrameRef> frames = Frames(*out);

  std::vector<FrameRef> short_frame = frames;
  short_frame[1].size -= 4;
  ExpectReject(short_frame, v1::BAD_TENSOR);

  DecodeLimits small;
  small.max_tensor_bytes = 16;
  ExpectReject(frames, v1::OVERSIZED, small);

  for (auto [dtype, shape] : std::vector<std::pair<v1::Dtype, std::vector<int64_t>>>{{v1::DTYPE_UNSPECIFIED, {2, 4}},
                                                                                     {v1::DTYPE_F32, {8, 1, 1, 1, 1}},
                                                                                     {v1::DTYPE_F32, {0, 8}},
                                                                                     {v1::DTYPE_F16, {2, 4}}}) {
    v1::Envelope e = StepEnvelope();
    e.mutable_step()->mutable_tensor()->set_dtype(dtype);
    for (int64_t d : shape) e.mutable_step()->mutable_tensor()->add_shape(d);
    const std::string header = EncodeEnvelope(e);
    ExpectReject({{header.data(), header.size(), nullptr}, frames[1]}, v1::BAD_TENSOR);
  }
}

TEST_F(MessageCodecTest, NonFiniteTensorIsRejectedUnlessAllowed) {
  WireResult<OutboundMessage> out = EncodeMessage(StepEnvelope(), Frame(v1::DTYPE_F32, {3}, std::nanf("")));
  ASSERT_TRUE(out.ok());
  const std::vector<FrameRef> frames = Frames(*out);
  ExpectReject(frames, v1::NON_FINITE);
  DecodeLimits allow;
  allow.reject_non_finite = false;
  EXPECT_TRUE(DecodeMessage(frames.data(), frames.size(), allow).ok());
}

TEST_F(MessageCodecTest, DecodedTensorKeepsTheReceivedBufferAlive) {
  const TensorFrame frame = Frame(v1::DTYPE_F32, {4}, 2.0f);
  WireResult<OutboundMessage> out = EncodeMessage(StepEnvelope(), frame);
  // The "received" tensor frame: a buffer owned by a shared_ptr, as a
  // transport would wrap a zmq::message_t.
  auto received = std::make_shared<std::vector<uint8_t>>(frame.data, frame.data + frame.size);
  std::weak_ptr<std::vector<uint8_t>> watch = received;
  std::vector<FrameRef> frames = {{out->header.data(), out->header.size(), nullptr},
                                  {received->data(), received->size(), received}};
  received.reset();
  WireResult<InboundMessage> in = DecodeMessage(frames.data(), frames.size(), DecodeLimits());
  ASSERT_TRUE(in.ok());
  frames.clear();
  EXPECT_FALSE(watch.expired());
  EXPECT_EQ(DecodeTensorFrame(*in->tensor)[3], 2.0f);
  in = WireError{};
  EXPECT_TRUE(watch.expired());
}

TEST_F(MessageCodecTest, BurstRoundTripsWithATensorForEachStepThatHasOne) {
  // Steps 0 and 2 carry hidden states (different dtypes), step 1 none.
  const TensorFrame first = Frame(v1::DTYPE_F32, {1, 8}, 1.5f);
  const TensorFrame third = Frame(v1::DTYPE_BF16, {3, 8}, -2.0f);
  WireResult<OutboundMessage> out = EncodeBurst(BurstEnvelope(3), {first, std::nullopt, third});
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  ASSERT_EQ(out->burst_tensors.size(), 2u);
  EXPECT_FALSE(out->tensor);
  EXPECT_EQ(out->burst_tensors[1].data, third.data) << "the frames are passed on, not copied";

  const std::vector<FrameRef> frames = Frames(*out);
  ASSERT_EQ(frames.size(), 3u);
  WireResult<InboundMessage> in = DecodeMessage(frames.data(), frames.size(), DecodeLimits(), &rejects_);
  ASSERT_TRUE(in.ok()) << in.error().ToString();
  EXPECT_EQ(in->envelope.protocol_version(), kProtocolVersion);
  EXPECT_EQ(in->envelope.request_id(), 9u);
  const v1::StepBurst& burst = in->envelope.step_burst();
  ASSERT_EQ(burst.steps_size(), 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(burst.steps(i).session_id(), 100u + i);
  EXPECT_TRUE(burst.steps(0).has_tensor());
  EXPECT_FALSE(burst.steps(1).has_tensor());
  EXPECT_EQ(burst.steps(2).tensor().dtype(), v1::DTYPE_BF16);
  ASSERT_EQ(in->burst_tensors.size(), 3u);
  ASSERT_TRUE(in->burst_tensors[0]);
  EXPECT_FALSE(in->burst_tensors[1]);
  ASSERT_TRUE(in->burst_tensors[2]);
  EXPECT_EQ(in->burst_tensors[0]->shape, (std::vector<int64_t>{1, 8}));
  EXPECT_EQ(in->burst_tensors[2]->shape, (std::vector<int64_t>{3, 8}));
  EXPECT_EQ(in->burst_tensors[2]->data, third.data) << "decoding does not copy a tensor frame";
  for (float v : DecodeTensorFrame(*in->burst_tensors[0])) ASSERT_EQ(v, 1.5f);
  for (float v : DecodeTensorFrame(*in->burst_tensors[2])) ASSERT_EQ(v, -2.0f);
  EXPECT_FALSE(in->tensor);
  EXPECT_EQ(rejects_.Total(), 0u);
}

TEST_F(MessageCodecTest, BurstEncodeRefusesWhatItCannotSend) {
  WireResult<OutboundMessage> mismatch = EncodeBurst(BurstEnvelope(2), {Frame(v1::DTYPE_F32, {1, 8})});
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.error().code, v1::INTERNAL);
  WireResult<OutboundMessage> not_burst = EncodeBurst(StepEnvelope(), {std::nullopt});
  ASSERT_FALSE(not_burst.ok());
  EXPECT_EQ(not_burst.error().code, v1::INTERNAL);
  v1::Envelope no_steps = BurstEnvelope(0);
  no_steps.mutable_step_burst();
  WireResult<OutboundMessage> empty = EncodeBurst(no_steps, {});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().code, v1::BAD_REQUEST);
  WireResult<OutboundMessage> huge =
      EncodeBurst(BurstEnvelope(kMaxBurstSteps + 1), std::vector<std::optional<TensorFrame>>(kMaxBurstSteps + 1));
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.error().code, v1::BAD_REQUEST);
  EXPECT_TRUE(EncodeBurst(BurstEnvelope(kMaxBurstSteps), std::vector<std::optional<TensorFrame>>(kMaxBurstSteps)).ok());
}

TEST_F(MessageCodecTest, BurstRejectsAreCounted) {
  WireResult<OutboundMessage> out =
      EncodeBurst(BurstEnvelope(2), {Frame(v1::DTYPE_F32, {1, 8}), Frame(v1::DTYPE_F32, {1, 8})});
  ASSERT_TRUE(out.ok());
  const std::vector<FrameRef> frames = Frames(*out);
  ASSERT_EQ(frames.size(), 3u);
  ExpectReject({frames[0], frames[1]}, v1::BAD_FRAMES);                        // a tensor missing
  ExpectReject({frames[0], frames[1], frames[2], frames[2]}, v1::BAD_FRAMES);  // one too many

  // One bad frame rejects the whole burst, naming its step.
  std::vector<FrameRef> short_second = frames;
  short_second[2].size -= 4;
  ExpectReject(short_second, v1::BAD_TENSOR);
  const WireResult<InboundMessage> r = DecodeMessage(short_second.data(), short_second.size(), DecodeLimits());
  EXPECT_NE(r.error().text.find("step 1 of the burst"), std::string::npos) << r.error().text;
  WireResult<OutboundMessage> nan =
      EncodeBurst(BurstEnvelope(2), {Frame(v1::DTYPE_F32, {1, 8}), Frame(v1::DTYPE_F32, {1, 8}, std::nanf(""))});
  ExpectReject(Frames(*nan), v1::NON_FINITE);

  // No step, or more than kMaxBurstSteps (headers written by hand: EncodeBurst refuses them).
  v1::Envelope empty = BurstEnvelope(0);
  empty.mutable_step_burst();
  const std::string empty_header = EncodeEnvelope(empty);
  ExpectReject({{empty_header.data(), empty_header.size(), nullptr}}, v1::BAD_REQUEST);
  const std::string huge_header = EncodeEnvelope(BurstEnvelope(kMaxBurstSteps + 1));
  ExpectReject({{huge_header.data(), huge_header.size(), nullptr}}, v1::BAD_REQUEST);
  ExpectReject(std::vector<FrameRef>(kMaxBurstSteps + 2, frames[1]), v1::BAD_FRAMES);  // too many frames to look at
}

}  // namespace
}  // namespace troupe
