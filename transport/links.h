// Links: the sockets of one node, all owned by its PollLoop — the node
// listener (ROUTER, where peers send steps and session messages), the job
// listener on a head (ROUTER, where clients submit jobs), and one connection
// (DEALER, routing id = this node's id) per peer node this node sends to.
//
// Connections are made on first use: ConnectTo(node, endpoint) returns the
// existing link to that node or dials it (with the peer's CURVE public key
// from the config, or learned with LearnKey, in curve mode).
//
// One link per node id, whatever address it is named by. A node is often
// named at two addresses — a shard's `peers` dial the head at one (a DNS
// name, a second IP, a NAT address), routes carry the address the head
// advertises — so a ConnectTo with another endpoint is not a reason to
// re-dial (doing so on every heartbeat and every step once tore links down
// mid-handshake, and lost the messages queued on them):
//
//   link up (handshake done, no disconnect since)  -> keep it; the other
//                                                     address is logged once
//   link lost (it was up, then disconnected)        -> dial the new address
//     at once: the peer stopped or moved (a node started again elsewhere,
//     or on another port, after a drain)
//   link not up yet, dialled less than redial_after_ms ago -> keep it
//     (ZeroMQ retries; tearing it down mid-handshake is what made shards deaf)
//   link not up yet for redial_after_ms or more     -> dial the new address
//   (each redial counted in redials(), logged)
//
// so a peer that really moved is found at once or within redial_after_ms,
// and two addresses of a live peer never alternate. Link state comes from the poll
// loop's connection events: its owner passes every on_event to OnEvent.
//
// Trouble: a link whose peer refused this node's key (ZAP 400: this node is
// not in that node's allowlist), or whose handshake failed kFailuresForTrouble
// times in a row without ever succeeding (a wrong public key for the peer,
// a peer without CURVE), is in trouble until a handshake succeeds. OnEvent
// says when a link falls into trouble or leaves it (logged too); Troubles()
// lists the links in trouble now. libzmq does not retry a refused handshake,
// so a refused link is re-dialled (same address) every redial_after_ms.
//
// Thread-safety: every method may be called from any thread (a mutex guards
// the maps); the sockets themselves only ever live on the loop thread. The
// log callback runs on the calling thread, outside the mutex.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "pipeline/status.h"
#include "transport/link.h"
#include "transport/poll_loop.h"
#include "transport/security.h"

namespace troupe::transport {

struct LinksConfig {
  std::string node_id;  // this node's id: the routing id of its connections
  SecurityConfig security;
  std::map<std::string, std::string> peer_keys;  // node id -> Z85 public key (curve mode)
  LinkOptions options;
  int redial_after_ms = 5000;  // a link down this long may move to another address
  // Optional: one line per noteworthy link decision (another address kept
  // apart, a re-dial), without the node's own prefix.
  std::function<void(const std::string&)> log;
};

// A link in trouble (see above), or — with an empty `text` — one that left it.
struct LinkTrouble {
  std::string node_id;
  std::string endpoint;
  std::string text;       // what is wrong and what to check, for logs and status
  bool refused = false;   // the peer refused this node's key (else: handshakes fail)
  uint64_t refusals = 0;  // refused handshakes so far on this link
  uint64_t failures = 0;  // failed handshakes so far on this link
};

class Links {
 public:
  static constexpr int kFailuresForTrouble = 3;

  Links(zmq::context_t& context, PollLoop& loop, LinksConfig config);

  // Binds a listener with this node's link options (not yet polled: the
  // node learns its address before any message can arrive).
  Result<std::unique_ptr<Listener>> Bind(const std::string& endpoint, const SecurityConfig& security) const;
  // Hands the node listener / the job listener to the loop.
  Status AdoptNodeListener(std::unique_ptr<Listener> listener);
  Status AdoptJobListener(std::unique_ptr<Listener> listener);

  LinkId node_listener() const;
  LinkId job_listener() const;  // 0 when there is none

  // The connection to `node_id`, dialling `endpoint` when there is none yet
  // (or when the link has been down redial_after_ms and `endpoint` is
  // another address: see above). An empty `endpoint` means any existing
  // link. NotFound when there is none and no endpoint, or curve mode has no
  // key for the peer; the transport's errors otherwise.
  Result<LinkId> ConnectTo(const std::string& node_id, const std::string& endpoint);

  // What a connection event changed.
  struct Change {
    std::optional<LinkTrouble> trouble;  // the link fell into trouble or left it
    bool lost = false;                   // a link that was up went down (its peer died, or the network)
  };
  // A connection event from the poll loop (its on_event callback): keeps
  // each link's up/down state. Events of listeners and unknown links are
  // ignored (no change). A link that never came up is never `lost`.
  Change OnEvent(LinkId link, const LinkEvent& event);
  // Links in trouble now.
  std::vector<LinkTrouble> Troubles() const;

  // Links moved to another address of their node so far.
  uint64_t redials() const;

  // Records `node_id`'s CURVE public key for later dials, unless the config
  // named one (the config wins). The caller vouches for the key: the head
  // takes it from an announce when the allowlist holds it, a shard from a
  // route the head made.
  void LearnKey(const std::string& node_id, const std::string& public_key);

  // The peer node a connection link goes to ("" for listeners and unknown links).
  std::string NodeOf(LinkId link) const;
  // The node whose CURVE public key (configured or learned) is `public_key`; "" if none.
  std::string NodeOfKey(const std::string& public_key) const;

  const std::string& node_id() const { return node_id_; }
  bool curve() const { return security_.curve; }
  // Whether this node's allowlist holds `public_key` (Z85; curve mode).
  bool Allows(const std::string& public_key) const { return security_.allowlist.Contains(public_key); }

 private:
  using Clock = std::chrono::steady_clock;
  // Dials `endpoint` for `node_id` (mu_ held).
  Result<LinkId> Dial(const std::string& node_id, const std::string& endpoint);
  void Log(const std::string& line) const;

  zmq::context_t& context_;
  PollLoop& loop_;
  const std::string node_id_;
  const SecurityConfig security_;
  const LinkOptions options_;
  const std::chrono::milliseconds redial_after_;
  const std::function<void(const std::string&)> log_;

  mutable std::mutex mu_;
  std::map<std::string, std::string> peer_keys_;  // configured and learned
  LinkId node_listener_ = 0;
  LinkId job_listener_ = 0;
  struct Dialled {
    std::string endpoint;
    LinkId link = 0;
    bool up = false;                      // handshake done, no disconnect since
    bool lost = false;                    // it was up, then went down (until it is up again)
    Clock::time_point down_since;         // the dial, or the last disconnect
    std::set<std::string> other_names;    // other endpoints it was asked for (logged once each)
    uint64_t refusals = 0, failures = 0;  // handshakes refused / failed since the last success
    bool troubled = false;
  };
  LinkTrouble TroubleOf(const std::string& node_id, const Dialled& d) const;
  std::map<std::string, Dialled> connections_;  // by node id
  std::map<LinkId, std::string> link_nodes_;    // connection -> node id
  uint64_t redials_ = 0;
};

}  // namespace troupe::transport
