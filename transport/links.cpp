#include "transport/links.h"

namespace troupe::transport {

Links::Links(zmq::context_t& context, PollLoop& loop, std::string node_id, SecurityConfig security,
             std::map<std::string, std::string> peer_keys, LinkOptions options)
    : context_(context),
      loop_(loop),
      node_id_(std::move(node_id)),
      security_(std::move(security)),
      options_(options),
      peer_keys_(std::move(peer_keys)) {}

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
  std::lock_guard<std::mutex> lock(mu_);
  auto it = connections_.find(node_id);
  if (it != connections_.end()) {
    if (it->second.endpoint == endpoint || endpoint.empty()) return it->second.link;
    (void)loop_.RemoveLink(it->second.link);  // the peer moved: dial the new address
    link_nodes_.erase(it->second.link);
    connections_.erase(it);
  }
  if (endpoint.empty()) return Status::NotFound("no endpoint known for node '" + node_id + "'");
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
  connections_[node_id] = Dialled{endpoint, id};
  link_nodes_[id] = node_id;
  return id;
}

std::string Links::NodeOf(LinkId link) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = link_nodes_.find(link);
  return it == link_nodes_.end() ? std::string() : it->second;
}

}  // namespace troupe::transport
