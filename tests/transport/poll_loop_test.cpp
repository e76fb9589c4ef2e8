// PollLoop: producer threads hand messages to the loop thread through
// outboxes; order is kept, backpressure reaches the producer, send failures
// are reported, removal and stop are clean. The loop thread's own messages
// (SendHere, and an Outbound there) go onto the link at once, behind what the
// outboxes handed over.
#include "transport/poll_loop.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "pipeline/thread_name.h"
#include "tests/transport/step_messages.h"
#include "transport/outbound.h"

namespace troupe::transport {
namespace {

using testing::CheckStep;
using testing::kRowBf16Bytes;
using testing::MakeStep;
using testing::MessageText;
using testing::TextMessage;

// What the loop's callbacks saw, readable from the test thread.
class Recorder {
 public:
  PollLoopCallbacks Callbacks() {
    PollLoopCallbacks cb;
    cb.on_message = [this](LinkId link, Inbound&& in) { Push(&messages_, {link, in.peer, MessageText(in.frames)}); };
    cb.on_send_error = [this](LinkId link, const std::string& peer, const Status& st) {
      Push(&errors_, {link, peer, st.ToString()});
    };
    cb.on_event = [this](LinkId link, const LinkEvent& e) { Push(&events_, {link, "", e.ToString()}); };
    return cb;
  }
  struct Item {
    LinkId link;
    std::string peer;
    std::string text;
  };
  bool NextMessage(Item* out, int ms) { return Pop(&messages_, out, ms); }
  bool NextError(Item* out, int ms) { return Pop(&errors_, out, ms); }
  bool NextEvent(Item* out, int ms) { return Pop(&events_, out, ms); }

 private:
  void Push(std::deque<Item>* q, Item item) {
    std::lock_guard<std::mutex> lock(mu_);
    q->push_back(std::move(item));
    cv_.notify_all();
  }
  bool Pop(std::deque<Item>* q, Item* out, int ms) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::milliseconds(ms), [q] { return !q->empty(); })) {
      return false;
    }
    *out = std::move(q->front());
    q->pop_front();
    return true;
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> messages_, errors_, events_;
};

