#include "cluster/node_config.h"
#include "pipeline/log.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <type_traits>

#include "transport/keys.h"
#include "transport/security.h"

namespace troupe::cluster {
namespace {

namespace fs = std::filesystem;

std::string Resolve(const std::string& base, const std::string& path) {
  if (path.empty() || base.empty() || fs::path(path).is_absolute()) return path;
  return (fs::path(base) / path).lexically_normal().string();
}

// Every problem found so far, in the order found; parsing goes on past each.
using Problems = std::vector<std::string>;

// Whether a mapping key can be a config key: a scalar (or null, read as
// "null"), not a list or mapping (`? [a, b]: x`), which as<std::string>
// refuses with an exception.
bool IsNameKey(const YAML::Node& key) { return key.IsScalar() || key.IsNull(); }

// Megabytes a budget may name: 2^40 MB (2^60 bytes), so that the bytes fit a
// uint64_t (converting a larger double is undefined).
constexpr double kMaxBudgetMb = 1099511627776.0;

// Reads `node[key]` into `out` when present; a problem naming the key otherwise.
template <class T>
void Read(const YAML::Node& node, const char* key, T* out, const std::string& what, Problems* problems) {
  const YAML::Node v = node[key];
  if (!v) return;
  try {
    *out = v.as<T>();
  } catch (const YAML::Exception& e) {
    problems->push_back(what + ": " + key + ": " + e.what());
    return;
  }
  if constexpr (std::is_same_v<T, std::string>) {
    // No name, path, address or key holds one (a stray CR of a file saved
    // with CRLF is the likely one), and it would not survive being written back.
    for (unsigned char ch : *out) {
      if (ch < 0x20 && ch != '\t') {
        problems->push_back(what + ": " + key + ": contains control character " + std::to_string(ch) +
                            " (a stray CR or NUL?)");
        break;
      }
    }
  }
}

// `${NAME}` and `${NAME:-default}` in a scalar, from the environment (as
// compose and systemd spell them), NAME a C identifier; `$${` is a literal
// `${`; any other `$` is itself. An unset NAME without a default is a
// problem naming `where`.
bool IsIdentifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') return false;
  }
  return true;
}

std::string Expand(const std::string& text, const std::string& where, Problems* problems) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 3, "$${") == 0) {
      out += "${";
      i += 2;
      continue;
    }
    const size_t close = text.compare(i, 2, "${") == 0 ? text.find('}', i) : std::string::npos;
    std::string name = close == std::string::npos ? "" : text.substr(i + 2, close - i - 2), fallback;
    bool has_default = false;
    if (const size_t dash = name.find(":-"); dash != std::string::npos) {
      fallback = name.substr(dash + 2);
      name = name.substr(0, dash);
      has_default = true;
    }
    if (!IsIdentifier(name)) {
      out += text[i];
      continue;
    }
    const char* value = std::getenv(name.c_str());
    if (value && *value) {
      out += value;
    } else if (has_default) {
      out += fallback;
    } else {
      problems->push_back(where + ": ${" + name + "} is not set in the environment (give it a value or write ${" +
                          name + ":-default})");
    }
    i = close;
  }
  return out;
}

// Values ExpandAll visits at most, and how deep. An alias (*a) is the
// anchored node itself, not a copy, so it is visited each time it is used:
// nine levels of ten aliases are a billion visits from a few hundred bytes,
// and an alias inside its own anchor (`&a [*a]`) is a cycle.
constexpr size_t kMaxExpandedValues = 100000;
constexpr int kMaxExpandDepth = 64;

struct ExpandState {
  size_t values_left = kMaxExpandedValues;
  std::set<int> expanded;  // source positions of the scalars already expanded
};

