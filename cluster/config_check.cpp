#include "cluster/config_check.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "cluster/node_config.h"
#include "pipeline/format/model_source.h"
#include "transport/keys.h"
#include "transport/security.h"

namespace troupe::cluster {
namespace {

namespace fs = std::filesystem;

// One config as far as it could be read, and what the checks learned of it.
struct Checked {
  std::string path;
  NodeConfig config;
  std::string own_key;  // its public key, from its secret_key (files, curve)
  std::optional<transport::Allowlist> allowlist;
  int64_t n_layers = -1;  // of its model (files)
};

// "tcp://h:5601" -> "5601"; "" for OS-chosen ports or other transports.
std::string PortOf(const std::string& endpoint) {
  if (endpoint.rfind("tcp://", 0) != 0) return "";
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos || colon < 6) return "";
  const std::string port = endpoint.substr(colon + 1);
  return port == "*" || port == "0" ? "" : port;
}

std::string Span(int64_t b, int64_t e) { return std::to_string(b) + "-" + std::to_string(e); }

void CheckFiles(Checked& c, std::vector<std::string>* problems) {
  const NodeConfig& n = c.config;
  auto problem = [&](const std::string& line) { problems->push_back(c.path + ": " + line); };
  if (!n.model.empty()) {
    if (!fs::exists(n.model)) {
      problem("model: " + n.model + " does not exist");
    } else {
      auto source = ModelSource::Open(n.model);
      if (!source.ok()) {
        problem("model: " + source.status().message());
      } else {
        c.n_layers = (*source)->config().n_layers;
        if (n.shard && !n.layers_auto && n.layer_end > c.n_layers) {
          problem("layers: [" + std::to_string(n.layer_begin) + ", " + std::to_string(n.layer_end) +
                  "] of a model with " + std::to_string(c.n_layers) + " layers");
        }
      }
    }
  }
  if (n.curve) {
    if (!n.secret_key_file.empty()) {
      auto keys = transport::ReadSecretKeyFile(n.secret_key_file);
      if (!keys.ok()) {
        problem("security: secret_key: " + keys.status().message());
      } else {
        c.own_key = keys->public_key;
      }
    }
    if (!n.allowlist.empty()) {
      auto list = transport::LoadAllowlist(n.allowlist);
      if (!list.ok()) {
        problem("security: allowlist: " + list.status().message());
      } else {
        c.allowlist = *list;
      }
    }
    if (!n.client_allowlist.empty()) {
      auto list = transport::LoadAllowlist(n.client_allowlist);
      if (!list.ok()) problem("security: client_allowlist: " + list.status().message());
    }
  }
  for (const std::string* f : {&n.api_key_file, &n.admin_key_file}) {
    if (!f->empty() && !fs::exists(*f)) problem("key file " + *f + " does not exist");
  }
}

// Problems between the configs of one cluster.
void CheckCluster(std::vector<Checked>& all, const ConfigCheckOptions& options, std::vector<std::string>* problems) {
  std::map<std::string, Checked*> by_id;
  std::vector<Checked*> heads, shards;
  for (Checked& c : all) {
    if (c.config.id.empty()) continue;  // what could be read takes part, problems or not
    const NodeConfig& n = c.config;
    if (by_id.count(n.id)) {
      problems->push_back(c.path + ": id '" + n.id + "' is also the id of " + by_id[n.id]->path);
      continue;
    }
    by_id[n.id] = &c;
    if (n.head) heads.push_back(&c);
    if (n.shard) shards.push_back(&c);
  }
  if (heads.empty()) {
    problems->push_back(all.front().path + ": no config among these is a head (roles: [head])");
  } else if (heads.size() > 1) {
    problems->push_back(heads[1]->path + ": a second head ('" + heads[1]->config.id + "', after '" +
                        heads[0]->config.id + "' in " + heads[0]->path + "): one head per cluster");
  }
  bool some_curve = false, some_plain = false;
  for (auto& [id, c] : by_id) (c->config.curve ? some_curve : some_plain) = true;
  if (some_curve && some_plain) {
    for (auto& [id, c] : by_id) {
      if (!c->config.curve) problems->push_back(c->path + ": security: curve is off here but on in other configs");
    }
  }
  // Shards and their head.
  for (Checked* s : shards) {
    const NodeConfig& n = s->config;
    if (n.head || n.head_id.empty()) continue;
    auto head = by_id.find(n.head_id);
    if (head == by_id.end()) {
      problems->push_back(s->path + ": head: '" + n.head_id + "' is none of these configs' ids");
      continue;
    }
    const NodeConfig& h = head->second->config;
    if (!h.head) problems->push_back(s->path + ": head: '" + n.head_id + "' (" + head->second->path + ") is no head");
    const PeerConfig* peer = n.FindPeer(n.head_id);
    const std::string dial = peer ? PortOf(peer->endpoint) : "";
    const std::string listen = PortOf(h.listen), advertise = PortOf(h.advertise);
    if (!dial.empty() && !listen.empty() && dial != listen && dial != advertise) {
      problems->push_back(s->path + ": peers: the head is dialled at " + peer->endpoint + ", but " +
                          head->second->path + " listens on " + h.listen +
                          (h.advertise.empty() ? "" : " (advertised as " + h.advertise + ")"));
    }
  }
  // Fixed spans: every layer served, unless a shard chooses its own.
  bool any_auto = false;
  std::map<int64_t, std::vector<std::pair<int64_t, std::string>>> spans;  // begin -> (end, id)
  int64_t n_layers = -1;
  for (Checked* s : shards) {
    if (s->config.layers_auto) any_auto = true;
    if (!s->config.layers_auto) spans[s->config.layer_begin].emplace_back(s->config.layer_end, s->config.id);
  }
  if (!heads.empty()) n_layers = heads[0]->n_layers;
  if (!any_auto && !spans.empty()) {
    int64_t reached = 0;
    std::set<int64_t> frontier = {0};
    for (auto& [begin, ends] : spans) {
      if (!frontier.count(begin)) continue;
      for (auto& [end, id] : ends) {
        frontier.insert(end);
        reached = std::max(reached, end);
      }
    }
    int64_t max_end = 0;
    for (auto& [begin, ends] : spans) {
      for (auto& [end, id] : ends) max_end = std::max(max_end, end);
    }
    const int64_t want = n_layers > 0 ? n_layers : max_end;
    if (reached < want) {
      std::string served;
      for (auto& [begin, ends] : spans) {
        for (auto& [end, id] : ends) served += (served.empty() ? "" : ", ") + id + " " + Span(begin, end);
      }
      const std::string where = heads.empty() ? all.front().path : heads[0]->path;
      problems->push_back(where + ": layers from " + std::to_string(reached) +
                          " on are served by no chain of shards starting at layer 0 (" + served +
                          (n_layers > 0 ? "; the model has " + std::to_string(n_layers) : "") + ")");
    }
  }
  if (!options.files || !some_curve) return;
  // Keys: who may talk to whom.
  for (auto& [id, c] : by_id) {
    for (const PeerConfig& p : c->config.peers) {
      auto other = by_id.find(p.id);
      if (other == by_id.end() || p.public_key.empty() || other->second->own_key.empty()) continue;
      if (p.public_key != other->second->own_key) {
        problems->push_back(c->path + ": peers: the public key given for '" + p.id + "' (" + p.public_key +
                            ") is not the key of its secret_key in " + other->second->path + " (" +
                            other->second->own_key + "): every handshake with it would fail");
      }
    }
  }
  for (auto& [id, c] : by_id) {
    if (!c->allowlist) continue;
    for (auto& [other_id, o] : by_id) {
      if (other_id == id || o->own_key.empty() || c->allowlist->Contains(o->own_key)) continue;
      // Who dials whom: the head dials every shard and stage node, and each
      // of them the head; a shard dials the shards after it on a route (any
      // other shard) and the LM head node; an embedding node the shards.
      std::string why;
      if (c->config.head) why = "the head would refuse '" + other_id + "' (its announces, heartbeats and answers)";
      if (!c->config.head && o->config.head) why = "'" + id + "' would refuse the head (it opens sessions there)";
      if (!c->config.head && !o->config.head && o->config.shard && c->config.shard) {
        why = "'" + id + "' would refuse hidden states from shard '" + other_id + "' (shards dial each other)";
      }
      // Stage nodes: an embedding node sends to the first shard, the last
      // shard to an LM head node.
      if (!c->config.head && !o->config.head && c->config.shard && o->config.embedding) {
        why = "'" + id + "' would refuse the hidden states of embedding node '" + other_id + "'";
      }
      if (!c->config.head && !o->config.head && c->config.lm_head && o->config.shard) {
        why = "LM head node '" + id + "' would refuse the hidden states of shard '" + other_id + "'";
      }
      if (why.empty()) continue;
      problems->push_back(c->path + ": security: allowlist " + c->config.allowlist + " lacks the key of '" + other_id +
                          "' (" + o->own_key + "): " + why);
    }
  }
}

}  // namespace

std::vector<std::string> CheckNodeConfigs(const std::vector<std::string>& paths, const ConfigCheckOptions& options) {
  std::vector<std::string> problems;
  std::vector<Checked> all;
  for (const std::string& path : paths) {
    Checked c;
    c.path = path;
    std::ifstream in(path);
    if (!in) {
      problems.push_back(path + ": cannot open");
      continue;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string base = fs::absolute(fs::path(path)).parent_path().string();
    std::vector<std::string> found = ParseNodeConfigProblems(ss.str(), base, path, &c.config, options.files);
    const NodeConfig& n = c.config;
    if (!n.curve && !n.insecure && n.listen.rfind("tcp://", 0) == 0 && !transport::IsLoopbackEndpoint(n.listen)) {
      found.push_back(path + ": security: listen " + n.listen +
                      " is not loopback: set curve: true (with secret_key and allowlist), or insecure: true to "
                      "allow plain links there");
    }
    problems.insert(problems.end(), found.begin(), found.end());
    if (options.files) CheckFiles(c, &problems);
    all.push_back(std::move(c));
  }
  if (all.size() >= 2) CheckCluster(all, options, &problems);
  return problems;
}

}  // namespace troupe::cluster
