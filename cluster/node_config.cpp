#include "cluster/node_config.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "transport/keys.h"
#include "transport/security.h"

namespace troupe::cluster {
namespace {

namespace fs = std::filesystem;

std::string Resolve(const std::string& base, const std::string& path) {
  if (path.empty() || base.empty() || fs::path(path).is_absolute()) return path;
  return (fs::path(base) / path).lexically_normal().string();
}

// Reads `node[key]` into `out` when present; InvalidArgument naming the key otherwise.
template <class T>
Status Read(const YAML::Node& node, const char* key, T* out, const std::string& what) {
  const YAML::Node v = node[key];
  if (!v) return Status::Ok();
  try {
    *out = v.as<T>();
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(what + ": " + key + ": " + e.what());
  }
  return Status::Ok();
}

// `layers: [begin, end]`; with `is_auto`, also `layers: auto`.
Status ReadLayers(const YAML::Node& node, int64_t* begin, int64_t* end, bool* present, const std::string& what,
                  bool* is_auto = nullptr) {
  const YAML::Node v = node["layers"];
  *present = false;
  if (!v) return Status::Ok();
  if (is_auto && v.IsScalar() && v.Scalar() == "auto") {
    *is_auto = true;
    *present = true;
    return Status::Ok();
  }
  std::vector<int64_t> l;
  try {
    l = v.as<std::vector<int64_t>>();
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(what + ": layers: expected [begin, end]" + (is_auto ? " or auto" : "") + " (" +
                                   e.what() + ")");
  }
  if (l.size() != 2) {
    return Status::InvalidArgument(what + ": layers: expected [begin, end]" + (is_auto ? " or auto" : ""));
  }
  if (l[0] < 0 || l[0] >= l[1]) {
    return Status::InvalidArgument(what + ": layers: begin " + std::to_string(l[0]) + " >= end " +
                                   std::to_string(l[1]));
  }
  *begin = l[0];
  *end = l[1];
  *present = true;
  return Status::Ok();
}

const std::set<std::string> kTopKeys = {"id",
                                        "roles",
                                        "layers",
                                        "memory_budget_mb",
                                        "join",
                                        "head_public_key",
                                        "model",
                                        "amateur_model",
                                        "device",
                                        "backend",
                                        "dtype",
                                        "threads",
                                        "cache_budget_mb",
                                        "cache_budget_bytes",
                                        "idle_timeout_seconds",
                                        "step_timeout_seconds",
                                        "kept_session_ttl_seconds",
                                        "kept_session_max_length",
                                        "prefix_reuse",
                                        "int8_link_rtt_ms",
                                        "max_queued_jobs",
                                        "job_journal",
                                        "job_retention_seconds",
                                        "max_batch_sessions",
                                        "endpoints",
                                        "security",
                                        "head",
                                        "peers",
                                        "ready_file",
                                        "parent_pid",
                                        "api_keys",
                                        "api_key_file",
                                        "admin_key_file"};

// The names device, backend and dtype may take (pipeline/model/model_options.h
// resolves them when the model loads; this names a typo before that).
Status CheckModelOptionNames(const NodeConfig& c, const std::string& what) {
  const bool cuda = c.device.rfind("cuda:", 0) == 0 && c.device.size() > 5 &&
                    c.device.find_first_not_of("0123456789", 5) == std::string::npos;
  if (c.device != "cpu" && c.device != "cuda" && !cuda)
    return Status::InvalidArgument(what + ": device: '" + c.device + "' is not cpu, cuda or cuda:N");
  if (c.backend != "auto" && c.backend != "kernels" && c.backend != "torch")
    return Status::InvalidArgument(what + ": backend: '" + c.backend + "' is not auto, kernels or torch");
  if (c.dtype != "auto" && c.dtype != "bf16" && c.dtype != "f16" && c.dtype != "f32")
    return Status::InvalidArgument(what + ": dtype: '" + c.dtype + "' is not auto, bf16, f16 or f32");
  if (c.backend == "kernels" && c.device != "cpu")
    return Status::InvalidArgument(what + ": backend: kernels runs on the cpu only, not on " + c.device);
  return Status::Ok();
}

}  // namespace

const PeerConfig* NodeConfig::FindPeer(const std::string& peer_id) const {
  for (const PeerConfig& p : peers) {
    if (p.id == peer_id) return &p;
  }
  return nullptr;
}

Status ParseHostPort(const std::string& text, std::string* host, int* port) {
  std::string t = text;
  if (t.rfind("http://", 0) == 0) t = t.substr(7);
  if (!t.empty() && t.back() == '/') t.pop_back();
  const size_t colon = t.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == t.size()) {
    return Status::InvalidArgument("'" + text + "': expected host:port");
  }
  std::string h = t.substr(0, colon);
  const std::string p = t.substr(colon + 1);
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos || std::stoi(p) > 65535) {
    return Status::InvalidArgument("'" + text + "': port must be 0 to 65535");
  }
  *host = h;
  *port = std::stoi(p);
  return Status::Ok();
}

