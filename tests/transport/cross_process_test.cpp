// Links between real processes (transport_peer children), plain mode: the
// 10,000-step hop over tcp and ipc with nothing lost and order kept per peer,
// backpressure from a receiver that stops reading, unroutable replies, and
// the oversized-frame cut-off that spares the other peers.
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "tests/transport/child_process.h"
#include "tests/transport/step_messages.h"
#include "tests/transport/step_server.h"
#include "transport/link.h"

namespace troupe::transport {
namespace {

using testing::ChildProcess;
using testing::kRowBf16Bytes;
using testing::MakeStep;
using testing::PeerBinary;
using testing::ServeReport;
using testing::ServeSteps;
using testing::TempDir;
using testing::TextMessage;

std::unique_ptr<ChildProcess> StartPeer(std::vector<std::string> args) {
  args.insert(args.begin(), PeerBinary());
  auto child = ChildProcess::Spawn(args);
  EXPECT_TRUE(child.ok()) << child.status().ToString();
  return child.ok() ? std::move(*child) : nullptr;
}

// Runs one sender child through `endpoint` and checks all its steps arrive.
void ExpectTenThousandSteps(const std::string& bind_endpoint) {
  zmq::context_t ctx;
  auto l = Listener::Bind(ctx, bind_endpoint, PlainSecurity());
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  auto child = StartPeer({"--mode=send", "--endpoint=" + (*l)->endpoint(), "--id=shard-1", "--count=10000",
                          "--bytes=" + std::to_string(kRowBf16Bytes)});
  ASSERT_NE(child, nullptr);
  ServeReport r = ServeSteps(**l, {"shard-1"}, kRowBf16Bytes, 60000);
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(r.peers["shard-1"].steps, 10000u);
  EXPECT_EQ(r.peers.size(), 1u);
  auto ack = child->ReadLineStartingWith("ack", 10000);
  ASSERT_TRUE(ack.ok()) << ack.status().ToString();
  EXPECT_EQ(*ack, "ack 10000");
  auto code = child->Wait(10000);
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, 0);
}

TEST(CrossProcess, TenThousandStepsOverTcpNoneLostInOrder) { ExpectTenThousandSteps("tcp://127.0.0.1:*"); }

TEST(CrossProcess, TenThousandStepsOverIpcNoneLostInOrder) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  ExpectTenThousandSteps("ipc://" + tmp.path() + "/listener.sock");
}

TEST(CrossProcess, TwoPeersInterleavedKeepTheirOwnOrder) {
  zmq::context_t ctx;
  auto l = Listener::Bind(ctx, "tcp://127.0.0.1:*", PlainSecurity());
  ASSERT_TRUE(l.ok());
  auto a = StartPeer({"--mode=send", "--endpoint=" + (*l)->endpoint(), "--id=a", "--count=5000"});
  auto b = StartPeer({"--mode=send", "--endpoint=" + (*l)->endpoint(), "--id=b", "--count=5000"});
  ASSERT_TRUE(a && b);
  ServeReport r = ServeSteps(**l, {"a", "b"}, kRowBf16Bytes, 60000);
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(r.peers["a"].steps, 5000u);
  EXPECT_EQ(r.peers["b"].steps, 5000u);
  EXPECT_EQ(a->ExitCode(10000), 0);
  EXPECT_EQ(b->ExitCode(10000), 0);
}

