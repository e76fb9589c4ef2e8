// Links: one link per node id whatever address names it ("a shard goes
// permanently deaf", issue 10 item 6: a head named at one address in a
// shard's peers and advertised at another) — messages sent while the two
// addresses alternate all arrive over one link; a peer that really moved is
// dialled at its new address once the old link has been down long enough.
#include "transport/links.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "tests/transport/step_messages.h"

namespace troupe::transport {
namespace {

using testing::MessageText;
using testing::TextMessage;

// A poll loop whose events go to Links and whose messages are recorded.
class Harness {
 public:
  explicit Harness(int redial_after_ms) {
    PollLoopCallbacks cb;
    cb.on_message = [this](LinkId, Inbound&& in) {
      std::lock_guard<std::mutex> lock(mu_);
      received_.push_back(MessageText(in.frames));
      cv_.notify_all();
    };
    cb.on_event = [this](LinkId link, const LinkEvent& e) {
      if (Links* l = links_.load()) (void)l->OnEvent(link, e);
    };
    auto loop = PollLoop::Start(context_, cb);
    EXPECT_TRUE(loop.ok());
    loop_ = std::move(*loop);
    LinksConfig config;
    config.node_id = "shard-1";
    config.security = PlainSecurity(/*insecure=*/true);
    config.redial_after_ms = redial_after_ms;
    config.log = [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mu_);
      log_.push_back(line);
    };
    owned_ = std::make_unique<Links>(context_, *loop_, config);
    links_.store(owned_.get());
  }
  ~Harness() {
    loop_->Stop();
    links_.store(nullptr);
  }

  Links& links() { return *owned_; }
  PollLoop& loop() { return *loop_; }

  // Binds a listener on `endpoint` and hands it to the loop; its bound port.
  int Listen(const std::string& endpoint, LinkId* id) {
    auto l = links().Bind(endpoint, PlainSecurity(true));
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    const std::string bound = (*l)->endpoint();
    auto added = loop_->AddListener(std::move(*l));
    EXPECT_TRUE(added.ok());
    *id = *added;
    return std::stoi(bound.substr(bound.rfind(':') + 1));
  }

  // Sends `text` over the link ConnectTo(node, endpoint) gives.
  LinkId Send(const std::string& node, const std::string& endpoint, const std::string& text) {
    auto link = links().ConnectTo(node, endpoint);
    EXPECT_TRUE(link.ok()) << link.status().ToString();
    auto box = loop_->OpenOutbox(*link);
    EXPECT_TRUE(box.ok()) << box.status().ToString();
    Frames m = TextMessage(text);
    EXPECT_TRUE((*box)->Send("", m).ok());
    return *link;
  }

  // Waits until `n` messages arrived (or `ms` passed); what arrived.
  std::multiset<std::string> Received(size_t n, int ms) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return received_.size() >= n; });
    return std::multiset<std::string>(received_.begin(), received_.end());
  }
  std::vector<std::string> log() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }

 private:
  zmq::context_t context_;
  std::unique_ptr<PollLoop> loop_;
  std::unique_ptr<Links> owned_;
  std::atomic<Links*> links_{nullptr};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> received_;
  std::vector<std::string> log_;
};

TEST(Links, TwoAddressesOfOneNodeShareOneLink) {
  Harness h(/*redial_after_ms=*/5000);
  LinkId listener = 0;
  // The head listens on every address; the shard names it at two.
  const int port = h.Listen("tcp://0.0.0.0:*", &listener);
  const std::string a = "tcp://127.0.0.1:" + std::to_string(port);
  const std::string b = "tcp://127.0.0.2:" + std::to_string(port);
  std::set<LinkId> used;
  std::multiset<std::string> sent;
  for (int i = 0; i < 60; ++i) {
    const std::string text = "m" + std::to_string(i);
    used.insert(h.Send("head", i % 2 ? b : a, text));  // heartbeat at one, step at the other
    sent.insert(text);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(h.Received(sent.size(), 10000), sent) << "messages were lost between the two addresses";
  EXPECT_EQ(used.size(), 1u) << "the link was torn down and re-dialled";
  EXPECT_EQ(h.links().redials(), 0u);
  const std::vector<std::string> log = h.log();
  ASSERT_EQ(log.size(), 1u) << "the other address is said once";
  EXPECT_NE(log[0].find("node 'head' is also named at " + b), std::string::npos) << log[0];
}

TEST(Links, APeerThatMovedIsDialledAtItsNewAddressOnceTheOldLinkIsLost) {
  Harness h(/*redial_after_ms=*/5000);
  LinkId old_listener = 0, new_listener = 0;
  const std::string old_ep = "tcp://127.0.0.1:" + std::to_string(h.Listen("tcp://127.0.0.1:*", &old_listener));
  const LinkId first = h.Send("head", old_ep, "before");
  ASSERT_EQ(h.Received(1, 5000).count("before"), 1u);
  // The head restarts elsewhere: the link that was up goes down.
  ASSERT_TRUE(h.loop().RemoveLink(old_listener).ok());
  const std::string new_ep = "tcp://127.0.0.1:" + std::to_string(h.Listen("tcp://127.0.0.1:*", &new_listener));
  const auto lost_by = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  LinkId moved = first;
  while (moved == first && std::chrono::steady_clock::now() < lost_by) {  // until the disconnect is seen
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto now = h.links().ConnectTo("head", new_ep);
    ASSERT_TRUE(now.ok());
    moved = *now;
  }
  ASSERT_NE(moved, first) << "the lost link was kept";
  EXPECT_EQ(h.Send("head", new_ep, "after"), moved);
  EXPECT_NE(moved, first);
  EXPECT_EQ(h.Received(2, 5000).count("after"), 1u);
  EXPECT_EQ(h.links().redials(), 1u);
  bool said = false;
  for (const std::string& line : h.log()) said |= line.find("dialling " + new_ep) != std::string::npos;
  EXPECT_TRUE(said);
  // And it stays there: the old name no longer moves it back while it is up.
  auto again = h.links().ConnectTo("head", old_ep);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, moved);
}

}  // namespace
}  // namespace troupe::transport
