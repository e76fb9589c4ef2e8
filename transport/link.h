// Links between nodes: a Listener (ROUTER, bound) that many peers connect
// to, and a Connection (DEALER, routing id = this node's id) to one listener.
//
//   node A Connection ──DEALER "A"──▶ ROUTER Listener of node B
//                      ◀── replies addressed to "A" ──
//
// Both set the options Troupe relies on (LinkOptions): small send/receive
// high-water marks, so a slow peer pushes back within a few dozen messages
// instead of growing queues; ZMQ_MAXMSGSIZE, so an oversized frame drops that
// peer's connection before it is buffered (the listener keeps serving the
// others); linger 0, so closing never blocks on undelivered messages (they
// are dropped: wait for an application-level ack first if they matter). The
// listener sets ROUTER_MANDATORY, so a message to an unknown peer is reported
// (IsUnroutable) instead of vanishing, and ROUTER_HANDOVER, so a node that
// restarts and reconnects with its id takes it over at once. (Any
// allowlisted peer may claim any id; Inbound::user_id carries the sender's
// CURVE key so the layer above can bind node ids to keys.)
//
// Security (security.h): with config.curve the listener is a CURVE server and
// the connection a CURVE client; a ZapHandler must run in the same context
// or every handshake is refused. The listener refuses a plain bind on a
// non-loopback address unless config.insecure (CheckBindAllowed). When a
// listener refuses a connection's handshake (unknown key, plain vs CURVE),
// libzmq 4.3.4 does not retry it: the connection reports auth_failures in its
// counters and would-block from then on; make a new Connection to try again.
//
// Sends never block: they report would-block or unroutable (frames.h) and
// leave the frames with the caller. Receives wait at most the given timeout.
//
// Ownership and threads: a link owns its socket and monitor; like every
// ZeroMQ socket it must be used by one thread at a time (hand it to a
// PollLoop, or keep it on one thread). Destroy links before their context.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <zmq.hpp>

#include "pipeline/status.h"
#include "transport/frames.h"
#include "transport/monitor.h"
#include "transport/security.h"

namespace troupe::transport {

struct LinkOptions {
  int send_hwm = 32;                             // messages queued per peer before would-block
  int receive_hwm = 32;                          // messages buffered per peer before TCP pushes back
  int64_t max_message_size = int64_t{64} << 20;  // bytes per frame; larger frames drop the peer
  int kernel_buffer_bytes = 0;                   // ZMQ_SNDBUF/RCVBUF; 0 = OS default
  int handshake_timeout_ms = 5000;               // a peer that does not finish the handshake is dropped
  int reconnect_interval_ms = 100;               // DEALER: first reconnect delay...
  int reconnect_interval_max_ms = 2000;          // ...doubling up to this
  // ZMTP heartbeats, off by default: a receiver that stops reading (real
  // backpressure) also stops reading PONGs, so the sender would drop a
  // healthy-but-busy link after the timeout and lose the messages in flight.
  // Dead peers are found by TCP keepalive below and by Troupe's own
  // application-level heartbeats.
  int heartbeat_interval_ms = 0;  // ZMTP PING interval; 0 = off
  int heartbeat_timeout_ms = 0;   // must exceed the interval when on
  int tcp_keepalive_idle_s = 30;  // TCP keepalive (kernel; works while stalled); 0 = OS default
  bool monitor = true;            // keep LinkCounters (SocketMonitor)
};

// Checks ranges (HWMs >= 1, sizes > 0...). InvalidArgument naming the field.
Status ValidateLinkOptions(const LinkOptions& options);

// A message received by a listener: who sent it, and its frames.
struct Inbound {
  std::string peer;     // the sender's routing id (its node id)
  std::string user_id;  // CURVE: the sender's public key (Z85) as the ZAP handler
                        // approved it; plain mode: empty
  Frames frames;
};

class Listener {
 public:
  // Binds a ROUTER on `endpoint` ("tcp://127.0.0.1:*" picks a free port,
  // "ipc:///path"). Fails with InvalidArgument for refused plain binds or bad
  // options/keys, IoError when the address cannot be bound.
  static Result<std::unique_ptr<Listener>> Bind(zmq::context_t& context, const std::string& endpoint,
                                                const SecurityConfig& security, const LinkOptions& options = {});
  ~Listener();  // detaches the monitor, then closes the socket (monitor.h)
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // The endpoint actually bound ("tcp://127.0.0.1:41234").
  const std::string& endpoint() const { return endpoint_; }

  // Sends `frames` to the peer with routing id `peer`, without waiting.
  // OK (frames consumed), would-block, unroutable, InvalidArgument, IoError.
  Status Send(const std::string& peer, Frames& frames);

  // Waits up to `timeout_ms` (0: no wait, -1: forever) for one message.
  // Would-block (kUnavailable) when nothing arrived within the timeout, as
  // when nothing is queued for timeout 0; IoError, Corrupt otherwise.
  Result<Inbound> Receive(int timeout_ms);

  // Connection events so far (drains the monitor). Zero when options.monitor is off.
  LinkCounters counters();
  std::vector<LinkEvent> DrainEvents();

  zmq::socket_t& socket() { return socket_; }
  SocketMonitor* monitor() { return monitor_.get(); }
  const LinkOptions& options() const { return options_; }

 private:
  Listener(zmq::context_t& context, const LinkOptions& options);
  zmq::socket_t socket_;
  std::unique_ptr<SocketMonitor> monitor_;
  LinkOptions options_;
  std::string endpoint_;
};

class Connection {
 public:
  // Connects a DEALER with routing id `node_id` to `endpoint`. In curve mode
  // `server_public_key` is the listener's public key (Z85); in plain mode it
  // must be empty. Connecting is asynchronous: this returns at once and
  // ZeroMQ keeps (re)connecting in the background; messages sent meanwhile
  // queue up to the send HWM. InvalidArgument for a bad node id (empty,
  // longer than 255 bytes, or starting with a zero byte), options or keys;
  // IoError for a malformed endpoint.
  static Result<std::unique_ptr<Connection>> Connect(zmq::context_t& context, const std::string& endpoint,
                                                     const std::string& node_id, const SecurityConfig& security,
                                                     const std::string& server_public_key = "",
                                                     const LinkOptions& options = {});
  ~Connection();  // detaches the monitor, then closes the socket (monitor.h)
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const std::string& endpoint() const { return endpoint_; }
  const std::string& node_id() const { return node_id_; }

  // Sends `frames` to the listener without waiting. OK (frames consumed),
  // would-block, InvalidArgument, IoError.
  Status Send(Frames& frames);

  // Waits up to `timeout_ms` for one message from the listener. Would-block
  // (kUnavailable) when none arrived, as for the listener's Receive.
  Result<Frames> Receive(int timeout_ms);

  // Waits up to `timeout_ms` until a send would not block (the queue has room).
  // OK, DeadlineExceeded when the queue is still full then, IoError.
  Status WaitWritable(int timeout_ms);

  LinkCounters counters();
  std::vector<LinkEvent> DrainEvents();

  zmq::socket_t& socket() { return socket_; }
  SocketMonitor* monitor() { return monitor_.get(); }
  const LinkOptions& options() const { return options_; }

 private:
  Connection(zmq::context_t& context, const LinkOptions& options);
  zmq::socket_t socket_;
  std::unique_ptr<SocketMonitor> monitor_;
  LinkOptions options_;
  std::string endpoint_;
  std::string node_id_;
};

}  // namespace troupe::transport
