// Tearing links down while their connections are still being made — what a
// node did whenever one peer was dialled at two addresses ("a shard goes
// permanently deaf", issue 10 item 6): libzmq's I/O thread writes monitor
// events with a blocking send, so a monitor closed before its socket could
// block that thread for good, and every socket of the context with it.
// After many such teardowns a fresh link must still make a round trip.
#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "tests/transport/step_messages.h"
#include "transport/keys.h"
#include "transport/link.h"
#include "transport/zap_handler.h"

namespace troupe::transport {
namespace {

using testing::MessageText;
using testing::TextMessage;

CurveKeyPair NewKeys() {
  auto k = GenerateKeyPair();
  EXPECT_TRUE(k.ok());
  return *k;
}

// True when a fresh connection in `ctx` gets "ping" to `listener` and back
// within `ms` (run on another thread: a blocked I/O thread must not hang the test).
bool RoundTrip(zmq::context_t& ctx, Listener& listener, const SecurityConfig& client, const std::string& server_key,
               int ms) {
  auto done = std::make_shared<std::promise<bool>>();
  std::future<bool> answer = done->get_future();
  std::thread([&ctx, &listener, client, server_key, ms, done] {
    auto c = Connection::Connect(ctx, listener.endpoint(), "fresh", client, server_key);
    if (!c.ok()) return done->set_value(false);
    Frames ping = TextMessage("ping");
    if (!(*c)->Send(ping).ok()) return done->set_value(false);
    // Skip what the dropped connections sent and ZeroMQ still delivers.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    Result<Inbound> in = Status::Unavailable("nothing yet");
    while (std::chrono::steady_clock::now() < deadline) {
      in = listener.Receive(50);
      if (in.ok() && in->peer == "fresh") break;
    }
    if (!in.ok() || in->peer != "fresh" || MessageText(in->frames) != "ping") return done->set_value(false);
    Frames pong = TextMessage("pong");
    if (!listener.Send(in->peer, pong).ok()) return done->set_value(false);
    auto back = (*c)->Receive(ms);
    done->set_value(back.ok() && MessageText(*back) == "pong");
  }).detach();
  if (answer.wait_for(std::chrono::milliseconds(2 * ms + 1000)) != std::future_status::ready) return false;
  return answer.get();
}

TEST(LinkTeardown, ConnectionsDroppedMidHandshakeNeverStallTheContext) {
  // Leaked on failure: a context whose I/O thread is blocked cannot be destroyed.
  auto* ctx = new zmq::context_t;
  CurveKeyPair server = NewKeys(), client = NewKeys();
  SecurityConfig server_config;
  server_config.curve = true;
  server_config.keys = server;
  ASSERT_TRUE(server_config.allowlist.Add(client.public_key).ok());
  SecurityConfig client_config;
  client_config.curve = true;
  client_config.keys = client;
  ASSERT_TRUE(client_config.allowlist.Add(server.public_key).ok());
  auto zap = ZapHandler::Start(*ctx, server_config.allowlist);
  ASSERT_TRUE(zap.ok());
  auto l = Listener::Bind(*ctx, "tcp://127.0.0.1:*", server_config);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  // Dial and drop, at every moment of the handshake: before TCP is up,
  // during CURVE, just after. Each connection's monitor sees events then.
  for (int i = 0; i < 300; ++i) {
    auto c = Connection::Connect(*ctx, (*l)->endpoint(), "flapper", client_config, server.public_key);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    Frames hello = TextMessage("hello");
    (void)(*c)->Send(hello);
    std::this_thread::sleep_for(std::chrono::microseconds((i * 37) % 1500));
    c->reset();
    while ((*l)->Receive(0).ok()) {
    }
  }
  const bool alive = RoundTrip(*ctx, **l, client_config, server.public_key, 5000);
  ASSERT_TRUE(alive) << "a fresh connection made no round trip after 300 dropped ones: the context's I/O "
                        "thread is blocked";
  l->reset();
  zap->reset();
  delete ctx;
}

}  // namespace
}  // namespace troupe::transport
