// Links in one process: binding with an OS-chosen port, round trips, the
// distinct would-block and unroutable statuses, bounded queues, zero-copy
// release, and argument checks.
#include "transport/link.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "tests/transport/child_process.h"
#include "tests/transport/step_messages.h"

namespace troupe::transport {
namespace {

using testing::CheckStep;
using testing::MakeStep;
using testing::MessageText;
using testing::TextMessage;

TEST(Link, BindPicksAPortAndReportsIt) {
  zmq::context_t ctx;
  auto l = Listener::Bind(ctx, "tcp://127.0.0.1:*", PlainSecurity());
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  const std::string& ep = (*l)->endpoint();
  EXPECT_EQ(ep.rfind("tcp://127.0.0.1:", 0), 0u) << ep;
  EXPECT_NE(ep.back(), '*');
  EXPECT_GT(std::stoi(ep.substr(ep.rfind(':') + 1)), 0);
  // The same address cannot be bound twice.
  auto again = Listener::Bind(ctx, ep, PlainSecurity());
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kIoError);
  EXPECT_NE(again.status().message().find(ep), std::string::npos);
}

TEST(Link, RoundTripOverIpc) {
  testing::TempDir tmp;
  zmq::context_t ctx;
  auto l = Listener::Bind(ctx, "ipc://" + tmp.path() + "/node.sock", PlainSecurity());
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  auto c = Connection::Connect(ctx, (*l)->endpoint(), "node-a", PlainSecurity());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  Frames step = MakeStep(42, testing::kRowBf16Bytes);
  ASSERT_TRUE((*c)->Send(step).ok());
  EXPECT_TRUE(step.empty());  // consumed
  auto in = (*l)->Receive(5000);
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_EQ(in->peer, "node-a");
  EXPECT_EQ(in->user_id, "");  // plain mode
  EXPECT_TRUE(CheckStep(in->frames, 42, testing::kRowBf16Bytes).ok());
  Frames reply = TextMessage("ok");
  ASSERT_TRUE((*l)->Send("node-a", reply).ok());
  auto back = (*c)->Receive(5000);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(MessageText(*back), "ok");
}

TEST(Link, UnroutableIsReportedNotDropped) {
  zmq::context_t ctx;
  auto l = Listener::Bind(ctx, "tcp://127.0.0.1:*", PlainSecurity());
  ASSERT_TRUE(l.ok());
  Frames reply = TextMessage("to nobody");
  Status st = (*l)->Send("ghost", reply);
  EXPECT_TRUE(IsUnroutable(st)) << st.ToString();
  EXPECT_FALSE(IsWouldBlock(st));
  EXPECT_NE(st.message().find("ghost"), std::string::npos);
  EXPECT_EQ(reply.size(), 1u);  // left with the caller
}

TEST(Link, ReceiveTimesOutAsWouldBlock) {
  zmq::context_t ctx;
  auto l = Listener::Bind(ctx, "tcp://127.0.0.1:*", PlainSecurity());
  ASSERT_TRUE(l.ok());
  auto in = (*l)->Receive(50);
  ASSERT_FALSE(in.ok());
  EXPECT_TRUE(IsWouldBlock(in.status()));
  EXPECT_EQ(in.status().code(), StatusCode::kUnavailable) << in.status().ToString();
  auto now = (*l)->Receive(0);  // the same answer without waiting
  ASSERT_FALSE(now.ok());
  EXPECT_EQ(now.status().code(), StatusCode::kUnavailable) << now.status().ToString();
}

// A listener that never reads: the sender sees would-block after a bounded
// number of messages instead of queueing without end, and nothing is lost.
TEST(Link, FullQueueReportsWouldBlockThenDrainsInOrder) {
  zmq::context_t ctx;
  LinkOptions small;
  small.send_hwm = 8;
  small.receive_hwm = 8;
  small.kernel_buffer_bytes = 64 * 1024;
  auto l = Listener::Bind(ctx, "tcp://127.0.0.1:*", PlainSecurity(), small);
  ASSERT_TRUE(l.ok());
  auto c = Connection::Connect(ctx, (*l)->endpoint(), "node-a", PlainSecurity(), "", small);
  ASSERT_TRUE(c.ok());
  uint64_t sent = 0;
  Status st;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    Frames step = MakeStep(sent, testing::kRowBf16Bytes);
    st = (*c)->Send(step);
    if (IsWouldBlock(st)) {
      EXPECT_EQ(step.size(), 2u);  // untouched, ready for a retry
      // Give the I/O threads a moment; still full means real backpressure.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      st = (*c)->Send(step);
      if (IsWouldBlock(st)) break;
    }
    ASSERT_TRUE(st.ok()) << st.ToString();
    ++sent;
  }
  ASSERT_TRUE(IsWouldBlock(st)) << "sent " << sent << " messages without backpressure";
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  // Waiting for room that does not come runs out.
  EXPECT_EQ((*c)->WaitWritable(20).code(), StatusCode::kDeadlineExceeded);
  RecordProperty("sent_before_would_block", static_cast<int>(sent));
  EXPECT_LT(sent, 2000u) << "queues are not small";
  EXPECT_GT(sent, 8u);
  for (uint64_t i = 0; i < sent; ++i) {
    auto in = (*l)->Receive(5000);
    ASSERT_TRUE(in.ok()) << "lost step " << i;
    ASSERT_TRUE(CheckStep(in->frames, i, testing::kRowBf16Bytes).ok());
  }
  // Room again once the receiver has drained.
  EXPECT_TRUE((*c)->WaitWritable(5000).ok());
}