// Expands every scalar of `node` in place (Expand), once each: a scalar
// reached again through an alias is already expanded (its `$${` is now `${`).
void ExpandAll(YAML::Node node, const std::string& where, Problems* problems, ExpandState* state, int depth = 0) {
  if (state->values_left == 0) return;
  if (--state->values_left == 0) {
    problems->push_back(where + ": more than " + std::to_string(kMaxExpandedValues) +
                        " values (an alias counts each time it is used)");
    return;
  }
  if (depth > kMaxExpandDepth) {
    problems->push_back(where + ": nested more than " + std::to_string(kMaxExpandDepth) +
                        " levels deep (or an alias inside its own anchor)");
    state->values_left = 0;  // once
    return;
  }
  if (node.IsScalar()) {
    const int pos = node.Mark().pos;
    if (pos >= 0 && !state->expanded.insert(pos).second) return;
    const std::string text = node.Scalar();
    // A Z85 key may hold "${" (its alphabet has both): keys are never expanded.
    const bool key = transport::ValidateZ85Key(text, "key").ok();
    if (!key && text.find("${") != std::string::npos) node = Expand(text, where, problems);
  } else if (node.IsMap()) {
    for (auto kv : node) {
      ExpandAll(kv.second, where + ": " + (IsNameKey(kv.first) ? kv.first.as<std::string>() : "?"), problems, state,
                depth + 1);
    }
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) ExpandAll(node[i], where, problems, state, depth + 1);
  }
}

// `layers: [begin, end]`; with `is_auto`, also `layers: auto`.
void ReadLayers(const YAML::Node& node, int64_t* begin, int64_t* end, bool* present, const std::string& what,
                Problems* problems, bool* is_auto = nullptr) {
  const YAML::Node v = node["layers"];
  *present = false;
  if (!v) return;
  *present = true;  // present, if wrong: named once, not again as missing
  if (is_auto && v.IsScalar() && v.Scalar() == "auto") {
    *is_auto = true;
    return;
  }
  const std::string expected = std::string("expected [begin, end]") + (is_auto ? " or auto" : "");
  std::vector<int64_t> l;
  try {
    l = v.as<std::vector<int64_t>>();
  } catch (const YAML::Exception& e) {
    problems->push_back(what + ": layers: " + expected + " (" + e.what() + ")");
    return;
  }
  if (l.size() != 2) {
    problems->push_back(what + ": layers: " + expected);
    return;
  }
  if (l[0] < 0 || l[0] >= l[1]) {
    problems->push_back(what + ": layers: begin " + std::to_string(l[0]) + " >= end " + std::to_string(l[1]));
    return;
  }
  *begin = l[0];
  *end = l[1];
}

