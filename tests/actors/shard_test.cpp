// One shard node driven over a real socket by a hand-written peer: the
// session protocol (open / CACHE_FULL / SESSION_EXISTS / WRONG_MODEL / close /
// idle timeout), its cache accounting, and malformed steps answered with an
// error while the node keeps serving.
#include <gtest/gtest.h>

#include <ATen/core/Tensor.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>

#include <deque>
#include <limits>
#include <map>
#include <vector>

#include "actors/node.h"
#include "messages/envelope_codec.h"
#include "messages/frames_codec.h"
#include "messages/origin.h"
#include "pipeline/format/model_source.h"
#include "pipeline/model/decoder.h"
#include "pipeline/model/kv_cache.h"
#include "tests/actors/local_ring.h"
#include "transport/link.h"

namespace troupe::actors {
namespace {

// KV bytes of one position on a 10-layer shard of the default model.
constexpr uint64_t kBytesPerPosition = 10 * 3 * 64 * 2 * 2;

class ShardTest : public ::testing::Test {
 protected:
  virtual double IdleTimeoutSeconds() const { return 600; }
  virtual double BurstWaitMs() const { return 1; }
  void SetUp() override {
    cluster::NodeConfig c;
    c.id = "shard-under-test";
    c.shard = true;
    c.layer_begin = 10;
    c.layer_end = 20;
    c.model = testing::DefaultModel();
    c.threads = 1;
    c.cache_budget_bytes = 1000 * kBytesPerPosition;
    c.idle_timeout_seconds = IdleTimeoutSeconds();
    c.burst_wait_ms = BurstWaitMs();
    auto node = Node::Start(c);
    ASSERT_TRUE(node.ok()) << node.status().ToString();
    node_ = std::move(*node);
    transport::LinkOptions link;
    link.monitor = false;
    auto conn = transport::Connection::Connect(context_, node_->node_endpoint(), "fake-head",
                                               transport::PlainSecurity(), "", link);
    ASSERT_TRUE(conn.ok());
    peer_ = std::move(*conn);
  }
  void TearDown() override {
    peer_.reset();
    node_.reset();
  }

  void Send(v1::Envelope env, const at::Tensor& tensor = at::Tensor()) {
    auto frames = EncodeFrames(std::move(env), tensor);
    ASSERT_TRUE(frames.ok()) << frames.error().ToString();
    ASSERT_TRUE(peer_->Send(*frames).ok());
  }
  void SendRaw(transport::Frames frames) { ASSERT_TRUE(peer_->Send(frames).ok()); }

  v1::Envelope Receive(int timeout_ms = 5000) {
    auto frames = peer_->Receive(timeout_ms);
    EXPECT_TRUE(frames.ok()) << frames.status().ToString();
    if (!frames.ok()) return v1::Envelope();
    auto env = DecodeEnvelope((*frames)[0].data(), (*frames)[0].size(), 1 << 20);
    EXPECT_TRUE(env.ok());
    return env.ok() ? *env : v1::Envelope();
  }

  v1::Envelope Open(uint64_t session, uint32_t max_length, const std::string& fingerprint = "") {
    v1::Envelope env = NewEnvelope(7);
    v1::SessionOpen* o = env.mutable_session_open();
    o->set_session_id(session);
    o->set_max_length(max_length);
    o->set_model_fingerprint(fingerprint);
    Send(env);
    return Receive();
  }

  v1::MetricsSnapshot Metrics() {
    v1::Envelope q = NewEnvelope(99);
    q.mutable_metrics_query();
    Send(q);
    v1::Envelope answer = Receive();
    EXPECT_TRUE(answer.has_metrics_snapshot());
    return answer.metrics_snapshot();
  }
  double CacheBytesInUse() { return Metrics().gauges().at("cache_bytes_in_use"); }
  uint64_t InlineSteps() { return Metrics().counters().at("inline_steps_total"); }

  v1::Envelope Step(uint64_t session, uint32_t position, const at::Tensor& hidden) {
    v1::Envelope env = NewEnvelope(3);
    v1::Step* s = env.mutable_step();
    s->set_session_id(session);
    s->set_first_position(position);
    s->set_token_count(static_cast<uint32_t>(hidden.size(0)));
    v1::RouteHop* hop = s->mutable_hop();
    hop->set_node_id("shard-under-test");
    hop->set_stage(v1::STAGE_SHARD);
    hop->set_layer_begin(10);
    hop->set_layer_end(20);
    // The route ends here: a prefill chunk that needs no logits.
    return env;
  }