// The receiving process never reads: the sender is told "would block" after
// a bounded number of messages, and stays blocked rather than buffering.
TEST(CrossProcess, StalledReceiverPushesBack) {
  auto child =
      StartPeer({"--mode=listen", "--endpoint=tcp://127.0.0.1:*", "--no-read", "--hwm=8", "--kernel-buffer=65536"});
  ASSERT_NE(child, nullptr);
  auto line = child->ReadLineStartingWith("endpoint ", 10000);
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  const std::string endpoint = line->substr(9);

  zmq::context_t ctx;
  LinkOptions small;
  small.send_hwm = 8;
  small.receive_hwm = 8;
  small.kernel_buffer_bytes = 65536;
  auto c = Connection::Connect(ctx, endpoint, "sender", PlainSecurity(), "", small);
  ASSERT_TRUE(c.ok());
  uint64_t sent = 0;
  Status st;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline && sent < 100000) {
    Frames step = MakeStep(sent, kRowBf16Bytes);
    st = (*c)->Send(step);
    if (IsWouldBlock(st)) {
      // Still full after the I/O threads had time to flush: real backpressure.
      if (!(*c)->WaitWritable(300).ok()) break;
      continue;
    }
    ASSERT_TRUE(st.ok()) << st.ToString();
    ++sent;
  }
  ASSERT_TRUE(IsWouldBlock(st)) << "no backpressure after " << sent << " messages";
  EXPECT_LT(sent, 2000u);
  RecordProperty("sent_before_would_block", static_cast<int>(sent));
  // Later sends keep being refused; nothing piles up behind the caller's back.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Frames more = MakeStep(sent, kRowBf16Bytes);
  EXPECT_TRUE(IsWouldBlock((*c)->Send(more)));
}

TEST(CrossProcess, ReplyToUnknownOrDeadPeerIsUnroutable) {
  zmq::context_t ctx;
  auto l = Listener::Bind(ctx, "tcp://127.0.0.1:*", PlainSecurity());
  ASSERT_TRUE(l.ok());
  auto child =
      StartPeer({"--mode=send", "--endpoint=" + (*l)->endpoint(), "--id=shard-2", "--count=2", "--pause-at=1"});
  ASSERT_NE(child, nullptr);
  auto first = (*l)->Receive(10000);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->peer, "shard-2");

  Frames to_ghost = TextMessage("go");
  EXPECT_TRUE(IsUnroutable((*l)->Send("ghost", to_ghost)));
  Frames go = TextMessage("go");
  ASSERT_TRUE((*l)->Send("shard-2", go).ok());
  auto second = (*l)->Receive(10000);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(testing::CheckStep(second->frames, 1, kRowBf16Bytes).ok());
  auto end = (*l)->Receive(10000);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(testing::MessageText(end->frames), "END");
  Frames ack = TextMessage("ACK 2");
  ASSERT_TRUE((*l)->Send("shard-2", ack).ok());
  ASSERT_EQ(child->ExitCode(10000), 0);

  // The peer's process is gone: within moments its id is unroutable.
  Status st;
  for (int i = 0; i < 500; ++i) {
    Frames late = TextMessage("late");
    st = (*l)->Send("shard-2", late);
    if (IsUnroutable(st)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(IsUnroutable(st)) << st.ToString();
}

// ZMQ_MAXMSGSIZE: a peer sending a frame over the limit is disconnected
// before the frame is buffered; another peer is served throughout.
TEST(CrossProcess, OversizedFrameDropsOnlyThatPeer) {
  zmq::context_t ctx;
  LinkOptions o;
  o.max_message_size = 64 * 1024;
  auto l = Listener::Bind(ctx, "tcp://127.0.0.1:*", PlainSecurity(), o);
  ASSERT_TRUE(l.ok());
  auto big = StartPeer({"--mode=oversize", "--endpoint=" + (*l)->endpoint(), "--id=big", "--bytes=1048576"});
  ASSERT_NE(big, nullptr);
  ASSERT_TRUE(big->ReadLineStartingWith("sent", 10000).ok());
  uint64_t disconnected = 0;
  for (int i = 0; i < 500 && disconnected == 0; ++i) {
    EXPECT_FALSE((*l)->Receive(10).ok());  // the oversized step never arrives
    disconnected = (*l)->counters().disconnected;
  }
  EXPECT_GE(disconnected, 1u);

  auto good = StartPeer({"--mode=send", "--endpoint=" + (*l)->endpoint(), "--id=good", "--count=2000"});
  ASSERT_NE(good, nullptr);
  ServeReport r = ServeSteps(**l, {"good"}, kRowBf16Bytes, 30000);
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(r.peers["good"].steps, 2000u);
  EXPECT_EQ(r.peers.count("big"), 0u);
  EXPECT_EQ(good->ExitCode(10000), 0);
}

}  // namespace
}  // namespace troupe::transport
