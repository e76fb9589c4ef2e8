#include "transport/links.h"

namespace troupe::transport {

Links::Links(zmq::context_t& context, PollLoop& loop, LinksConfig config)
    : context_(context),
      loop_(loop),
      node_id_(std::move(config.node_id)),
      security_(std::move(config.security)),
      options_(config.options),
      redial_after_(config.redial_after_ms),
      log_(std::move(config.log)),
      peer_keys_(std::move(config.peer_keys)) {}

void Links::Log(const std::string& line) const {
  if (log_) log_(line);
}

void Links::LearnKey(const std::string& node_id, const std::string& public_key) {
  if (public_key.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  std::string& known = peer_keys_[node_id];
  if (known.empty()) known = public_key;
}

Result<std::unique_ptr<Listener>> Links::Bind(const std::string& endpoint, const SecurityConfig& security) const {
  return Listener::Bind(context_, endpoint, security, options_);
}

Status Links::AdoptNodeListener(std::unique_ptr<Listener> listener) {
  std::lock_guard<std::mutex> lock(mu_);  // held so the bridge never sees the link unnamed
  TROUPE_ASSIGN_OR_RETURN(LinkId id, loop_.AddListener(std::move(listener)));
  node_listener_ = id;
  return Status::Ok();
}

Status Links::AdoptJobListener(std::unique_ptr<Listener> listener) {
  std::lock_guard<std::mutex> lock(mu_);  // held so the bridge never sees the link unnamed
  TROUPE_ASSIGN_OR_RETURN(LinkId id, loop_.AddListener(std::move(listener)));
  job_listener_ = id;
  return Status::Ok();
}

LinkId Links::node_listener() const {
  std::lock_guard<std::mutex> lock(mu_);
  return node_listener_;
}

LinkId Links::job_listener() const {
  std::lock_guard<std::mutex> lock(mu_);
  return job_listener_;
}

Result<LinkId> Links::ConnectTo(const std::string& node_id, const std::string& endpoint) {
  std::string line;  // logged after the lock is released
  Result<LinkId> out = Status::Internal("unreachable");
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = connections_.find(node_id);
    if (it == connections_.end()) {
      if (endpoint.empty()) return Status::NotFound("no endpoint known for node '" + node_id + "'");
      return Dial(node_id, endpoint);
    }
    Dialled& d = it->second;
    const auto down_for = Clock::now() - d.down_since;
    // libzmq never retries a refused handshake: try again now and then (the
    // peer's allowlist may have changed), at the address asked for.
    const bool retry_refused = d.refusals > 0 && !d.up && down_for >= redial_after_;
    if (!retry_refused && (endpoint.empty() || d.endpoint == endpoint)) return d.link;
    if (!retry_refused && (d.up || (!d.lost && down_for < redial_after_))) {
      if (d.other_names.insert(endpoint).second) {
        line = "node '" + node_id + "' is also named at " + endpoint + "; keeping its one link to " + d.endpoint +
               (d.up ? " (up)" : " (connecting)") + " and moving only if that stays down " +
               std::to_string(redial_after_.count()) + " ms";
      }
      out = d.link;
    } else {
      const std::string old_endpoint = d.endpoint;
      const std::string target = endpoint.empty() ? old_endpoint : endpoint;
      Dialled old = std::move(d);
      (void)loop_.RemoveLink(old.link);  // queued messages go with it: the link was down
      link_nodes_.erase(old.link);
      connections_.erase(it);
      out = Dial(node_id, target);
      if (out.ok()) {
        ++redials_;
        Dialled& now = connections_[node_id];  // a refusal stays known until a handshake succeeds
        now.refusals = old.refusals;
        now.failures = old.failures;
        now.troubled = old.troubled;
        now.other_names = std::move(old.other_names);
      }
      if (target != old_endpoint) {
        line = "link to node '" + node_id + "' at " + old_endpoint + " down for " +
               std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(down_for).count()) +
               " ms; dialling " + target + (out.ok() ? "" : " failed: " + out.status().ToString());
      }
    }
  }
  if (!line.empty()) Log(line);
  return out;
}

