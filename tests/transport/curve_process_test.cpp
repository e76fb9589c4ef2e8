// CURVE between real processes: an allowlisted node gets its 10,000 steps
// through; a node with another key, a plain node, garbage bytes and a frame
// tampered with on the wire get nothing through — the receiving side never
// sees a message — and the listener keeps serving the good node meanwhile.
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/transport/child_process.h"
#include "tests/transport/step_messages.h"
#include "tests/transport/step_server.h"
#include "tests/transport/tamper_proxy.h"
#include "transport/link.h"
#include "transport/zap_handler.h"

namespace troupe::transport {
namespace {

using testing::ChildProcess;
using testing::kRowBf16Bytes;
using testing::PeerBinary;
using testing::ServeReport;
using testing::ServeSteps;
using testing::TempDir;

// Key files for a server, two allowlisted nodes and one outsider, and a
// CURVE listener (with its ZAP handler) that allows the two.
class CurveProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    for (const char* name : {"server", "good", "good2", "bad"}) {
      ASSERT_TRUE(GenerateKeyFiles(Dir(name)).ok());
    }
    const std::string allow = tmp_.path() + "/allow";
    ASSERT_EQ(mkdir(allow.c_str(), 0700), 0);
    for (const char* name : {"good", "good2"}) {
      std::ifstream in(Dir(name) + "/node.pub");
      std::ofstream(allow + "/" + name + ".pub") << in.rdbuf();
    }
    auto config = CurveSecurityFromFiles(Dir("server") + "/node.key", allow);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    config_ = *config;
    auto zap = ZapHandler::Start(ctx_, config_.allowlist);
    ASSERT_TRUE(zap.ok()) << zap.status().ToString();
    zap_ = std::move(*zap);
    auto l = Listener::Bind(ctx_, "tcp://127.0.0.1:*", config_);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    listener_ = std::move(*l);
  }

  void TearDown() override {
    children_.clear();  // killed and reaped
    listener_.reset();
    zap_.reset();
  }

  std::string Dir(const std::string& name) const { return tmp_.path() + "/" + name; }
  int Port() const {
    const std::string& ep = listener_->endpoint();
    return std::stoi(ep.substr(ep.rfind(':') + 1));
  }

  // Starts transport_peer; `key` names a key directory ("" = plain mode).
  ChildProcess* Start(std::vector<std::string> args, const std::string& key, const std::string& endpoint = "") {
    args.insert(args.begin(), PeerBinary());
    args.push_back("--endpoint=" + (endpoint.empty() ? listener_->endpoint() : endpoint));
    if (!key.empty()) {
      args.push_back("--key-file=" + Dir(key) + "/node.key");
      args.push_back("--server-key=" + config_.keys.public_key);
    }
    auto child = ChildProcess::Spawn(args);
    EXPECT_TRUE(child.ok()) << child.status().ToString();
    if (!child.ok()) return nullptr;
    children_.push_back(std::move(*child));
    return children_.back().get();
  }

  // True if any message arrives within `ms`.
  bool AnythingArrives(int ms) { return listener_->Receive(ms).ok(); }

  // Keeps checking that nothing arrives until `done()` holds or `ms` pass;
  // returns done(). Failures if anything arrives meanwhile.
  template <class Pred>
  bool NothingArrivesUntil(Pred done, int ms) {
    for (int waited = 0; waited < ms && !done(); waited += 50) {
      EXPECT_FALSE(AnythingArrives(50));
    }
    return done();
  }

  TempDir tmp_;
  zmq::context_t ctx_;
  SecurityConfig config_;
  std::unique_ptr<ZapHandler> zap_;
  std::unique_ptr<Listener> listener_;
  std::vector<std::unique_ptr<ChildProcess>> children_;
};

TEST_F(CurveProcess, AllowlistedNodeSendsTenThousandSteps) {
  ChildProcess* good = Start({"--mode=send", "--id=good", "--count=10000"}, "good");
  ASSERT_NE(good, nullptr);
  ServeReport r = ServeSteps(*listener_, {"good"}, kRowBf16Bytes, 60000);
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(r.peers["good"].steps, 10000u);
  EXPECT_EQ(good->ExitCode(10000), 0);
  EXPECT_GE(zap_->counters().accepted, 1u);
  EXPECT_EQ(zap_->counters().rejected, 0u);
}

TEST_F(CurveProcess, UnlistedKeyGetsNothingThroughAndIsCounted) {
  ChildProcess* bad = Start({"--mode=flood", "--id=bad"}, "bad");
  ASSERT_NE(bad, nullptr);
  // The outsider is told why (ZMTP ERROR carrying the ZAP status)...
  auto refused = bad->ReadLineStartingWith("auth-refused", 10000);
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  EXPECT_EQ(*refused, "auth-refused 400");
  // ...the receiving side never sees one of its messages (the outsider keeps
  // reconnecting and retrying meanwhile)...
  EXPECT_TRUE(NothingArrivesUntil([&] { return zap_->counters().rejected_unknown_key >= 3; }, 20000));
  EXPECT_FALSE(AnythingArrives(500));
  // ...and the refusals are counted for /metrics.
  ZapCounters zap = zap_->counters();
  EXPECT_EQ(zap.accepted, 0u);
  EXPECT_GE(listener_->counters().auth_failures, 1u);
  EXPECT_EQ(listener_->counters().handshakes_succeeded, 0u);
}

