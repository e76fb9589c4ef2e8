// SocketMonitor: what happened to a socket's connections — accepted,
// disconnected, handshakes that succeeded or were refused — as events and
// counters for logs and /metrics.
//
// Protocol failures (garbage bytes, mismatched security, a tampered CURVE
// box) show up as disconnects: ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL is
// deliberately not watched. In libzmq 4.3.4 emitting that event to a monitor
// can overwrite errno with EAGAIN between the failed decode and the engine's
// check of it, and the engine then stalls the connection it should drop
// (seen with a tampered frame: no disconnect, the peer hung). Without the
// subscription the event is never emitted and the connection is dropped.
//
// Wraps zmq_socket_monitor: the watched socket publishes events on a private
// inproc:// endpoint and the monitor reads them from a PAIR socket. libzmq
// 4.3.4 writes each event from its own I/O thread with a *blocking* send, so
// two things must never happen, or that thread — and every socket of the
// context with it — stops for good:
//   * events piling up past the pipe's high-water mark (~2000): the owner
//     drains them regularly — the links whenever their counters are read, a
//     poll loop whenever the monitor socket is readable;
//   * the reader closing while the watched socket can still emit (a
//     connection torn down mid-handshake does): Detach() the watched socket
//     first, while it is open, then close it, then destroy the monitor.
//     Listener and Connection (link.h) do this in their destructors.
//
// Thread-safety: none; the monitor belongs to the thread that owns the
// watched socket. Destroy it before the context.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "pipeline/status.h"

namespace troupe::transport {

enum class LinkEventKind {
  kConnected,            // our DEALER reached its listener (TCP up)
  kAccepted,             // a peer connected to our listener (TCP up)
  kDisconnected,         // a connection closed or was dropped (bad frame, too large...)
  kHandshakeSucceeded,   // ZMTP (and CURVE) handshake done: messages may flow
  kHandshakeFailedAuth,  // refused by ZAP (value: status code, e.g. 400)
  kHandshakeFailed,      // timed out or broke during the handshake (value: errno)
  kOther,
};

struct LinkEvent {
  LinkEventKind kind = LinkEventKind::kOther;
  uint32_t value = 0;
  std::string endpoint;
  std::string ToString() const;  // "handshake refused by ZAP (400) on tcp://127.0.0.1:5555"
};

struct LinkCounters {
  uint64_t connected = 0;
  uint64_t accepted = 0;
  uint64_t disconnected = 0;
  uint64_t handshakes_succeeded = 0;
  uint64_t auth_failures = 0;       // the peer's key was refused / our key was refused
  uint64_t handshake_failures = 0;  // handshake timed out or the connection broke during it
};

class SocketMonitor {
 public:
  // Starts monitoring `socket` (which must outlive the Attach call only).
  static Result<std::unique_ptr<SocketMonitor>> Attach(zmq::context_t& context, zmq::socket_t& socket);
  SocketMonitor(const SocketMonitor&) = delete;
  SocketMonitor& operator=(const SocketMonitor&) = delete;

  // Reads every queued event without waiting and adds them to the counters.
  std::vector<LinkEvent> Drain();
  const LinkCounters& counters() const { return counters_; }
  // Stops `watched` (the socket given to Attach, still open) from emitting
  // events, synchronously: afterwards no libzmq thread writes to this
  // monitor. Drains what was queued first. Idempotent.
  void Detach(zmq::socket_t& watched);
  // The PAIR socket events arrive on, for a poll loop.
  zmq::socket_t& socket() { return pair_; }

 private:
  explicit SocketMonitor(zmq::context_t& context);
  zmq::socket_t pair_;
  LinkCounters counters_;
  bool attached_ = false;
};

}  // namespace troupe::transport