  zmq::context_t context_{1};
  std::unique_ptr<Node> node_;
  std::unique_ptr<transport::Connection> peer_;
};

TEST_F(ShardTest, OpensAccountsAndCloses) {
  v1::Envelope opened = Open(1, 100);
  ASSERT_TRUE(opened.has_session_opened()) << opened.DebugString();
  EXPECT_EQ(opened.request_id(), 7u);
  EXPECT_EQ(opened.session_opened().node_id(), "shard-under-test");
  EXPECT_EQ(CacheBytesInUse(), 100 * kBytesPerPosition);

  v1::Envelope again = Open(1, 100);
  ASSERT_TRUE(again.has_error());
  EXPECT_EQ(again.error().code(), v1::SESSION_EXISTS);

  v1::Envelope full = Open(2, 901);
  ASSERT_TRUE(full.has_error());
  EXPECT_EQ(full.error().code(), v1::CACHE_FULL);
  EXPECT_NE(full.error().text().find("budget"), std::string::npos) << full.error().text();
  EXPECT_EQ(full.error().session_id(), 2u);

  v1::Envelope fits = Open(3, 900);
  ASSERT_TRUE(fits.has_session_opened());
  EXPECT_EQ(CacheBytesInUse(), 1000 * kBytesPerPosition);

  for (uint64_t id : {1, 3}) {
    v1::Envelope close = NewEnvelope();
    close.mutable_session_close()->set_session_id(id);
    Send(close);
  }
  EXPECT_EQ(CacheBytesInUse(), 0);
}

TEST_F(ShardTest, RefusesAnotherModel) {
  v1::Envelope refused = Open(5, 10, "some-other-model");
  ASSERT_TRUE(refused.has_error());
  EXPECT_EQ(refused.error().code(), v1::WRONG_MODEL);
}

class ShardIdleTest : public ShardTest {
 protected:
  double IdleTimeoutSeconds() const override { return 1; }
};

TEST_F(ShardIdleTest, ClosesIdleSessions) {
  ASSERT_TRUE(Open(8, 50).has_session_opened());
  v1::Envelope timeout = Receive(5000);  // after idle_timeout_seconds (1 s) and a tick
  ASSERT_TRUE(timeout.has_error()) << timeout.DebugString();
  EXPECT_EQ(timeout.error().code(), v1::TIMEOUT);
  EXPECT_EQ(timeout.error().session_id(), 8u);
  EXPECT_EQ(CacheBytesInUse(), 0);
}

TEST_F(ShardTest, BadStepsGetErrorsAndTheShardGoesOn) {
  ASSERT_TRUE(Open(11, 50).has_session_opened());
  const at::Tensor good = at::zeros({2, 576});

  // Unknown session.
  Send(Step(12, 0, good), good);
  v1::Envelope e = Receive();
  ASSERT_TRUE(e.has_error());
  EXPECT_EQ(e.error().code(), v1::UNKNOWN_SESSION);

  // Wrong hidden size.
  const at::Tensor narrow = at::zeros({2, 100});
  Send(Step(11, 0, narrow), narrow);
  e = Receive();
  ASSERT_TRUE(e.has_error());
  EXPECT_EQ(e.error().code(), v1::BAD_TENSOR);

  // Out of order.
  Send(Step(11, 5, good), good);
  e = Receive();
  ASSERT_TRUE(e.has_error());
  EXPECT_EQ(e.error().code(), v1::BAD_REQUEST);

  // NaN: rejected by the bridge before any actor sees it.
  at::Tensor nan = at::zeros({2, 576});
  nan.data_ptr<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  v1::Envelope step = Step(11, 0, nan);
  v1::TensorDesc* desc = step.mutable_step()->mutable_tensor();
  desc->set_dtype(v1::DTYPE_F32);
  desc->add_shape(2);
  desc->add_shape(576);
  transport::Frames frames;
  frames.push_back(transport::CopyFrame(EncodeEnvelope(step)));
  frames.push_back(transport::CopyFrame(nan.data_ptr<float>(), 2 * 576 * sizeof(float)));
  SendRaw(std::move(frames));
  e = Receive();
  ASSERT_TRUE(e.has_error());
  EXPECT_EQ(e.error().code(), v1::NON_FINITE);

  // Garbage header.
  transport::Frames garbage;
  garbage.push_back(transport::CopyFrame(std::string("garbage")));
  SendRaw(std::move(garbage));
  e = Receive();
  ASSERT_TRUE(e.has_error());
  EXPECT_EQ(e.error().code(), v1::BAD_HEADER);

  // A good step still runs: the session's cache advances (the next position is 2).
  Send(Step(11, 0, good), good);
  Send(Step(11, 2, good), good);
  Send(Step(11, 3, good), good);  // out of order again: the only answer expected
  e = Receive();
  ASSERT_TRUE(e.has_error());
  EXPECT_EQ(e.error().code(), v1::BAD_REQUEST);
  EXPECT_NE(e.error().text().find("expects 4"), std::string::npos) << e.error().text();
}

}  // namespace
}  // namespace troupe::actors