// Sends through `outbox`, retrying while the link pushes back.
Status SendRetrying(Outbox& outbox, const std::string& peer, Frames& frames) {
  for (int i = 0; i < 100000; ++i) {
    Status st = outbox.Send(peer, frames);
    if (!IsWouldBlock(st)) return st;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return Status::DeadlineExceeded("still backed up");
}

// A link that fills after a few messages when its receiver does not read.
LinkOptions SmallLink() {
  LinkOptions small;
  small.send_hwm = 8;
  small.receive_hwm = 8;
  small.kernel_buffer_bytes = 65536;
  return small;
}

// The loop thread is named for whoever profiles the process (top -H, perf).
TEST(PollLoop, ItsThreadIsNamedTroupeLoop) {
  const int before = CountThreadsNamed("troupe-loop");
  zmq::context_t ctx;
  Recorder rec;
  auto loop = PollLoop::Start(ctx, rec.Callbacks());
  ASSERT_TRUE(loop.ok()) << loop.status().ToString();
#if defined(__linux__)
  for (int i = 0; i < 200 && CountThreadsNamed("troupe-loop") < before + 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(CountThreadsNamed("troupe-loop"), before + 1);
#endif
  (*loop)->Stop();
  EXPECT_EQ(CountThreadsNamed("troupe-loop"), before);
}

TEST(PollLoop, ProducerThreadStreamsTenThousandStepsInOrder) {
  zmq::context_t ctx;
  auto l = Listener::Bind(ctx, "tcp://127.0.0.1:*", PlainSecurity());
  ASSERT_TRUE(l.ok());
  Recorder rec;
  auto loop = PollLoop::Start(ctx, rec.Callbacks());
  ASSERT_TRUE(loop.ok()) << loop.status().ToString();
  auto c = Connection::Connect(ctx, (*l)->endpoint(), "node-a", PlainSecurity());
  ASSERT_TRUE(c.ok());
  auto link = (*loop)->AddConnection(std::move(*c));
  ASSERT_TRUE(link.ok());

  std::thread producer([&] {
    auto outbox = (*loop)->OpenOutbox(*link);
    ASSERT_TRUE(outbox.ok()) << outbox.status().ToString();
    for (uint64_t i = 0; i < 10000; ++i) {
      Frames step = MakeStep(i, kRowBf16Bytes);
      ASSERT_TRUE(SendRetrying(**outbox, "", step).ok());
    }
  });
  for (uint64_t i = 0; i < 10000; ++i) {
    auto in = (*l)->Receive(10000);
    ASSERT_TRUE(in.ok()) << "lost step " << i;
    ASSERT_EQ(in->peer, "node-a");
    ASSERT_TRUE(CheckStep(in->frames, i, kRowBf16Bytes).ok()) << i;
  }
  producer.join();
  // Replies come back through on_message, on the loop thread.
  Frames ack = TextMessage("ACK 10000");
  ASSERT_TRUE((*l)->Send("node-a", ack).ok());
  Recorder::Item got;
  ASSERT_TRUE(rec.NextMessage(&got, 5000));
  EXPECT_EQ(got.link, *link);
  EXPECT_EQ(got.peer, "");
  EXPECT_EQ(got.text, "ACK 10000");
}

TEST(PollLoop, ListenerLinkRepliesAndReportsUnroutable) {
  zmq::context_t ctx;
  Recorder rec;
  auto loop = PollLoop::Start(ctx, rec.Callbacks());
  ASSERT_TRUE(loop.ok());
  auto l = Listener::Bind(ctx, "tcp://127.0.0.1:*", PlainSecurity());
  ASSERT_TRUE(l.ok());
  const std::string endpoint = (*l)->endpoint();
  auto link = (*loop)->AddListener(std::move(*l));
  ASSERT_TRUE(link.ok());
  auto c = Connection::Connect(ctx, endpoint, "node-b", PlainSecurity());
  ASSERT_TRUE(c.ok());
  Frames hi = TextMessage("hi");
  ASSERT_TRUE((*c)->Send(hi).ok());
  Recorder::Item got;
  ASSERT_TRUE(rec.NextMessage(&got, 5000));
  EXPECT_EQ(got.link, *link);
  EXPECT_EQ(got.peer, "node-b");
  EXPECT_EQ(got.text, "hi");

  auto outbox = (*loop)->OpenOutbox(*link);
  ASSERT_TRUE(outbox.ok());
  Frames reply = TextMessage("hello node-b");
  ASSERT_TRUE((*outbox)->Send("node-b", reply).ok());
  auto back = (*c)->Receive(5000);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(MessageText(*back), "hello node-b");

  Frames lost = TextMessage("to nobody");
  ASSERT_TRUE((*outbox)->Send("ghost", lost).ok());  // accepted by the outbox...
  Recorder::Item err;
  ASSERT_TRUE(rec.NextError(&err, 5000));  // ...and reported by the loop
  EXPECT_EQ(err.link, *link);
  EXPECT_EQ(err.peer, "ghost");
  EXPECT_NE(err.text.find("NOT_FOUND"), std::string::npos) << err.text;

  auto counters = (*loop)->Counters(*link);
  ASSERT_TRUE(counters.ok()) << counters.status().ToString();
  EXPECT_GE(counters->accepted, 1u);
}

// The receiver never reads: the producer's outbox reports would-block after a
// bounded number of messages; once the receiver drains, all of them arrive.
TEST(PollLoop, BackpressureReachesTheProducer) {
  zmq::context_t ctx;
  const LinkOptions small = SmallLink();
  auto l = Listener::Bind(ctx, "tcp://127.0.0.1:*", PlainSecurity(), small);
  ASSERT_TRUE(l.ok());
  Recorder rec;
  PollLoopOptions lo;
  lo.outbox_hwm = 4;
  auto loop = PollLoop::Start(ctx, rec.Callbacks(), lo);
  ASSERT_TRUE(loop.ok());
  auto c = Connection::Connect(ctx, (*l)->endpoint(), "node-a", PlainSecurity(), "", small);
  ASSERT_TRUE(c.ok());
  auto link = (*loop)->AddConnection(std::move(*c));
  ASSERT_TRUE(link.ok());
  auto outbox = (*loop)->OpenOutbox(*link);
  ASSERT_TRUE(outbox.ok());

  uint64_t sent = 0;
  Status st;
  while (sent < 100000) {
    Frames step = MakeStep(sent, kRowBf16Bytes);
    st = (*outbox)->Send("", step);
    // Blocked for 300 ms on end: that is backpressure, not a slow loop.
    for (int i = 0; i < 300 && IsWouldBlock(st); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      st = (*outbox)->Send("", step);
    }
    if (IsWouldBlock(st)) break;
    ASSERT_TRUE(st.ok()) << st.ToString();
    ++sent;
  }
  ASSERT_TRUE(IsWouldBlock(st)) << "no backpressure after " << sent;
  EXPECT_LT(sent, 2000u);
  RecordProperty("sent_before_would_block", static_cast<int>(sent));
  for (uint64_t i = 0; i < sent; ++i) {
    auto in = (*l)->Receive(10000);
    ASSERT_TRUE(in.ok()) << "lost step " << i;
    Status check = CheckStep(in->frames, i, kRowBf16Bytes);
    ASSERT_TRUE(check.ok()) << check.ToString() << " (sent " << sent << ")";
  }
  Frames next = MakeStep(sent, kRowBf16Bytes);
  EXPECT_TRUE(SendRetrying(**outbox, "", next).ok());
  auto in = (*l)->Receive(10000);
  ASSERT_TRUE(in.ok());
  EXPECT_TRUE(CheckStep(in->frames, sent, kRowBf16Bytes).ok());
  Recorder::Item err;
  EXPECT_FALSE(rec.NextError(&err, 0));
}

TEST(PollLoop, RemovedLinkAndBadIds) {
  zmq::context_t ctx;
  Recorder rec;
  auto loop = PollLoop::Start(ctx, rec.Callbacks());
  ASSERT_TRUE(loop.ok());
  auto c = Connection::Connect(ctx, "tcp://127.0.0.1:1", "node-a", PlainSecurity());
  ASSERT_TRUE(c.ok());
  auto link = (*loop)->AddConnection(std::move(*c));
  ASSERT_TRUE(link.ok());
  auto outbox = (*loop)->OpenOutbox(*link);
  ASSERT_TRUE(outbox.ok());
  ASSERT_TRUE((*loop)->RemoveLink(*link).ok());
  Frames f = TextMessage("x");
  EXPECT_EQ((*outbox)->Send("", f).code(), StatusCode::kNotFound);
  EXPECT_EQ((*loop)->OpenOutbox(*link).status().code(), StatusCode::kNotFound);
  EXPECT_EQ((*loop)->OpenOutbox(999).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*loop)->Counters(*link).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE((*loop)->AddConnection(nullptr).ok());
  Frames empty;
  auto c2 = Connection::Connect(ctx, "tcp://127.0.0.1:1", "node-b", PlainSecurity());
  auto link2 = (*loop)->AddConnection(std::move(*c2));
  auto outbox2 = (*loop)->OpenOutbox(*link2);
  ASSERT_TRUE(outbox2.ok());
  EXPECT_EQ((*outbox2)->Send("", empty).code(), StatusCode::kInvalidArgument);
}

// Stopping with messages still queued neither hangs nor leaks: zero-copy
// buffers are released.
TEST(PollLoop, StopDropsQueuedMessagesAndReleasesBuffers) {
  zmq::context_t ctx;
  Recorder rec;
  auto loop = PollLoop::Start(ctx, rec.Callbacks());
  ASSERT_TRUE(loop.ok());
  // Nobody listens there: messages queue in the link.
  auto c = Connection::Connect(ctx, "tcp://127.0.0.1:1", "node-a", PlainSecurity());
  ASSERT_TRUE(c.ok());
  auto link = (*loop)->AddConnection(std::move(*c));
  auto outbox = (*loop)->OpenOutbox(*link);
  ASSERT_TRUE(outbox.ok());
  auto buffer = std::make_shared<std::vector<uint8_t>>(1 << 16, 1);
  std::weak_ptr<std::vector<uint8_t>> watch = buffer;
  for (int i = 0; i < 4; ++i) {
    Frames frames;
    frames.push_back(SharedFrame(buffer, buffer->data(), buffer->size()));
    ASSERT_TRUE((*outbox)->Send("", frames).ok());
  }
  buffer.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  (*outbox).reset();
  (*loop)->Stop();
  (*loop)->Stop();  // idempotent
  EXPECT_FALSE((*loop)->AddConnection(nullptr).ok());
  for (int i = 0; i < 200 && !watch.expired(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(watch.expired());
}

// What a callback sends goes onto the link in the same pass, after what the
// link's outboxes had already handed over: an outbox message sent in that
// same callback (still in the channel) arrives first.
TEST(PollLoop, LoopThreadSendsHereBehindItsOutboxes) {
  zmq::context_t ctx;
  auto l = Listener::Bind(ctx, "tcp://127.0.0.1:*", PlainSecurity());
  ASSERT_TRUE(l.ok());
  std::atomic<PollLoop*> loop_ptr{nullptr};
  std::atomic<LinkId> link_id{0};
  std::mutex mu;
  std::vector<std::string> results;  // what the callback saw, in order
  PollLoopCallbacks cb;
  cb.on_message = [&](LinkId link, Inbound&& in) {
    PollLoop* loop = loop_ptr.load();
    std::lock_guard<std::mutex> lock(mu);
    results.push_back("on loop thread: " + std::to_string(loop->OnLoopThread()));
    auto outbox = loop->OpenOutbox(link);
    Frames first = TextMessage("through the outbox");
    results.push_back((*outbox)->Send("", first).ToString());
    Frames second = TextMessage("here (" + MessageText(in.frames) + ")");
    results.push_back(loop->SendHere(link, "", second).ToString());
    Outbound outbound(loop);
    results.push_back(outbound.Send(link, "", TextMessage("through an Outbound")).ToString());
    results.push_back(outbound.HasQueued() ? "queued" : "not queued");
    Frames none;
    results.push_back(loop->SendHere(link, "", none).ToString());
    Frames lost = TextMessage("x");
    results.push_back(loop->SendHere(link + 100, "", lost).ToString());
  };
  auto loop = PollLoop::Start(ctx, cb);
  ASSERT_TRUE(loop.ok());
  loop_ptr = loop->get();
  EXPECT_FALSE((*loop)->OnLoopThread());
  Frames from_here = TextMessage("x");
  EXPECT_EQ((*loop)->SendHere(1, "", from_here).code(), StatusCode::kInvalidArgument);  // not the loop's thread
  auto c = Connection::Connect(ctx, (*l)->endpoint(), "node-a", PlainSecurity());
  ASSERT_TRUE(c.ok());
  auto link = (*loop)->AddConnection(std::move(*c));
  ASSERT_TRUE(link.ok());
  link_id = *link;
  Frames hello = TextMessage("hello");
  auto outbox = (*loop)->OpenOutbox(*link);
  ASSERT_TRUE((*outbox)->Send("", hello).ok());  // the listener learns node-a's routing id
  auto in = (*l)->Receive(5000);
  ASSERT_TRUE(in.ok());
  Frames go = TextMessage("go");
  ASSERT_TRUE((*l)->Send("node-a", go).ok());
  std::vector<std::string> got;
  for (int i = 0; i < 3; ++i) {
    auto m = (*l)->Receive(5000);
    ASSERT_TRUE(m.ok()) << "message " << i;
    got.push_back(MessageText(m->frames));
  }
  EXPECT_EQ(got, (std::vector<std::string>{"through the outbox", "here (go)", "through an Outbound"}));
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(results.size(), 7u);
  EXPECT_EQ(results[0], "on loop thread: 1");
  EXPECT_EQ(results[1], "OK");
  EXPECT_EQ(results[2], "OK");
  EXPECT_EQ(results[3], "OK");
  EXPECT_EQ(results[4], "not queued");
  EXPECT_NE(results[5].find("INVALID_ARGUMENT"), std::string::npos) << results[5];
  EXPECT_NE(results[6].find("NOT_FOUND"), std::string::npos) << results[6];
}

// A link with no room: SendHere holds one message for it (as the loop holds
// an outbox's), says would-block for the next, and the held one still goes
// first, in order, once the receiver reads.
TEST(PollLoop, SendHereOnAFullLinkHoldsOneAndPushesBack) {
  zmq::context_t ctx;
  const LinkOptions small = SmallLink();
  auto l = Listener::Bind(ctx, "tcp://127.0.0.1:*", PlainSecurity(), small);
  ASSERT_TRUE(l.ok());
  std::atomic<PollLoop*> loop_ptr{nullptr};
  std::atomic<uint64_t> sent{0};
  std::atomic<bool> pushed_back{false};
  PollLoopCallbacks cb;
  cb.on_message = [&](LinkId link, Inbound&&) {
    PollLoop* loop = loop_ptr.load();
    while (sent < 100000) {
      Frames step = MakeStep(sent, kRowBf16Bytes);
      Status st = loop->SendHere(link, "", step);
      if (IsWouldBlock(st)) {
        pushed_back = true;
        return;
      }
      if (!st.ok()) return;
      ++sent;
    }
  };
  auto loop = PollLoop::Start(ctx, cb);
  ASSERT_TRUE(loop.ok());
  loop_ptr = loop->get();
  auto c = Connection::Connect(ctx, (*l)->endpoint(), "node-a", PlainSecurity(), "", small);
  ASSERT_TRUE(c.ok());
  auto link = (*loop)->AddConnection(std::move(*c));
  ASSERT_TRUE(link.ok());
  auto outbox = (*loop)->OpenOutbox(*link);
  Frames hello = TextMessage("hello");
  ASSERT_TRUE((*outbox)->Send("", hello).ok());
  auto first = (*l)->Receive(5000);
  ASSERT_TRUE(first.ok());
  Frames go = TextMessage("go");
  ASSERT_TRUE((*l)->Send("node-a", go).ok());
  for (int i = 0; i < 500 && !pushed_back; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(pushed_back) << "no backpressure after " << sent;
  EXPECT_LT(sent.load(), 2000u);
  for (uint64_t i = 0; i < sent; ++i) {
    auto in = (*l)->Receive(10000);
    ASSERT_TRUE(in.ok()) << "lost step " << i << " of " << sent;
    Status check = CheckStep(in->frames, i, kRowBf16Bytes);
    ASSERT_TRUE(check.ok()) << check.ToString();
  }
}

}  // namespace
}  // namespace troupe::transport