std::string BindSpelling(const std::string& endpoint) {
  if (endpoint.size() > 2 && endpoint.compare(endpoint.size() - 2, 2, ":0") == 0 && endpoint.rfind("tcp://", 0) == 0) {
    return endpoint.substr(0, endpoint.size() - 1) + "*";
  }
  return endpoint;
}

Result<NodeConfig> ParseNodeConfig(const std::string& text, const std::string& base_dir, const std::string& what) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(what + ": not YAML: " + e.what());
  }
  if (!root.IsMap()) return Status::InvalidArgument(what + ": expected a mapping at the top");
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (!kTopKeys.count(key)) return Status::InvalidArgument(what + ": unknown key '" + key + "'");
  }
  NodeConfig c;
  TROUPE_RETURN_IF_ERROR(Read(root, "id", &c.id, what));
  if (c.id.empty() || c.id.size() > 255) {
    return Status::InvalidArgument(what + ": id: must be 1 to 255 characters");
  }
  std::vector<std::string> roles;
  TROUPE_RETURN_IF_ERROR(Read(root, "roles", &roles, what));
  for (const std::string& r : roles) {
    if (r == "head") {
      c.head = true;
    } else if (r == "shard") {
      c.shard = true;
    } else {
      return Status::InvalidArgument(what + ": roles: unknown role '" + r + "' (head, shard)");
    }
  }
  if (!c.head && !c.shard) return Status::InvalidArgument(what + ": roles: name head and/or shard");
  bool has_layers = false;
  TROUPE_RETURN_IF_ERROR(ReadLayers(root, &c.layer_begin, &c.layer_end, &has_layers, what, &c.layers_auto));
  if (c.shard && !has_layers) return Status::InvalidArgument(what + ": layers: a shard needs [begin, end] or auto");
  double memory_mb = 0;
  TROUPE_RETURN_IF_ERROR(Read(root, "memory_budget_mb", &memory_mb, what));
  if (memory_mb < 0) return Status::InvalidArgument(what + ": memory_budget_mb: must be >= 0");
  c.memory_budget_bytes = static_cast<uint64_t>(memory_mb * 1024 * 1024);
  TROUPE_RETURN_IF_ERROR(Read(root, "model", &c.model, what));
  c.model = Resolve(base_dir, c.model);
  TROUPE_RETURN_IF_ERROR(Read(root, "amateur_model", &c.amateur_model, what));
  if (!c.amateur_model.empty()) {
    if (!c.head) return Status::InvalidArgument(what + ": amateur_model: only a head runs the amateur model");
    c.amateur_model = Resolve(base_dir, c.amateur_model);
  }
  TROUPE_RETURN_IF_ERROR(Read(root, "device", &c.device, what));
  TROUPE_RETURN_IF_ERROR(Read(root, "backend", &c.backend, what));
  TROUPE_RETURN_IF_ERROR(Read(root, "dtype", &c.dtype, what));
  TROUPE_RETURN_IF_ERROR(Read(root, "threads", &c.threads, what));
  if (c.threads < 0) return Status::InvalidArgument(what + ": threads: must be >= 0");
  double budget_mb = -1;
  TROUPE_RETURN_IF_ERROR(Read(root, "cache_budget_mb", &budget_mb, what));
  if (budget_mb >= 0) c.cache_budget_bytes = static_cast<uint64_t>(budget_mb * 1024 * 1024);
  TROUPE_RETURN_IF_ERROR(Read(root, "cache_budget_bytes", &c.cache_budget_bytes, what));
  TROUPE_RETURN_IF_ERROR(Read(root, "idle_timeout_seconds", &c.idle_timeout_seconds, what));
  TROUPE_RETURN_IF_ERROR(Read(root, "step_timeout_seconds", &c.step_timeout_seconds, what));
  TROUPE_RETURN_IF_ERROR(Read(root, "kept_session_ttl_seconds", &c.kept_session_ttl_seconds, what));
  TROUPE_RETURN_IF_ERROR(Read(root, "kept_session_max_length", &c.kept_session_max_length, what));
  TROUPE_RETURN_IF_ERROR(Read(root, "prefix_reuse", &c.prefix_reuse, what));
  TROUPE_RETURN_IF_ERROR(Read(root, "int8_link_rtt_ms", &c.int8_link_rtt_ms, what));
  if (c.int8_link_rtt_ms < 0) return Status::InvalidArgument(what + ": int8_link_rtt_ms: must be >= 0");
  TROUPE_RETURN_IF_ERROR(Read(root, "max_queued_jobs", &c.max_queued_jobs, what));
  TROUPE_RETURN_IF_ERROR(Read(root, "job_journal", &c.job_journal, what));
  if (!c.job_journal.empty()) {
    if (!c.head) return Status::InvalidArgument(what + ": job_journal: only a head journals jobs");
    c.job_journal = Resolve(base_dir, c.job_journal);
  }
  TROUPE_RETURN_IF_ERROR(Read(root, "job_retention_seconds", &c.job_retention_seconds, what));
  if (c.job_retention_seconds < 0) return Status::InvalidArgument(what + ": job_retention_seconds: must be >= 0");
  if (c.max_queued_jobs < 0) return Status::InvalidArgument(what + ": max_queued_jobs: must be >= 0");
  if (c.kept_session_max_length < 1) return Status::InvalidArgument(what + ": kept_session_max_length: must be >= 1");
  TROUPE_RETURN_IF_ERROR(Read(root, "max_batch_sessions", &c.max_batch_sessions, what));
  if (c.max_batch_sessions < 0) return Status::InvalidArgument(what + ": max_batch_sessions: must be >= 0");
  if (c.idle_timeout_seconds <= 0 || c.step_timeout_seconds <= 0 || c.kept_session_ttl_seconds <= 0) {
    return Status::InvalidArgument(what + ": timeouts must be positive");
  }
  if (const YAML::Node ep = root["endpoints"]) {
    TROUPE_RETURN_IF_ERROR(Read(ep, "listen", &c.listen, what));
    TROUPE_RETURN_IF_ERROR(Read(ep, "advertise", &c.advertise, what));
    TROUPE_RETURN_IF_ERROR(Read(ep, "jobs", &c.job_listen, what));
    TROUPE_RETURN_IF_ERROR(Read(ep, "http", &c.http_listen, what));
  }
  if (!c.http_listen.empty()) {
    std::string host;
    int port = 0;
    if (Status st = ParseHostPort(c.http_listen, &host, &port); !st.ok()) {
      return Status::InvalidArgument(what + ": endpoints: http: " + st.message());
    }
    if (!c.head) return Status::InvalidArgument(what + ": endpoints: http: only a head serves the HTTP API");
  }
  c.listen = BindSpelling(c.listen);
  c.job_listen = BindSpelling(c.job_listen);
  if (const YAML::Node sec = root["security"]) {
    TROUPE_RETURN_IF_ERROR(Read(sec, "curve", &c.curve, what));
    TROUPE_RETURN_IF_ERROR(Read(sec, "secret_key", &c.secret_key_file, what));
    TROUPE_RETURN_IF_ERROR(Read(sec, "allowlist", &c.allowlist, what));
    TROUPE_RETURN_IF_ERROR(Read(sec, "insecure", &c.insecure, what));
    TROUPE_RETURN_IF_ERROR(Read(sec, "client_allowlist", &c.client_allowlist, what));
    TROUPE_RETURN_IF_ERROR(Read(sec, "job_curve", &c.job_curve, what));
    c.secret_key_file = Resolve(base_dir, c.secret_key_file);
    c.allowlist = Resolve(base_dir, c.allowlist);
    c.client_allowlist = Resolve(base_dir, c.client_allowlist);
  }
  if (!c.head && (!c.client_allowlist.empty() || c.job_curve)) {
    return Status::InvalidArgument(what +
                                   ": security: client_allowlist and job_curve are for a head (its job endpoint)");
  }
  if (c.job_curve && !c.curve) return Status::InvalidArgument(what + ": security: job_curve needs curve: true");
  TROUPE_RETURN_IF_ERROR(Read(root, "api_keys", &c.api_keys, what));
  TROUPE_RETURN_IF_ERROR(Read(root, "api_key_file", &c.api_key_file, what));
  TROUPE_RETURN_IF_ERROR(Read(root, "admin_key_file", &c.admin_key_file, what));
  c.api_key_file = Resolve(base_dir, c.api_key_file);
  c.admin_key_file = Resolve(base_dir, c.admin_key_file);
  if (!c.head && (!c.api_keys.empty() || !c.api_key_file.empty() || !c.admin_key_file.empty())) {
    return Status::InvalidArgument(what + ": api_keys, api_key_file and admin_key_file are for a head (its HTTP API)");
  }
  TROUPE_RETURN_IF_ERROR(Read(root, "head", &c.head_id, what));
  if (const YAML::Node peers = root["peers"]) {
    if (!peers.IsSequence()) return Status::InvalidArgument(what + ": peers: expected a list");
    for (const YAML::Node& p : peers) {
      PeerConfig peer;
      const std::string pw = what + ": peers";
      TROUPE_RETURN_IF_ERROR(Read(p, "id", &peer.id, pw));
      if (peer.id.empty()) return Status::InvalidArgument(pw + ": a peer without id");
      TROUPE_RETURN_IF_ERROR(Read(p, "endpoint", &peer.endpoint, pw));
      TROUPE_RETURN_IF_ERROR(Read(p, "public_key", &peer.public_key, pw));
      if (!peer.public_key.empty()) {  // the key, or its node.pub (relative to the config's folder)
        const std::string as_path = Resolve(base_dir, peer.public_key);
        Result<std::string> key = transport::PublicKeyFromArgument(
            transport::ValidateZ85Key(peer.public_key, "public key").ok() ? peer.public_key : as_path);
        if (!key.ok()) return Status::InvalidArgument(pw + " " + peer.id + ": public_key: " + key.status().message());
        peer.public_key = *key;
      }
      TROUPE_RETURN_IF_ERROR(ReadLayers(p, &peer.layer_begin, &peer.layer_end, &peer.shard, pw + " " + peer.id));
      if (c.FindPeer(peer.id) || peer.id == c.id) {
        return Status::InvalidArgument(pw + ": duplicate id '" + peer.id + "'");
      }
      c.peers.push_back(std::move(peer));
    }
  }
  std::string join, head_key;
  TROUPE_RETURN_IF_ERROR(Read(root, "join", &join, what));
  TROUPE_RETURN_IF_ERROR(Read(root, "head_public_key", &head_key, what));
  if (!join.empty()) {
    if (!head_key.empty() && !transport::ValidateZ85Key(head_key, "public key").ok()) {
      head_key = Resolve(base_dir, head_key);
    }
    if (Status st = JoinHead(&c, join, head_key); !st.ok()) return Status::InvalidArgument(what + ": " + st.message());
  } else if (!head_key.empty()) {
    return Status::InvalidArgument(what + ": head_public_key: goes with join");
  }
  TROUPE_RETURN_IF_ERROR(Read(root, "ready_file", &c.ready_file, what));
  c.ready_file = Resolve(base_dir, c.ready_file);
  TROUPE_RETURN_IF_ERROR(Read(root, "parent_pid", &c.parent_pid, what));
  TROUPE_RETURN_IF_ERROR(ValidateNodeConfig(c, what));
  return c;
}