namespace troupe::actors {
namespace {

// Steps that go on to a next hop (a listener standing in for the next
// node): one-row steps of a lone session run on the node's poll loop
// (InlineStage), the others on its actor, and every output has the bits of
// the same layers run in this process.
class ShardOnwardTest : public ShardTest {
 protected:
  // A burst's members are sent back to back: the shard waits for all of
  // them however slow this machine is, so each burst is one batch.
  double BurstWaitMs() const override { return 1000; }
  void SetUp() override {
    ShardTest::SetUp();
    auto next = transport::Listener::Bind(context_, "tcp://127.0.0.1:*", transport::PlainSecurity());
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    next_ = std::move(*next);
    auto source = ModelSource::Open(testing::DefaultModel());
    ASSERT_TRUE(source.ok()) << source.status().ToString();
    source_ = std::move(*source);  // the decoder's weights stay in its mapping
    auto decoder = Decoder::Load(*source_, 10, 20, ModelOptions{1});
    ASSERT_TRUE(decoder.ok()) << decoder.status().ToString();
    reference_ = std::move(*decoder);
  }

  // A step of `session` on to the stand-in's node, tagged as member of
  // `burst` (burst_size `burst_size`) when burst is not 0.
  void SendOnward(uint64_t session, uint32_t position, const at::Tensor& hidden, uint64_t burst = 0,
                  uint32_t burst_size = 0) {
    v1::Envelope env = Step(session, position, hidden);
    v1::RouteHop* next = env.mutable_step()->add_rest_of_route();
    next->set_node_id("next-node");
    next->set_endpoint(next_->endpoint());
    next->set_stage(v1::STAGE_SHARD);
    next->set_layer_begin(20);
    next->set_layer_end(30);
    env.mutable_step()->set_burst_id(burst);
    env.mutable_step()->set_burst_size(burst_size);
    Send(env, hidden);
  }

  // The next step the stand-in receives: its session and hidden states. A
  // StepBurst message gives its steps one call each, in order (counted in
  // bursts_received_).
  std::pair<uint64_t, at::Tensor> ReceiveOnward() {
    if (!received_.empty()) {
      auto next = std::move(received_.front());
      received_.pop_front();
      return next;
    }
    auto in = next_->Receive(10000);
    EXPECT_TRUE(in.ok()) << in.status().ToString();
    if (!in.ok()) return {0, at::Tensor()};
    RejectCounters rejects;
    auto got = DecodeFrames(in->frames, DecodeLimits{}, &rejects);
    EXPECT_TRUE(got.ok()) << got.error().ToString();
    if (!got.ok()) return {0, at::Tensor()};
    if (got->envelope.has_step_burst()) {
      ++bursts_received_;
      const v1::StepBurst& burst = got->envelope.step_burst();
      for (int i = 0; i < burst.steps_size(); ++i) {
        received_.emplace_back(burst.steps(i).session_id(), got->burst_tensors[static_cast<size_t>(i)]);
      }
      return ReceiveOnward();
    }
    EXPECT_TRUE(got->envelope.has_step()) << got->envelope.DebugString();
    return {got->envelope.step().session_id(), got->tensor};
  }

