// ZapHandler: decides which CURVE peers may connect to this process's
// listeners (ZAP 1.0, ZeroMQ RFC 27).
//
// libzmq asks the handler bound at inproc://zeromq.zap.01 in the socket's own
// context about every incoming CURVE handshake. The handler holds one
// allowlist per ZAP domain (a listener names its domain: node links
// "troupe", a head's job endpoint "troupe-jobs", security.h), so a key
// allowed on one listener is refused on another. It answers
//   200 for the CURVE mechanism, a configured domain and a client public key
//       in that domain's allowlist (user id = the key in Z85), and
//   400 for everything else (unknown key, other mechanism, other domain),
// and counts both. Every refusal is also reported, with the peer's address
// and key and the reason, to an optional callback (on the handler's thread;
// it must not block): a refused node otherwise only sees its messages go
// nowhere. Together with ZMQ_ZAP_ENFORCE_DOMAIN on every socket
// (security.h) this fails closed: with no handler running, CURVE handshakes
// are refused, not accepted.
//
// Threading: the handler runs on its own thread, started by Start() and
// joined by Stop() or the destructor, so a busy or blocked I/O loop never
// stalls handshakes. Its sockets (the REP and a stop pipe) have linger 0.
// Start it before binding any CURVE listener in the same context; stop it
// after those listeners are closed and before the context is destroyed.
// counters() and Stop() may be called from any thread.
//
// Failures: Start() fails (InvalidArgument) when another handler is already
// bound in the context, or when there is no domain or an empty allowlist.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <zmq.hpp>

#include "pipeline/status.h"
#include "transport/keys.h"

namespace troupe::transport {

inline constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";

// For metrics: how many handshakes the handler let through and turned away.
struct ZapCounters {
  uint64_t accepted = 0;
  uint64_t rejected = 0;  // all refusals; the two below are part of it
  uint64_t rejected_unknown_key = 0;
  uint64_t rejected_malformed = 0;  // bad version, mechanism, domain or frame count
};

// One refused handshake.
struct ZapRefusal {
  std::string domain;      // the listener's ZAP domain ("troupe", "troupe-jobs")
  std::string address;     // the peer's IP address, as libzmq gives it
  std::string public_key;  // the peer's CURVE key (Z85); empty when it sent none
  std::string reason;      // "public key not in allowlist", "CURVE required", ...
};
using ZapRefusalFn = std::function<void(const ZapRefusal&)>;

class ZapHandler {
 public:
  static Result<std::unique_ptr<ZapHandler>> Start(zmq::context_t& context, Allowlist allowlist,
                                                   std::string domain = "troupe");
  // One allowlist per ZAP domain; `on_refused` (optional) hears of every refusal.
  static Result<std::unique_ptr<ZapHandler>> Start(zmq::context_t& context, std::map<std::string, Allowlist> domains,
                                                   ZapRefusalFn on_refused = {});
  ~ZapHandler();  // Stop()
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  // Unbinds the handler and joins its thread. Idempotent. Afterwards, CURVE
  // handshakes in this context are refused (enforce domain).
  void Stop();

  ZapCounters counters() const;

 private:
  ZapHandler(zmq::context_t& context, std::map<std::string, Allowlist> domains, ZapRefusalFn on_refused);
  void Run();
  // Answers one request (the frames after REP removed the envelope).
  void Answer(std::vector<zmq::message_t>& request);

  zmq::context_t& context_;
  const std::map<std::string, Allowlist> domains_;
  const ZapRefusalFn on_refused_;
  std::string stop_endpoint_;
  zmq::socket_t rep_;        // owned by the handler thread once it runs
  zmq::socket_t stop_recv_;  // handler thread
  std::mutex stop_mu_;
  zmq::socket_t stop_send_;  // guarded by stop_mu_
  std::thread thread_;
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> rejected_unknown_key_{0};
  std::atomic<uint64_t> rejected_malformed_{0};
};

}  // namespace troupe::transport