Status ValidateNodeConfig(const NodeConfig& c, const std::string& what) {
  TROUPE_RETURN_IF_ERROR(CheckModelOptionNames(c, what));
  if (c.id.empty() || c.id.size() > 255) return Status::InvalidArgument(what + ": id: must be 1 to 255 characters");
  if (!c.head && !c.shard) return Status::InvalidArgument(what + ": roles: name head and/or shard");
  if (c.model.empty()) return Status::InvalidArgument(what + ": model: missing");
  if (c.shard && !c.layers_auto && (c.layer_begin < 0 || c.layer_begin >= c.layer_end)) {
    return Status::InvalidArgument(what + ": layers: a shard needs [begin, end] with begin < end, or auto");
  }
  if (c.layers_auto && !c.shard) return Status::InvalidArgument(what + ": layers: auto is for a shard");
  if (c.layers_auto && c.head) {
    return Status::InvalidArgument(what + ": layers: auto needs a head to join, not a head in the same node");
  }
  if (c.layers_auto && c.head_id.empty()) {
    return Status::InvalidArgument(what + ": layers: auto needs the head to ask (join: or head:)");
  }
  // Every address bound, none advertised: peers would be told to dial 0.0.0.0.
  if (c.advertise.empty() && (c.listen.rfind("tcp://0.0.0.0:", 0) == 0 || c.listen.rfind("tcp://*:", 0) == 0 ||
                              c.listen.rfind("tcp://[::]:", 0) == 0)) {
    return Status::InvalidArgument(what + ": endpoints: listen " + c.listen +
                                   " binds every address; set endpoints: advertise to the one peers dial (e.g. "
                                   "tcp://10.0.0.5:5601)");
  }
  if (c.curve && (c.secret_key_file.empty() || c.allowlist.empty())) {
    return Status::InvalidArgument(what + ": security: curve needs secret_key and allowlist");
  }
  if (!c.head_id.empty() && !c.FindPeer(c.head_id) && c.head_id != c.id) {
    return Status::InvalidArgument(what + ": head: '" + c.head_id + "' is not among the peers");
  }
  if (c.curve && !c.head_id.empty() && c.head_id != c.id) {
    const PeerConfig* head = c.FindPeer(c.head_id);
    if (head && head->public_key.empty()) {
      return Status::InvalidArgument(what + ": head: '" + c.head_id +
                                     "' has no public_key (curve: this node dials it; give head_public_key)");
    }
  }
  return Status::Ok();
}