  // What layers 10-20 make of `hidden` in this process, with `cache`.
  at::Tensor Expected(const at::Tensor& hidden, KvCache& cache) {
    at::Tensor x = hidden.clone();
    Status st = reference_->Forward(x, {SessionRows{&cache, hidden.size(0)}});
    EXPECT_TRUE(st.ok()) << st.ToString();
    return x;
  }

  std::unique_ptr<transport::Listener> next_;
  std::deque<std::pair<uint64_t, at::Tensor>> received_;  // the rest of a StepBurst
  int bursts_received_ = 0;
  std::unique_ptr<ModelSource> source_;
  std::unique_ptr<Decoder> reference_;
};

TEST_F(ShardOnwardTest, OneRowStepsOfALoneSessionRunOnTheLoopWithTheSameBits) {
  ASSERT_TRUE(Open(31, 64).has_session_opened());
  auto cache = KvCache::Create(reference_->cache_shape(), 64);
  ASSERT_TRUE(cache.ok());
  at::manual_seed(7);
  // A 3-row prefill, then one row at a time (each row as a step would bring it).
  uint32_t position = 0;
  for (int64_t rows : {3, 1, 1, 1, 1, 1, 1}) {
    const at::Tensor hidden = at::randn({rows, 576});
    SendOnward(31, position, hidden);
    auto [session, out] = ReceiveOnward();
    EXPECT_EQ(session, 31u);
    ASSERT_TRUE(out.defined());
    EXPECT_TRUE(at::equal(out, Expected(hidden, **cache))) << "step at position " << position;
    position += static_cast<uint32_t>(rows);
  }
  // The first one-row step goes to the actor (the shard's step time is not
  // known yet); the later ones may run on the loop, and on an idle machine
  // all five do. At least one must, or the path is dead.
  const uint64_t inline_steps = InlineSteps();
  EXPECT_GE(inline_steps, 1u);
  EXPECT_LE(inline_steps, 5u);
}

TEST_F(ShardOnwardTest, StepsOfTwoLiveSessionsStayOnTheActor) {
  ASSERT_TRUE(Open(41, 64).has_session_opened());
  ASSERT_TRUE(Open(42, 64).has_session_opened());
  auto cache41 = KvCache::Create(reference_->cache_shape(), 64);
  auto cache42 = KvCache::Create(reference_->cache_shape(), 64);
  ASSERT_TRUE(cache41.ok() && cache42.ok());
  at::manual_seed(8);
  // Each session's prefill and first one-row step, alone.
  std::map<uint64_t, KvCache*> caches{{41, cache41->get()}, {42, cache42->get()}};
  for (uint64_t id : {41, 42}) {
    for (auto [position, rows] : {std::pair<uint32_t, int64_t>{0, 2}, {2, 1}}) {
      const at::Tensor hidden = at::randn({rows, 576});
      SendOnward(id, position, hidden);
      auto [session, out] = ReceiveOnward();
      EXPECT_EQ(session, id);
      EXPECT_TRUE(at::equal(out, Expected(hidden, *caches[id])));
    }
  }
  // Two live sessions: even their lone one-row steps stay on the actor,
  // which batches what arrives while it computes.
  EXPECT_EQ(InlineSteps(), 0u);
  const uint64_t before = InlineSteps();
  // Then steps in bursts of two: never on the loop, whatever the timing;
  // each burst computed as one batch and sent on as one StepBurst message.
  for (uint32_t position = 3; position < 8; ++position) {
    std::map<uint64_t, at::Tensor> sent{{41, at::randn({1, 576})}, {42, at::randn({1, 576})}};
    const uint64_t burst = 1000 + position;
    for (auto& [id, hidden] : sent) SendOnward(id, position, hidden, burst, 2);
    for (int i = 0; i < 2; ++i) {
      auto [session, out] = ReceiveOnward();
      ASSERT_TRUE(sent.count(session)) << session;
      EXPECT_TRUE(at::equal(out, Expected(sent[session], *caches[session]))) << "session " << session;
    }
    EXPECT_EQ(bursts_received_, static_cast<int>(position - 2)) << "the burst at " << position << " came apart";
  }
  EXPECT_EQ(InlineSteps(), before);
}

}  // namespace
}  // namespace troupe::actors