TEST_F(CurveProcess, PlainNodeGetsNothingThrough) {
  ChildProcess* plain = Start({"--mode=flood", "--id=plain"}, "");
  ASSERT_NE(plain, nullptr);
  ASSERT_TRUE(plain->ReadLineStartingWith("flooding", 10000).ok());
  EXPECT_TRUE(NothingArrivesUntil([&] { return listener_->counters().disconnected >= 3; }, 20000));
  EXPECT_FALSE(AnythingArrives(500));
  EXPECT_EQ(zap_->counters().accepted, 0u);
}

TEST_F(CurveProcess, GarbageBytesAreRejectedAndGoodNodeServed) {
  ChildProcess* garbage = Start({"--mode=garbage", "--port=" + std::to_string(Port())}, "");
  ASSERT_NE(garbage, nullptr);
  ASSERT_TRUE(garbage->ReadLineStartingWith("connected-once", 10000).ok());
  EXPECT_FALSE(AnythingArrives(500));
  ChildProcess* good = Start({"--mode=send", "--id=good", "--count=2000"}, "good");
  ASSERT_NE(good, nullptr);
  ServeReport r = ServeSteps(*listener_, {"good"}, kRowBf16Bytes, 60000);
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(r.peers["good"].steps, 2000u);
  EXPECT_EQ(r.peers.size(), 1u);
  EXPECT_EQ(good->ExitCode(10000), 0);
  EXPECT_GE(listener_->counters().disconnected, 1u);
  EXPECT_EQ(listener_->counters().handshakes_succeeded, 1u);  // the good node only
}

// A man in the middle flips one bit of a step on an established CURVE
// connection: the listener refuses the box and drops the connection; the
// tampered step never surfaces; the node reconnects and is served again.
TEST_F(CurveProcess, TamperedFrameIsRejected) {
  testing::TamperProxy proxy(Port());
  ASSERT_GT(proxy.port(), 0);
  ChildProcess* good = Start({"--mode=send", "--id=good", "--count=3", "--pause-at=1,2"}, "good",
                             "tcp://127.0.0.1:" + std::to_string(proxy.port()));
  ASSERT_NE(good, nullptr);

  auto step0 = listener_->Receive(10000);
  ASSERT_TRUE(step0.ok()) << step0.status().ToString();
  EXPECT_TRUE(testing::CheckStep(step0->frames, 0, kRowBf16Bytes).ok());
  const LinkCounters before = listener_->counters();

  proxy.ArmTamper();
  Frames go = testing::TextMessage("go");
  ASSERT_TRUE(listener_->Send("good", go).ok());
  // Step 1 is corrupted on the wire: nothing may arrive, the link drops.
  ASSERT_TRUE(good->ReadLineStartingWith("resume 1", 10000).ok());
  LinkCounters after;
  EXPECT_TRUE(NothingArrivesUntil(
      [&] {
        after = listener_->counters();
        return after.disconnected > before.disconnected;
      },
      20000))
      << "the tampered box was not refused: disconnects " << after.disconnected << " (before " << before.disconnected
      << "), tampered chunk of " << proxy.tampered_size() << " bytes";
  EXPECT_FALSE(AnythingArrives(500));
  EXPECT_EQ(proxy.tampered(), 1);

  // The node reconnects through the (now honest) proxy and is served again.
  Status st;
  for (int i = 0; i < 1000; ++i) {
    Frames go2 = testing::TextMessage("go");
    st = listener_->Send("good", go2);
    if (st.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto step2 = listener_->Receive(10000);
  ASSERT_TRUE(step2.ok()) << step2.status().ToString();
  EXPECT_TRUE(testing::CheckStep(step2->frames, 2, kRowBf16Bytes).ok());
  auto end = listener_->Receive(10000);
  ASSERT_TRUE(end.ok());
  Frames ack = testing::TextMessage("ACK 2");
  ASSERT_TRUE(listener_->Send("good", ack).ok());
  EXPECT_EQ(good->ExitCode(10000), 0);
}

// Outsiders flood the listener (a node with an unlisted key, a plain node,
// raw garbage connections) while an allowlisted node sends 5,000 steps: every
// step arrives in order and nothing else does.
TEST_F(CurveProcess, GoodNodeServedWhileOthersFlood) {
  ASSERT_NE(Start({"--mode=flood", "--id=bad"}, "bad"), nullptr);
  ASSERT_NE(Start({"--mode=flood", "--id=plain"}, ""), nullptr);
  ASSERT_NE(Start({"--mode=garbage", "--port=" + std::to_string(Port())}, ""), nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ChildProcess* good = Start({"--mode=send", "--id=good", "--count=5000"}, "good");
  ChildProcess* good2 = Start({"--mode=send", "--id=good2", "--count=5000"}, "good2");
  ASSERT_TRUE(good && good2);
  ServeReport r = ServeSteps(*listener_, {"good", "good2"}, kRowBf16Bytes, 90000);
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(r.peers["good"].steps, 5000u);
  EXPECT_EQ(r.peers["good2"].steps, 5000u);
  EXPECT_EQ(r.peers.size(), 2u);
  EXPECT_EQ(good->ExitCode(10000), 0);
  EXPECT_EQ(good2->ExitCode(10000), 0);
  ZapCounters zap = zap_->counters();
  EXPECT_GE(zap.rejected_unknown_key, 1u);
  RecordProperty("zap_rejections_during_flood", static_cast<int>(zap.rejected));
}

}  // namespace
}  // namespace troupe::transport