Result<LinkId> Links::Dial(const std::string& node_id, const std::string& endpoint) {
  std::string server_key;
  if (security_.curve) {
    auto k = peer_keys_.find(node_id);
    if (k == peer_keys_.end() || k->second.empty()) {
      return Status::NotFound("no CURVE public key for node '" + node_id + "' in this node's peers");
    }
    server_key = k->second;
  }
  TROUPE_ASSIGN_OR_RETURN(auto conn,
                          Connection::Connect(context_, endpoint, node_id_, security_, server_key, options_));
  TROUPE_ASSIGN_OR_RETURN(LinkId id, loop_.AddConnection(std::move(conn)));
  Dialled d;
  d.endpoint = endpoint;
  d.link = id;
  d.down_since = Clock::now();
  connections_[node_id] = std::move(d);
  link_nodes_[id] = node_id;
  return id;
}

LinkTrouble Links::TroubleOf(const std::string& node_id, const Dialled& d) const {
  LinkTrouble t{node_id, d.endpoint, "", d.refusals > 0, d.refusals, d.failures};
  if (!d.troubled) return t;
  if (t.refused) {
    t.text = "node '" + node_id + "' at " + d.endpoint + " refused the CURVE key of '" + node_id_ +
             "': it is not in the allowlist of '" + node_id + "' (add the node.pub of '" + node_id_ + "' there)";
  } else {
    t.text = "handshake with node '" + node_id + "' at " + d.endpoint + " failed " + std::to_string(d.failures) +
             " times: is the public key '" + node_id_ +
             "' has for it (peers, head_public_key, or a route) the key "
             "of the node listening there, and does that node run CURVE too?";
  }
  return t;
}

Links::Change Links::OnEvent(LinkId link, const LinkEvent& event) {
  Change out;
  std::optional<LinkTrouble>& change = out.trouble;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto node = link_nodes_.find(link);
    if (node == link_nodes_.end()) return out;
    auto it = connections_.find(node->second);
    if (it == connections_.end() || it->second.link != link) return out;
    Dialled& d = it->second;
    const bool was_troubled = d.troubled;
    const bool was_up = d.up;
    switch (event.kind) {
      case LinkEventKind::kHandshakeSucceeded:
        d.up = true;
        d.refusals = d.failures = 0;
        d.troubled = false;
        break;
      case LinkEventKind::kHandshakeFailedAuth:
        ++d.refusals;
        d.troubled = true;
        if (d.up) d.down_since = Clock::now();
        d.up = false;
        break;
      case LinkEventKind::kHandshakeFailed:
        ++d.failures;
        d.troubled |= d.failures >= kFailuresForTrouble;
        if (d.up) d.down_since = Clock::now();
        d.up = false;
        break;
      case LinkEventKind::kDisconnected:
        if (d.up) d.down_since = Clock::now();
        d.up = false;
        break;
      default: break;
    }
    if (d.troubled != was_troubled) change = TroubleOf(node->second, d);
    out.lost = was_up && !d.up;
    if (out.lost) d.lost = true;
    if (d.up) d.lost = false;
  }
  if (change) {
    Log(change->text.empty() ? "link to node '" + change->node_id + "' at " + change->endpoint + " is up again"
                             : change->text);
  }
  return out;
}

std::vector<LinkTrouble> Links::Troubles() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LinkTrouble> out;
  for (const auto& [node_id, d] : connections_) {
    if (d.troubled) out.push_back(TroubleOf(node_id, d));
  }
  return out;
}

uint64_t Links::redials() const {
  std::lock_guard<std::mutex> lock(mu_);
  return redials_;
}

std::string Links::NodeOf(LinkId link) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = link_nodes_.find(link);
  return it == link_nodes_.end() ? std::string() : it->second;
}

std::string Links::NodeOfKey(const std::string& public_key) const {
  if (public_key.empty()) return "";
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [node, key] : peer_keys_) {
    if (key == public_key) return node;
  }
  return "";
}

}  // namespace troupe::transport
