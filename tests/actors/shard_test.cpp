// One shard node driven over a real socket by a hand-written peer: the
// session protocol (open / CACHE_FULL / SESSION_EXISTS / WRONG_MODEL / close /
// idle timeout), its cache accounting, and malformed steps answered with an
// error while the node keeps serving.
#include <gtest/gtest.h>

#include <ATen/core/Tensor.h>
#include <ATen/ops/zeros.h>

#include <limits>

#include "actors/node.h"
#include "messages/envelope_codec.h"
#include "messages/frames_codec.h"
#include "messages/origin.h"
#include "tests/actors/local_ring.h"
#include "transport/link.h"

namespace troupe::actors {
namespace {

// KV bytes of one position on a 10-layer shard of the default model.
constexpr uint64_t kBytesPerPosition = 10 * 3 * 64 * 2 * 2;

class ShardTest : public ::testing::Test {
 protected:
  virtual double IdleTimeoutSeconds() const { return 600; }
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

  double CacheBytesInUse() {
    v1::Envelope q = NewEnvelope(99);
    q.mutable_metrics_query();
    Send(q);
    v1::Envelope answer = Receive();
    EXPECT_TRUE(answer.has_metrics_snapshot());
    return answer.metrics_snapshot().gauges().at("cache_bytes_in_use");
  }

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