const std::set<std::string> kTopKeys = {"id",
                                        "roles",
                                        "head_stages",
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
                                        "drain_timeout_seconds",
                                        "rebalance_seconds",
                                        "hop_timing",
                                        "log_level",
                                        "log_format",
                                        "step_timeout_seconds",
                                        "kept_session_ttl_seconds",
                                        "kept_session_max_length",
                                        "prefix_reuse",
                                        "int8_link_rtt_ms",
                                        "max_queued_jobs",
                                        "spot_check_fraction",
                                        "test_fault",
                                        "job_journal",
                                        "job_retention_seconds",
                                        "max_batch_sessions",
                                        "burst_wait_ms",
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
void ModelOptionProblems(const NodeConfig& c, const std::function<void(const std::string&)>& problem) {
  const bool cuda = c.device.rfind("cuda:", 0) == 0 && c.device.size() > 5 &&
                    c.device.find_first_not_of("0123456789", 5) == std::string::npos;
  if (c.device != "cpu" && c.device != "cuda" && !cuda)
    problem("device: '" + c.device + "' is not cpu, cuda or cuda:N");
  if (c.backend != "auto" && c.backend != "kernels" && c.backend != "torch")
    problem("backend: '" + c.backend + "' is not auto, kernels or torch");
  if (c.dtype != "auto" && c.dtype != "bf16" && c.dtype != "f16" && c.dtype != "f32")
    problem("dtype: '" + c.dtype + "' is not auto, bf16, f16 or f32");
  if (c.backend == "kernels" && c.device != "cpu") problem("backend: kernels runs on the cpu only, not on " + c.device);
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

std::vector<std::string> ParseNodeConfigProblems(const std::string& text, const std::string& base_dir,
                                                 const std::string& what, NodeConfig* out, bool read_key_files) {
  Problems problems;
  Problems* P = &problems;
  auto problem = [&](const std::string& line) { problems.push_back(what + ": " + line); };
  NodeConfig c;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    problem(std::string("not YAML: ") + e.what());
    return problems;
  }
  if (!root.IsMap()) {
    problem("expected a mapping at the top");
    return problems;
  }
  for (const auto& kv : root) {
    if (!IsNameKey(kv.first)) {
      problem("a key that is a list or mapping, not a name");
      continue;
    }
    const std::string key = kv.first.as<std::string>();
    if (!kTopKeys.count(key)) problem("unknown key '" + key + "'");
  }
  ExpandState expand;
  ExpandAll(root, what, P, &expand);
  Read(root, "id", &c.id, what, P);
  if (c.id.empty() || c.id.size() > 255) problem("id: must be 1 to 255 characters");
  std::vector<std::string> roles;
  Read(root, "roles", &roles, what, P);
  for (const std::string& r : roles) {
    if (r == "head") {
      c.head = true;
    } else if (r == "shard") {
      c.shard = true;
    } else if (r == "embedding") {
      c.embedding = true;
    } else if (r == "lm_head") {
      c.lm_head = true;
    } else {
      problem("roles: unknown role '" + r + "' (head, shard, embedding, lm_head)");
    }
  }
  if (root["head_stages"]) {
    std::vector<std::string> stages;
    Read(root, "head_stages", &stages, what, P);
    c.head_embedding = c.head_lm_head = false;
    for (const std::string& s : stages) {
      if (s == "embedding") {
        c.head_embedding = true;
      } else if (s == "lm_head") {
        c.head_lm_head = true;
      } else {
        problem("head_stages: unknown stage '" + s + "' (embedding, lm_head)");
      }
    }
    if (!c.head) problem("head_stages: only a head has head stages");
  }
  bool has_layers = false;
  ReadLayers(root, &c.layer_begin, &c.layer_end, &has_layers, what, P, &c.layers_auto);
  if (c.shard && !has_layers) problem("layers: a shard needs [begin, end] or auto");
  double memory_mb = 0;
  Read(root, "memory_budget_mb", &memory_mb, what, P);
  if (!(memory_mb >= 0 && memory_mb <= kMaxBudgetMb)) {
    problem("memory_budget_mb: must be >= 0 and at most 2^40");
  } else {
    c.memory_budget_bytes = static_cast<uint64_t>(memory_mb * 1024 * 1024);
  }
  Read(root, "model", &c.model, what, P);
  c.model = Resolve(base_dir, c.model);
  Read(root, "amateur_model", &c.amateur_model, what, P);
  if (!c.amateur_model.empty()) {
    if (!c.head) problem("amateur_model: only a head runs the amateur model");
    c.amateur_model = Resolve(base_dir, c.amateur_model);
  }
  Read(root, "device", &c.device, what, P);
  Read(root, "backend", &c.backend, what, P);
  Read(root, "dtype", &c.dtype, what, P);
  Read(root, "threads", &c.threads, what, P);
  if (c.threads < 0) problem("threads: must be >= 0");
  double budget_mb = -1;
  Read(root, "cache_budget_mb", &budget_mb, what, P);
  if (budget_mb > kMaxBudgetMb) {
    problem("cache_budget_mb: must be at most 2^40");
  } else if (budget_mb >= 0) {
    c.cache_budget_bytes = static_cast<uint64_t>(budget_mb * 1024 * 1024);
  }
  Read(root, "cache_budget_bytes", &c.cache_budget_bytes, what, P);
  Read(root, "idle_timeout_seconds", &c.idle_timeout_seconds, what, P);
  Read(root, "drain_timeout_seconds", &c.drain_timeout_seconds, what, P);
  if (c.drain_timeout_seconds < 0) problem("drain_timeout_seconds: must be >= 0");
  Read(root, "rebalance_seconds", &c.rebalance_seconds, what, P);
  Read(root, "hop_timing", &c.hop_timing, what, P);
  Read(root, "log_level", &c.log_level, what, P);
  if (!logging::ParseLevel(c.log_level).ok()) problem(logging::ParseLevel(c.log_level).status().message());
  Read(root, "log_format", &c.log_format, what, P);
  if (!logging::ParseFormat(c.log_format).ok()) problem(logging::ParseFormat(c.log_format).status().message());
  if (c.rebalance_seconds < 0) problem("rebalance_seconds: must be >= 0");
  Read(root, "step_timeout_seconds", &c.step_timeout_seconds, what, P);
  Read(root, "kept_session_ttl_seconds", &c.kept_session_ttl_seconds, what, P);
  Read(root, "kept_session_max_length", &c.kept_session_max_length, what, P);
  Read(root, "prefix_reuse", &c.prefix_reuse, what, P);
  Read(root, "int8_link_rtt_ms", &c.int8_link_rtt_ms, what, P);
  if (c.int8_link_rtt_ms < 0) problem("int8_link_rtt_ms: must be >= 0");
  Read(root, "max_queued_jobs", &c.max_queued_jobs, what, P);
  Read(root, "spot_check_fraction", &c.spot_check_fraction, what, P);
  if (!(c.spot_check_fraction >= 0 && c.spot_check_fraction <= 1)) problem("spot_check_fraction: must be in [0, 1]");
  Read(root, "test_fault", &c.test_fault, what, P);
  if (!c.test_fault.empty()) {
#ifdef TROUPE_TEST_FAULTS
    if (c.test_fault != "corrupt_output")
      problem("test_fault: '" + c.test_fault + "': the one fault is corrupt_output");
#else
    problem("test_fault: this build has no test faults (configure with -DTROUPE_TEST_FAULTS=ON)");
#endif
  }
  Read(root, "job_journal", &c.job_journal, what, P);
  if (!c.job_journal.empty()) {
    if (!c.head) problem("job_journal: only a head journals jobs");
    c.job_journal = Resolve(base_dir, c.job_journal);
  }
  Read(root, "job_retention_seconds", &c.job_retention_seconds, what, P);
  if (c.job_retention_seconds < 0) problem("job_retention_seconds: must be >= 0");
  if (c.max_queued_jobs < 0) problem("max_queued_jobs: must be >= 0");
  if (c.kept_session_max_length < 1) problem("kept_session_max_length: must be >= 1");
  Read(root, "max_batch_sessions", &c.max_batch_sessions, what, P);
  if (c.max_batch_sessions < 0) problem("max_batch_sessions: must be >= 0");
  Read(root, "burst_wait_ms", &c.burst_wait_ms, what, P);
  if (!(c.burst_wait_ms >= 0 && c.burst_wait_ms <= 1000)) problem("burst_wait_ms: must be in [0, 1000]");
  if (c.idle_timeout_seconds <= 0 || c.step_timeout_seconds <= 0 || c.kept_session_ttl_seconds <= 0) {
    problem("timeouts must be positive");
  }
  if (const YAML::Node ep = root["endpoints"]) {
    if (!ep.IsMap()) {
      problem("endpoints: expected a mapping (listen, advertise, jobs, http)");
    } else {
      for (const auto& kv : ep) {
        if (!IsNameKey(kv.first)) {
          problem("endpoints: a key that is a list or mapping, not a name");
          continue;
        }
        const std::string key = kv.first.as<std::string>();
        if (key != "listen" && key != "advertise" && key != "jobs" && key != "http" && key != "metrics") {
          problem("endpoints: unknown key '" + key + "' (listen, advertise, jobs, http, metrics)");
        }
      }
      Read(ep, "listen", &c.listen, what, P);
      Read(ep, "advertise", &c.advertise, what, P);
      Read(ep, "jobs", &c.job_listen, what, P);
      Read(ep, "http", &c.http_listen, what, P);
      Read(ep, "metrics", &c.metrics_listen, what, P);
    }
  }
  if (!c.metrics_listen.empty()) {
    std::string host;
    int port = 0;
    if (Status st = ParseHostPort(c.metrics_listen, &host, &port); !st.ok()) {
      problem("endpoints: metrics: " + st.message());
    }
  }
  if (!c.http_listen.empty()) {
    std::string host;
    int port = 0;
    if (Status st = ParseHostPort(c.http_listen, &host, &port); !st.ok()) problem("endpoints: http: " + st.message());
    if (!c.head) problem("endpoints: http: only a head serves the HTTP API");
  }
  c.listen = BindSpelling(c.listen);
  c.job_listen = BindSpelling(c.job_listen);
  if (const YAML::Node sec = root["security"]) {
    if (!sec.IsMap()) {
      problem("security: expected a mapping");
    } else {
      for (const auto& kv : sec) {
        if (!IsNameKey(kv.first)) {
          problem("security: a key that is a list or mapping, not a name");
          continue;
        }
        const std::string key = kv.first.as<std::string>();
        if (key != "curve" && key != "secret_key" && key != "allowlist" && key != "insecure" &&
            key != "client_allowlist" && key != "job_curve") {
          problem("security: unknown key '" + key +
                  "' (curve, secret_key, allowlist, client_allowlist, job_curve, insecure)");
        }
      }
      Read(sec, "curve", &c.curve, what, P);
      Read(sec, "secret_key", &c.secret_key_file, what, P);
      Read(sec, "allowlist", &c.allowlist, what, P);
      Read(sec, "insecure", &c.insecure, what, P);
      Read(sec, "client_allowlist", &c.client_allowlist, what, P);
      Read(sec, "job_curve", &c.job_curve, what, P);
      c.secret_key_file = Resolve(base_dir, c.secret_key_file);
      c.allowlist = Resolve(base_dir, c.allowlist);
      c.client_allowlist = Resolve(base_dir, c.client_allowlist);
    }
  }
  if (!c.head && (!c.client_allowlist.empty() || c.job_curve)) {
    problem("security: client_allowlist and job_curve are for a head (its job endpoint)");
  }
  if (c.job_curve && !c.curve) problem("security: job_curve needs curve: true");
  Read(root, "api_keys", &c.api_keys, what, P);
  Read(root, "api_key_file", &c.api_key_file, what, P);
  Read(root, "admin_key_file", &c.admin_key_file, what, P);
  c.api_key_file = Resolve(base_dir, c.api_key_file);
  c.admin_key_file = Resolve(base_dir, c.admin_key_file);
  if (!c.head && (!c.api_keys.empty() || !c.api_key_file.empty() || !c.admin_key_file.empty())) {
    problem("api_keys, api_key_file and admin_key_file are for a head (its HTTP API)");
  }
  Read(root, "head", &c.head_id, what, P);
  if (const YAML::Node peers = root["peers"]) {
    if (!peers.IsSequence()) {
      problem("peers: expected a list");
    } else {
      for (const YAML::Node& p : peers) {
        PeerConfig peer;
        const std::string pw = what + ": peers";
        if (!p.IsMap()) {
          problem("peers: expected {id: ..., endpoint: ..., public_key: ..., layers: [...]}");
          continue;
        }
        Read(p, "id", &peer.id, pw, P);
        if (peer.id.empty()) {
          problems.push_back(pw + ": a peer without id");
          continue;
        }
        Read(p, "endpoint", &peer.endpoint, pw, P);
        Read(p, "public_key", &peer.public_key, pw, P);
        const bool is_key = transport::ValidateZ85Key(peer.public_key, "public key").ok();
        if (!peer.public_key.empty() && !is_key && !read_key_files) {
          peer.public_key = Resolve(base_dir, peer.public_key);  // a file made later: left unread
        } else if (!peer.public_key.empty()) {  // the key, or its node.pub (relative to the config's folder)
          const std::string as_path = Resolve(base_dir, peer.public_key);
          Result<std::string> key = transport::PublicKeyFromArgument(
              transport::ValidateZ85Key(peer.public_key, "public key").ok() ? peer.public_key : as_path);
          if (!key.ok()) {
            problems.push_back(pw + " " + peer.id + ": public_key: " + key.status().message());
          } else {
            peer.public_key = *key;
          }
        }
        ReadLayers(p, &peer.layer_begin, &peer.layer_end, &peer.shard, pw + " " + peer.id, P);
        if (c.FindPeer(peer.id) || peer.id == c.id) {
          problems.push_back(pw + ": duplicate id '" + peer.id + "'");
          continue;
        }
        c.peers.push_back(std::move(peer));
      }
    }
  }
  std::string join, head_key;
  Read(root, "join", &join, what, P);
  Read(root, "head_public_key", &head_key, what, P);
  if (!join.empty()) {
    const bool is_key = transport::ValidateZ85Key(head_key, "public key").ok();
    if (!head_key.empty() && !is_key) head_key = Resolve(base_dir, head_key);
    if (Status st = JoinHead(&c, join, read_key_files || is_key ? head_key : ""); !st.ok()) problem(st.message());
    if (!read_key_files && !is_key && !head_key.empty()) {
      for (PeerConfig& peer : c.peers) {
        if (peer.id == c.head_id) peer.public_key = head_key;  // a file made later: left unread
      }
    }
  } else if (!head_key.empty()) {
    problem("head_public_key: goes with join");
  }
  Read(root, "ready_file", &c.ready_file, what, P);
  c.ready_file = Resolve(base_dir, c.ready_file);
  Read(root, "parent_pid", &c.parent_pid, what, P);
  for (std::string& line : NodeConfigProblems(c, what)) {
    if (std::find(problems.begin(), problems.end(), line) == problems.end()) problems.push_back(std::move(line));
  }
  if (out) *out = std::move(c);
  return problems;
}

Result<NodeConfig> ParseNodeConfig(const std::string& text, const std::string& base_dir, const std::string& what) {
  NodeConfig c;
  std::vector<std::string> problems = ParseNodeConfigProblems(text, base_dir, what, &c);
  if (!problems.empty()) return Status::InvalidArgument(problems.front());
  return c;
}

std::vector<std::string> NodeConfigProblems(const NodeConfig& c, const std::string& what) {
  Problems problems;
  auto problem = [&](const std::string& line) { problems.push_back(what + ": " + line); };
  ModelOptionProblems(c, problem);
  if (c.id.empty() || c.id.size() > 255) problem("id: must be 1 to 255 characters");
  if (!c.head && !c.shard && !c.embedding && !c.lm_head) problem("roles: name head, shard, embedding and/or lm_head");
  if (c.head && (c.embedding || c.lm_head)) {
    problem("roles: a head runs its stages through head_stages, not the embedding/lm_head roles");
  }
  if (c.model.empty()) problem("model: missing");
  if (c.shard && !c.layers_auto && (c.layer_begin < 0 || c.layer_begin >= c.layer_end)) {
    problem("layers: a shard needs [begin, end] with begin < end, or auto");
  }
  if (c.layers_auto && !c.shard) problem("layers: auto is for a shard");
  if (c.layers_auto && c.head) problem("layers: auto needs a head to join, not a head in the same node");
  if (c.layers_auto && c.head_id.empty()) problem("layers: auto needs the head to ask (join: or head:)");
  // Every address bound, none advertised: peers would be told to dial 0.0.0.0.
  if (c.advertise.empty() && (c.listen.rfind("tcp://0.0.0.0:", 0) == 0 || c.listen.rfind("tcp://*:", 0) == 0 ||
                              c.listen.rfind("tcp://[::]:", 0) == 0)) {
    problem("endpoints: listen " + c.listen +
            " binds every address; set endpoints: advertise to the one peers dial (e.g. tcp://10.0.0.5:5601)");
  }
  if (!c.advertise.empty() && (c.advertise.rfind("tcp://0.0.0.0:", 0) == 0 || c.advertise.rfind("tcp://*:", 0) == 0 ||
                               c.advertise.rfind("tcp://[::]:", 0) == 0)) {
    problem("endpoints: advertise " + c.advertise + " is no address a peer can dial; name this node's own");
  }
  if (!c.advertise.empty() && c.advertise.find(":*") != std::string::npos) {
    problem("endpoints: advertise " + c.advertise + " has no port; advertise the port listen binds");
  }
  if (c.curve && (c.secret_key_file.empty() || c.allowlist.empty())) {
    problem("security: curve needs secret_key and allowlist");
  }
  if (!c.head_id.empty() && !c.FindPeer(c.head_id) && c.head_id != c.id) {
    problem("head: '" + c.head_id + "' is not among the peers");
  }
  if (c.curve && !c.head_id.empty() && c.head_id != c.id) {
    const PeerConfig* head = c.FindPeer(c.head_id);
    if (head && head->public_key.empty()) {
      problem("head: '" + c.head_id + "' has no public_key (curve: this node dials it; give head_public_key)");
    }
  }
  return problems;
}

Status ValidateNodeConfig(const NodeConfig& c, const std::string& what) {
  std::vector<std::string> problems = NodeConfigProblems(c, what);
  if (!problems.empty()) return Status::InvalidArgument(problems.front());
  return Status::Ok();
}

Status JoinHead(NodeConfig* c, const std::string& endpoint, const std::string& public_key) {
  if (endpoint.rfind("tcp://", 0) != 0) {
    return Status::InvalidArgument("join: '" + endpoint + "' is not a tcp://HOST:PORT endpoint");
  }
  if (c->head_id.empty()) c->head_id = "head";
  if (c->head_id == c->id) {  // it would be a peer of itself, which no config may name
    return Status::InvalidArgument("join: '" + c->id +
                                   "' is this node's own id: a node does not join itself (name its head with head:)");
  }
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
  if (c.embedding) out << "embedding";
  if (c.lm_head) out << "lm_head";
  out << YAML::EndSeq;
  if (c.head && !(c.head_embedding && c.head_lm_head)) {
    out << YAML::Key << "head_stages" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    if (c.head_embedding) out << "embedding";
    if (c.head_lm_head) out << "lm_head";
    out << YAML::EndSeq;
  }
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
  out << YAML::Key << "drain_timeout_seconds" << YAML::Value << c.drain_timeout_seconds;
  if (c.layers_auto) out << YAML::Key << "rebalance_seconds" << YAML::Value << c.rebalance_seconds;
  if (!c.hop_timing) out << YAML::Key << "hop_timing" << YAML::Value << false;
  if (c.log_level != "info") out << YAML::Key << "log_level" << YAML::Value << c.log_level;
  if (c.log_format != "auto") out << YAML::Key << "log_format" << YAML::Value << c.log_format;
  out << YAML::Key << "step_timeout_seconds" << YAML::Value << c.step_timeout_seconds;
  if (c.head) {
    out << YAML::Key << "kept_session_ttl_seconds" << YAML::Value << c.kept_session_ttl_seconds;
    out << YAML::Key << "kept_session_max_length" << YAML::Value << c.kept_session_max_length;
    out << YAML::Key << "prefix_reuse" << YAML::Value << c.prefix_reuse;
    if (c.int8_link_rtt_ms > 0) out << YAML::Key << "int8_link_rtt_ms" << YAML::Value << c.int8_link_rtt_ms;
    out << YAML::Key << "max_queued_jobs" << YAML::Value << c.max_queued_jobs;
    if (c.spot_check_fraction > 0) out << YAML::Key << "spot_check_fraction" << YAML::Value << c.spot_check_fraction;
    if (!c.job_journal.empty()) out << YAML::Key << "job_journal" << YAML::Value << c.job_journal;
    out << YAML::Key << "job_retention_seconds" << YAML::Value << c.job_retention_seconds;
  }
  if (c.max_batch_sessions > 0) out << YAML::Key << "max_batch_sessions" << YAML::Value << c.max_batch_sessions;
  out << YAML::Key << "burst_wait_ms" << YAML::Value << c.burst_wait_ms;
  if (!c.test_fault.empty()) out << YAML::Key << "test_fault" << YAML::Value << c.test_fault;
  out << YAML::Key << "endpoints" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "listen" << YAML::Value << c.listen;
  if (!c.advertise.empty()) out << YAML::Key << "advertise" << YAML::Value << c.advertise;
  if (c.head) out << YAML::Key << "jobs" << YAML::Value << c.job_listen;
  if (c.head && !c.http_listen.empty()) out << YAML::Key << "http" << YAML::Value << c.http_listen;
  if (!c.metrics_listen.empty()) out << YAML::Key << "metrics" << YAML::Value << c.metrics_listen;
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
  // Values are literal: a "${" in one (a path, an API key, a Z85 key) is
  // written "$${", which reads back as "${".
  std::string text = out.c_str();
  for (size_t at = text.find("${"); at != std::string::npos; at = text.find("${", at + 3)) {
    text.insert(at, "$");
  }
  return text + "\n";
}

}  // namespace troupe::cluster