// Fills a link whose listener does not read, stalls for `stall_ms`, then
// drains it. Returns how many steps were sent and how many came out intact
// and in order before the first gap.
struct StallResult {
  uint64_t sent = 0;
  uint64_t intact = 0;
  uint64_t disconnects = 0;
};
StallResult FillStallDrain(const LinkOptions& options, int stall_ms) {
  zmq::context_t ctx;
  StallResult r;
  auto l = Listener::Bind(ctx, "tcp://127.0.0.1:*", PlainSecurity(), options);
  auto c = Connection::Connect(ctx, (*l)->endpoint(), "node-a", PlainSecurity(), "", options);
  while (r.sent < 100000) {
    Frames step = MakeStep(r.sent, testing::kRowBf16Bytes);
    Status st = (*c)->Send(step);
    if (IsWouldBlock(st) && !(*c)->WaitWritable(200).ok()) break;
    if (st.ok()) ++r.sent;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(stall_ms));
  for (; r.intact < r.sent; ++r.intact) {
    auto in = (*l)->Receive(500);
    if (!in.ok() || !CheckStep(in->frames, r.intact, testing::kRowBf16Bytes).ok()) break;
  }
  r.disconnects = (*l)->counters().disconnected;
  return r;
}

// Why LinkOptions leaves ZMTP heartbeats off: a receiver that stops reading
// also stops reading PINGs/PONGs, so heartbeats tear a healthy-but-busy link
// down and lose what was in flight. With the defaults a long stall loses
// nothing. (If the first half ever fails, libzmq changed: revisit the default.)
TEST(Link, StalledLinkSurvivesWithDefaultsButNotWithZmtpHeartbeats) {
  LinkOptions o;
  o.send_hwm = 8;
  o.receive_hwm = 8;
  o.kernel_buffer_bytes = 64 * 1024;
  StallResult calm = FillStallDrain(o, 1500);
  EXPECT_GT(calm.sent, 8u);
  EXPECT_EQ(calm.intact, calm.sent);
  EXPECT_EQ(calm.disconnects, 0u);

  o.heartbeat_interval_ms = 100;
  o.heartbeat_timeout_ms = 300;
  StallResult beating = FillStallDrain(o, 1500);
  EXPECT_LT(beating.intact, beating.sent);
  EXPECT_GE(beating.disconnects, 1u);
}

TEST(Link, ZeroCopyFrameIsReleasedAfterSending) {
  zmq::context_t ctx;
  auto l = Listener::Bind(ctx, "tcp://127.0.0.1:*", PlainSecurity());
  ASSERT_TRUE(l.ok());
  auto c = Connection::Connect(ctx, (*l)->endpoint(), "node-a", PlainSecurity());
  ASSERT_TRUE(c.ok());
  auto buffer = std::make_shared<std::vector<uint8_t>>(4096, 0x5a);
  std::weak_ptr<std::vector<uint8_t>> watch = buffer;
  Frames frames;
  frames.push_back(CopyFrame("header"));
  frames.push_back(SharedFrame(buffer, buffer->data(), buffer->size()));
  buffer.reset();
  EXPECT_FALSE(watch.expired());  // the frame keeps the bytes alive
  ASSERT_TRUE((*c)->Send(frames).ok());
  auto in = (*l)->Receive(5000);
  ASSERT_TRUE(in.ok());
  ASSERT_EQ(in->frames.size(), 2u);
  EXPECT_EQ(in->frames[1].size(), 4096u);
  EXPECT_EQ(static_cast<const uint8_t*>(in->frames[1].data())[4095], 0x5a);
  // Released once ZeroMQ has written it (on an I/O thread).
  for (int i = 0; i < 500 && !watch.expired(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(watch.expired());
}

TEST(Link, OversizedFrameRefusedLocally) {
  zmq::context_t ctx;
  LinkOptions o;
  o.max_message_size = 1000;
  auto c = Connection::Connect(ctx, "tcp://127.0.0.1:1", "node-a", PlainSecurity(), "", o);
  ASSERT_TRUE(c.ok());
  Frames big = MakeStep(0, 2000);
  Status st = (*c)->Send(big);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("max_message_size"), std::string::npos);
  Frames empty;
  EXPECT_EQ((*c)->Send(empty).code(), StatusCode::kInvalidArgument);
}

TEST(Link, ArgumentsAreChecked) {
  zmq::context_t ctx;
  EXPECT_FALSE(Connection::Connect(ctx, "tcp://127.0.0.1:1", "", PlainSecurity()).ok());
  EXPECT_FALSE(Connection::Connect(ctx, "tcp://127.0.0.1:1", std::string("\0a", 2), PlainSecurity()).ok());
  EXPECT_FALSE(Connection::Connect(ctx, "tcp://127.0.0.1:1", std::string(256, 'a'), PlainSecurity()).ok());
  auto bad_endpoint = Connection::Connect(ctx, "nonsense", "a", PlainSecurity());
  ASSERT_FALSE(bad_endpoint.ok());
  EXPECT_NE(bad_endpoint.status().message().find("nonsense"), std::string::npos);
  EXPECT_FALSE(Connection::Connect(ctx, "tcp://127.0.0.1:1", "a", PlainSecurity(), "server-key").ok());
  LinkOptions o;
  o.send_hwm = 0;
  Status st = ValidateLinkOptions(o);
  EXPECT_NE(st.message().find("send_hwm"), std::string::npos);
  EXPECT_FALSE(Listener::Bind(ctx, "tcp://127.0.0.1:*", PlainSecurity(), o).ok());
}

}  // namespace
}  // namespace troupe::transport