Status JoinHead(NodeConfig* c, const std::string& endpoint, const std::string& public_key) {
  if (endpoint.rfind("tcp://", 0) != 0) {
    return Status::InvalidArgument("join: '" + endpoint + "' is not a tcp://HOST:PORT endpoint");
  }
  if (c->head_id.empty()) c->head_id = "head";
  std::string key;
  if (!public_key.empty()) {
    Result<std::string> k = transport::PublicKeyFromArgument(public_key);
    if (!k.ok()) return Status::InvalidArgument("head_public_key: " + k.status().message());
    key = *k;
  }
  for (PeerConfig& p : c->peers) {
    if (p.id == c->head_id) {
      p.endpoint = endpoint;
      if (!key.empty()) p.public_key = key;
      return Status::Ok();
    }
  }
  PeerConfig head;
  head.id = c->head_id;
  head.endpoint = endpoint;
  head.public_key = key;
  c->peers.push_back(std::move(head));
  return Status::Ok();
}

bool JobEndpointCurve(const NodeConfig& c) {
  return c.curve && (c.job_curve || !transport::IsLoopbackEndpoint(c.job_listen));
}

Result<NodeConfig> LoadNodeConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("node config " + path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string base = fs::absolute(fs::path(path)).parent_path().string();
  return ParseNodeConfig(ss.str(), base, "node config " + path);
}

