// Links: the sockets of one node, all owned by its PollLoop — the node
// listener (ROUTER, where peers send steps and session messages), the job
// listener on a head (ROUTER, where clients submit jobs), and one connection
// (DEALER, routing id = this node's id) per peer node this node sends to.
//
// Connections are made on first use: ConnectTo(node, endpoint) returns the
// existing link to that node or dials it (with the peer's CURVE public key
// from the config, or learned with LearnKey, in curve mode). A peer that
// moved to another endpoint gets a new link.
//
// Thread-safety: every method may be called from any thread (a mutex guards
// the maps); the sockets themselves only ever live on the loop thread.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <zmq.hpp>

#include "pipeline/status.h"
#include "transport/link.h"
#include "transport/poll_loop.h"
#include "transport/security.h"

namespace troupe::transport {

class Links {
 public:
  // `peer_keys`: node id -> Z85 public key (curve mode).
  Links(zmq::context_t& context, PollLoop& loop, std::string node_id, SecurityConfig security,
        std::map<std::string, std::string> peer_keys, LinkOptions options);

  // Binds a listener with this node's link options (not yet polled: the
  // node learns its address before any message can arrive).
  Result<std::unique_ptr<Listener>> Bind(const std::string& endpoint, const SecurityConfig& security) const;
  // Hands the node listener / the job listener to the loop.
  Status AdoptNodeListener(std::unique_ptr<Listener> listener);
  Status AdoptJobListener(std::unique_ptr<Listener> listener);

  LinkId node_listener() const;
  LinkId job_listener() const;  // 0 when there is none

  // The connection to `node_id`, dialling `endpoint` when there is none yet
  // (or the peer moved). NotFound when curve mode has no key for the peer;
  // the transport's errors otherwise.
  Result<LinkId> ConnectTo(const std::string& node_id, const std::string& endpoint);

  // Records `node_id`'s CURVE public key for later dials, unless the config
  // named one (the config wins). The caller vouches for the key: the head
  // takes it from an announce when the allowlist holds it, a shard from a
  // route the head made.
  void LearnKey(const std::string& node_id, const std::string& public_key);

  // The peer node a connection link goes to ("" for listeners and unknown links).
  std::string NodeOf(LinkId link) const;

  const std::string& node_id() const { return node_id_; }
  bool curve() const { return security_.curve; }
  // Whether this node's allowlist holds `public_key` (Z85; curve mode).
  bool Allows(const std::string& public_key) const { return security_.allowlist.Contains(public_key); }

 private:
  zmq::context_t& context_;
  PollLoop& loop_;
  const std::string node_id_;
  const SecurityConfig security_;
  const LinkOptions options_;

  mutable std::mutex mu_;
  std::map<std::string, std::string> peer_keys_;  // configured and learned
  LinkId node_listener_ = 0;
  LinkId job_listener_ = 0;
  struct Dialled {
    std::string endpoint;
    LinkId link = 0;
  };
  std::map<std::string, Dialled> connections_;  // by node id
  std::map<LinkId, std::string> link_nodes_;    // connection -> node id
};

}  // namespace troupe::transport