std::string NodeConfigToYaml(const NodeConfig& c) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "id" << YAML::Value << c.id;
  out << YAML::Key << "roles" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  if (c.head) out << "head";
  if (c.shard) out << "shard";
  out << YAML::EndSeq;
  if (c.shard && c.layers_auto) {
    out << YAML::Key << "layers" << YAML::Value << "auto";
    if (c.memory_budget_bytes > 0) {
      out << YAML::Key << "memory_budget_mb" << YAML::Value << static_cast<double>(c.memory_budget_bytes) / (1 << 20);
    }
  } else if (c.shard) {
    out << YAML::Key << "layers" << YAML::Value << YAML::Flow << YAML::BeginSeq << c.layer_begin << c.layer_end
        << YAML::EndSeq;
  }
  out << YAML::Key << "model" << YAML::Value << c.model;
  if (!c.amateur_model.empty()) out << YAML::Key << "amateur_model" << YAML::Value << c.amateur_model;
  out << YAML::Key << "device" << YAML::Value << c.device;
  out << YAML::Key << "backend" << YAML::Value << c.backend;
  out << YAML::Key << "dtype" << YAML::Value << c.dtype;
  out << YAML::Key << "threads" << YAML::Value << c.threads;
  out << YAML::Key << "cache_budget_bytes" << YAML::Value << c.cache_budget_bytes;
  out << YAML::Key << "idle_timeout_seconds" << YAML::Value << c.idle_timeout_seconds;
  out << YAML::Key << "step_timeout_seconds" << YAML::Value << c.step_timeout_seconds;
  if (c.head) {
    out << YAML::Key << "kept_session_ttl_seconds" << YAML::Value << c.kept_session_ttl_seconds;
    out << YAML::Key << "kept_session_max_length" << YAML::Value << c.kept_session_max_length;
    out << YAML::Key << "prefix_reuse" << YAML::Value << c.prefix_reuse;
    if (c.int8_link_rtt_ms > 0) out << YAML::Key << "int8_link_rtt_ms" << YAML::Value << c.int8_link_rtt_ms;
    out << YAML::Key << "max_queued_jobs" << YAML::Value << c.max_queued_jobs;
    if (!c.job_journal.empty()) out << YAML::Key << "job_journal" << YAML::Value << c.job_journal;
    out << YAML::Key << "job_retention_seconds" << YAML::Value << c.job_retention_seconds;
  }
  if (c.max_batch_sessions > 0) out << YAML::Key << "max_batch_sessions" << YAML::Value << c.max_batch_sessions;
  out << YAML::Key << "endpoints" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "listen" << YAML::Value << c.listen;
  if (!c.advertise.empty()) out << YAML::Key << "advertise" << YAML::Value << c.advertise;
  if (c.head) out << YAML::Key << "jobs" << YAML::Value << c.job_listen;
  if (c.head && !c.http_listen.empty()) out << YAML::Key << "http" << YAML::Value << c.http_listen;
  out << YAML::EndMap;
  out << YAML::Key << "security" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "curve" << YAML::Value << c.curve;
  if (c.curve) {
    out << YAML::Key << "secret_key" << YAML::Value << c.secret_key_file;
    out << YAML::Key << "allowlist" << YAML::Value << c.allowlist;
    if (!c.client_allowlist.empty()) out << YAML::Key << "client_allowlist" << YAML::Value << c.client_allowlist;
    if (c.job_curve) out << YAML::Key << "job_curve" << YAML::Value << c.job_curve;
  }
  out << YAML::Key << "insecure" << YAML::Value << c.insecure;
  out << YAML::EndMap;
  if (!c.api_keys.empty()) {
    out << YAML::Key << "api_keys" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const std::string& k : c.api_keys) out << YAML::DoubleQuoted << k;
    out << YAML::EndSeq;
  }
  if (!c.api_key_file.empty()) out << YAML::Key << "api_key_file" << YAML::Value << c.api_key_file;
  if (!c.admin_key_file.empty()) out << YAML::Key << "admin_key_file" << YAML::Value << c.admin_key_file;
  if (!c.head_id.empty()) out << YAML::Key << "head" << YAML::Value << c.head_id;
  if (!c.peers.empty()) {
    out << YAML::Key << "peers" << YAML::Value << YAML::BeginSeq;
    for (const PeerConfig& p : c.peers) {
      out << YAML::BeginMap << YAML::Key << "id" << YAML::Value << p.id;
      if (!p.endpoint.empty()) out << YAML::Key << "endpoint" << YAML::Value << p.endpoint;
      if (!p.public_key.empty()) {
        out << YAML::Key << "public_key" << YAML::Value << YAML::DoubleQuoted << p.public_key;
      }
      if (p.shard) {
        out << YAML::Key << "layers" << YAML::Value << YAML::Flow << YAML::BeginSeq << p.layer_begin << p.layer_end
            << YAML::EndSeq;
      }
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  if (!c.ready_file.empty()) out << YAML::Key << "ready_file" << YAML::Value << c.ready_file;
  if (c.parent_pid > 0) out << YAML::Key << "parent_pid" << YAML::Value << c.parent_pid;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace troupe::cluster
