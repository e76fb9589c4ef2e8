#include "cluster/local_cluster.h"

#include <signal.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "client/job_client.h"
#include "cluster/child_process.h"
#include "cluster/node_config.h"
#include "cluster/stop_signals.h"
#include "pipeline/format/model_source.h"
#include "transport/keys.h"

namespace troupe::cluster {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// True when a stop signal is pending (they are blocked: see RunClusterUp).
bool StopRequested() { return StopSignals::Pending(); }

const Status kInterrupted = Status::Cancelled("interrupted while starting");

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string LogTail(const std::string& path, size_t lines = 8) {
  std::string text = ReadFile(path);
  size_t pos = text.size();
  for (size_t n = 0; n <= lines && pos > 0; ++n) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) {
      pos = 0;
      break;
    }
  }
  return text.substr(pos);
}

Status WriteAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) return Status::IoError("cannot write " + tmp);
    out << text;
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Status::IoError("cannot rename " + tmp + ": " + ec.message());
  return Status::Ok();
}

std::string Endpoint(int base_port, int offset) {
  return base_port > 0 ? "tcp://127.0.0.1:" + std::to_string(base_port + offset) : "tcp://127.0.0.1:*";
}

// Keys of one node (or of the local client, allowed in `allow_dir`): reuses
// DIR/keys/<id>/node.key when present.
Result<std::string> EnsureKeys(const std::string& dir, const std::string& id,
                               const std::string& allow_dir = "allowlist") {
  const std::string key_dir = dir + "/keys/" + id;
  std::error_code ec;
  fs::create_directories(dir + "/keys", ec);
  if (!fs::exists(key_dir + "/" + transport::kSecretKeyFileName)) {
    TROUPE_RETURN_IF_ERROR(transport::GenerateKeyFiles(key_dir));
  }
  TROUPE_ASSIGN_OR_RETURN(std::string pub, transport::ReadPublicKeyFile(key_dir + "/" + transport::kPublicKeyFileName));
  fs::create_directories(dir + "/keys/" + allow_dir, ec);
  fs::copy_file(key_dir + "/" + transport::kPublicKeyFileName, dir + "/keys/" + allow_dir + "/" + id + ".pub",
                fs::copy_options::overwrite_existing, ec);
  if (ec) return Status::IoError("cannot write the allowlist in " + dir + "/keys/" + allow_dir + ": " + ec.message());
  return pub;
}

// {"pid", "node_endpoint", "job_endpoint"} from a node's ready file, waiting
// for it; fails when the node dies first or the deadline passes.
Status WaitReady(ClusterNode& node, const std::string& ready_file, const std::string& log, Clock::time_point deadline) {
  while (Clock::now() < deadline) {
    if (StopRequested()) return kInterrupted;
    int status = 0;
    if (!ChildRunning(node.pid, &status)) {
      node.pid = -1;
      return Status::Internal("node " + node.id + " " + DescribeExit(status) + "; last lines of " + log + ":\n" +
                              LogTail(log));
    }
    if (fs::exists(ready_file)) {
      try {
        nlohmann::json j = nlohmann::json::parse(ReadFile(ready_file));
        node.node_endpoint = j.at("node_endpoint").get<std::string>();
        node.job_endpoint = j.at("job_endpoint").get<std::string>();
        node.http_port = j.value("http_port", 0);
        node.metrics_port = j.value("metrics_port", 0);
        return Status::Ok();
      } catch (const std::exception& e) {
        return Status::Corrupt(ready_file + ": " + e.what());
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Status::DeadlineExceeded("node " + node.id + " was not ready in time; last lines of " + log + ":\n" +
                                  LogTail(log));
}

}  // namespace

LocalCluster::~LocalCluster() { Stop(); }

void LocalCluster::Stop() {
  if (stopped_) return;
  stopped_ = true;
  std::vector<pid_t> pids;
  // Shards first: the head then sees no half-closed sessions being replayed.
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) pids.push_back(it->pid);
  StopChildren(pids, 10000);
  for (ClusterNode& n : nodes_) n.pid = -1;
}

std::string LocalCluster::CheckChildren() {
  for (ClusterNode& n : nodes_) {
    int status = 0;
    if (n.pid > 0 && !ChildRunning(n.pid, &status)) {
      n.pid = -1;
      return "node " + n.id + " " + DescribeExit(status) + "; see " + dir_ + "/logs/" + n.id + ".log";
    }
  }
  return "";
}

Result<std::unique_ptr<LocalCluster>> LocalCluster::Start(const ClusterOptions& options) {
  std::unique_ptr<LocalCluster> cluster(new LocalCluster());
  Status st = cluster->Launch(options);
  if (!st.ok()) {
    cluster->Stop();
    return st;
  }
  return cluster;
}

Status LocalCluster::RestartHead() {
  ClusterNode& head = nodes_.front();
  const std::string config_path = dir_ + "/" + head.id + ".yaml";
  TROUPE_ASSIGN_OR_RETURN(NodeConfig c, LoadNodeConfig(config_path));
  // The same endpoints: the shards and clients know them.
  c.listen = head.node_endpoint;
  c.job_listen = head.job_endpoint;
  if (head.http_port > 0) c.http_listen = options_.http_host + ":" + std::to_string(head.http_port);
  TROUPE_RETURN_IF_ERROR(WriteAtomically(config_path, NodeConfigToYaml(c)));
  std::error_code ec;
  fs::remove(c.ready_file, ec);
  TROUPE_ASSIGN_OR_RETURN(head.pid, SpawnChild({options_.troupe_binary, "node", "--config", config_path},
                                               {{"GOMP_SPINCOUNT", "1000"}}, dir_ + "/logs/" + head.id + ".log"));
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(options_.ready_timeout_seconds * 1000));
  TROUPE_RETURN_IF_ERROR(WaitReady(head, c.ready_file, dir_ + "/logs/" + head.id + ".log", deadline));
  return WriteClusterJson(options_);
}

Status LocalCluster::Launch(const ClusterOptions& o) {
  options_ = o;
  if (o.shards < 1 || o.replicas < 1) return Status::InvalidArgument("--shards and --replicas must be at least 1");
  std::error_code ec;
  const std::string model = fs::weakly_canonical(o.model, ec).string();
  TROUPE_ASSIGN_OR_RETURN(auto source, ModelSource::Open(model));
  const int64_t n_layers = source->config().n_layers;
  source.reset();
  if (o.shards > n_layers) {
    return Status::InvalidArgument("--shards " + std::to_string(o.shards) + " exceeds the model's " +
                                   std::to_string(n_layers) + " layers");
  }
  dir_ = o.dir;
  if (dir_.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "troupe-cluster-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) return Status::IoError("cannot create a temporary directory");
    dir_ = tmpl;
  }
  fs::create_directories(dir_ + "/run", ec);
  fs::create_directories(dir_ + "/logs", ec);
  if (ec) return Status::IoError("cannot create " + dir_ + ": " + ec.message());
  dir_ = fs::canonical(dir_).string();
  fs::remove(dir_ + "/cluster.json", ec);

  // Who is who: the head, then shard-<k> (replica 0) and shard-<k>-r<j>.
  nodes_.push_back(ClusterNode{"head", true});
  for (int k = 0; k < o.shards; ++k) {
    for (int r = 0; r < o.replicas; ++r) {
      ClusterNode n;
      n.id = "shard-" + std::to_string(k) + (r == 0 ? "" : "-r" + std::to_string(r));
      n.layer_begin = n_layers * k / o.shards;
      n.layer_end = n_layers * (k + 1) / o.shards;
      nodes_.push_back(n);
    }
  }
  for (int k = 0; k < o.stage_nodes; ++k) {
    ClusterNode n;
    n.id = "stages-" + std::to_string(k);
    n.stage = true;
    nodes_.push_back(n);
  }
  std::map<std::string, std::string> public_keys;
  if (!o.insecure) {
    for (const ClusterNode& n : nodes_) {
      TROUPE_ASSIGN_OR_RETURN(public_keys[n.id], EnsureKeys(dir_, n.id));
    }
    // The client's key opens the job endpoint, not node links: a DIR from an
    // older run may still hold it in the node allowlist.
    fs::remove(dir_ + "/keys/allowlist/client.pub", ec);
    TROUPE_RETURN_IF_ERROR(EnsureKeys(dir_, "client", "clients").status());
  }
  if (o.job_curve && o.insecure) return Status::InvalidArgument("--job-curve needs CURVE: drop --insecure");
  auto config_for = [&](const ClusterNode& n, int index) {
    NodeConfig c;
    c.id = n.id;
    c.head = n.head;
    c.shard = !n.head && !n.stage;
    c.embedding = c.lm_head = n.stage;
    if (n.head && o.stage_nodes > 0) c.head_embedding = c.head_lm_head = false;
    c.layer_begin = n.layer_begin;
    c.layer_end = n.layer_end;
    c.model = model;
    if (n.head && !o.amateur_model.empty()) c.amateur_model = fs::weakly_canonical(o.amateur_model, ec).string();
    c.threads = o.threads;
    c.device = o.device;
    c.backend = o.backend;
    c.dtype = o.dtype;
    c.cache_budget_bytes = o.cache_budget_bytes;
    c.max_batch_sessions = o.max_batch_sessions;
    c.burst_wait_ms = o.burst_wait_ms;
    c.kept_session_ttl_seconds = o.kept_session_ttl_seconds;
    c.prefix_reuse = o.prefix_reuse;
    c.max_queued_jobs = o.max_queued_jobs;
    c.spot_check_fraction = o.spot_check_fraction;
    if (n.head && o.journal) c.job_journal = dir_ + "/jobs.db";
    c.job_retention_seconds = o.job_retention_seconds;
    c.hop_timing = o.hop_timing;
    if (o.node_metrics && !n.head) c.metrics_listen = "127.0.0.1:0";
    c.listen = Endpoint(o.base_port, n.head ? 0 : 1 + index);
    c.job_listen = Endpoint(o.base_port, 1);
    if (n.head && o.http_port >= 0) c.http_listen = o.http_host + ":" + std::to_string(o.http_port);
    c.curve = !o.insecure;
    if (c.curve) {
      c.secret_key_file = dir_ + "/keys/" + n.id + "/" + transport::kSecretKeyFileName;
      c.allowlist = dir_ + "/keys/allowlist";
      if (n.head) {
        c.client_allowlist = dir_ + "/keys/clients";
        c.job_curve = o.job_curve;
      }
    }
    if (n.head) {
      c.api_keys = o.api_keys;
      if (!o.api_key_file.empty()) c.api_key_file = fs::absolute(o.api_key_file, ec).string();
      if (!o.admin_key_file.empty()) c.admin_key_file = fs::absolute(o.admin_key_file, ec).string();
    }
    if (!n.head) c.head_id = "head";
    for (const ClusterNode& p : nodes_) {
      if (p.id == n.id) continue;
      PeerConfig peer;
      peer.id = p.id;
      peer.public_key = o.insecure ? "" : public_keys[p.id];
      if (p.head) peer.endpoint = nodes_.front().node_endpoint;
      c.peers.push_back(peer);
    }
    c.ready_file = dir_ + "/run/" + n.id + ".ready.json";
    c.parent_pid = static_cast<int>(::getpid());
    return c;
  };
  const std::map<std::string, std::string> env = {{"GOMP_SPINCOUNT", "1000"}};
  auto launch = [&](ClusterNode& n, int index) -> Status {
    NodeConfig c = config_for(n, index);
    const std::string config_path = dir_ + "/" + n.id + ".yaml";
    TROUPE_RETURN_IF_ERROR(WriteAtomically(config_path, NodeConfigToYaml(c)));
    fs::remove(c.ready_file, ec);
    TROUPE_ASSIGN_OR_RETURN(
        n.pid, SpawnChild({o.troupe_binary, "node", "--config", config_path}, env, dir_ + "/logs/" + n.id + ".log"));
    return Status::Ok();
  };
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(o.ready_timeout_seconds * 1000));
  TROUPE_RETURN_IF_ERROR(launch(nodes_[0], 0));
  TROUPE_RETURN_IF_ERROR(WaitReady(nodes_[0], dir_ + "/run/head.ready.json", dir_ + "/logs/head.log", deadline));
  for (size_t i = 1; i < nodes_.size(); ++i) TROUPE_RETURN_IF_ERROR(launch(nodes_[i], static_cast<int>(i)));
  for (size_t i = 1; i < nodes_.size(); ++i) {
    ClusterNode& n = nodes_[i];
    TROUPE_RETURN_IF_ERROR(
        WaitReady(n, dir_ + "/run/" + n.id + ".ready.json", dir_ + "/logs/" + n.id + ".log", deadline));
  }

  // The ring answers: every shard is registered, and one probe job per
  // replica goes all the way round (the registry takes replicas in turn).
  client::JobClientOptions client_options;
  client_options.endpoint = job_endpoint();
  if (o.job_curve) {
    client_options.server_key = public_keys["head"];
    client_options.client_key_file = dir_ + "/keys/client/" + transport::kSecretKeyFileName;
  }
  client_options.first_reply_ms = 2000;
  client_options.idle_ms = 30000;
  Status last = Status::Unavailable("the ring did not answer");
  bool ready = false;
  while (!ready && Clock::now() < deadline) {
    if (StopRequested()) return kInterrupted;
    if (std::string dead = CheckChildren(); !dead.empty()) return Status::Internal(dead);
    auto client = client::JobClient::Connect(client_options);
    if (!client.ok()) return client.status();
    auto metrics = (*client)->Metrics();
    bool all = metrics.ok();
    for (size_t i = 1; all && i < nodes_.size(); ++i) {
      all = metrics->gauges().count(nodes_[i].id + "/cache_bytes_in_use") > 0;
    }
    if (!all) {
      last = metrics.ok() ? Status::Unavailable("not every shard has registered with the head") : metrics.status();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    ready = true;
    for (int r = 0; r < o.replicas && ready; ++r) {
      v1::JobSubmit probe;
      probe.set_prompt("Hi");
      probe.mutable_sampling()->set_max_tokens(1);
      auto finish = (*client)->Run(probe, nullptr);
      if (!finish.ok()) {
        last = finish.status();
        ready = false;
      }
    }
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (!ready)
    return Status::DeadlineExceeded("the ring did not answer within " +
                                    std::to_string(static_cast<int>(o.ready_timeout_seconds)) +
                                    " s: " + last.ToString());
  return WriteClusterJson(o);
}

Status LocalCluster::WriteClusterJson(const ClusterOptions& o) const {
  nlohmann::json nodes = nlohmann::json::array();
  for (const ClusterNode& n : nodes_) {
    nlohmann::json j = {
        {"id", n.id},
        {"role", n.head    ? "head"
                 : n.stage ? "stages"
                           : "shard"},
        {"pid", static_cast<int>(n.pid)},
        {"layers", {n.layer_begin, n.layer_end}},
        {"endpoints", {{"nodes", n.node_endpoint}}},
        {"log", dir_ + "/logs/" + n.id + ".log"},
    };
    if (n.metrics_port > 0) {
      j["metrics_port"] = n.metrics_port;
      j["metrics_url"] = "http://127.0.0.1:" + std::to_string(n.metrics_port) + "/metrics";
    }
    if (n.head) {
      j["endpoints"]["jobs"] = n.job_endpoint;
      j["job_endpoint"] = n.job_endpoint;
      if (n.http_port > 0) {
        j["http_port"] = n.http_port;
        j["http_url"] = "http://127.0.0.1:" + std::to_string(n.http_port) + "/v1";
      } else {
        j["http_port"] = nullptr;
      }
    } else {
      j["public_key_file"] = o.insecure ? "" : dir_ + "/keys/" + n.id + "/" + transport::kPublicKeyFileName;
    }
    nodes.push_back(j);
  }
  nlohmann::json doc = {
      {"nodes", nodes},
      {"job_endpoint", job_endpoint()},
      {"http_port", http_port() > 0 ? nlohmann::json(http_port()) : nlohmann::json(nullptr)},
      {"http_served", http_port() > 0},
      {"curve", !o.insecure},
      {"job_curve", o.job_curve},
      {"api_keys", !o.api_keys.empty() || !o.api_key_file.empty() || !o.admin_key_file.empty()},
      {"pid", static_cast<int>(::getpid())},
      {"dir", dir_},
      {"model", fs::weakly_canonical(o.model).string()},
      {"amateur_model", o.amateur_model.empty() ? nlohmann::json(nullptr)
                                                : nlohmann::json(fs::weakly_canonical(o.amateur_model).string())},
      {"shards", o.shards},
      {"replicas", o.replicas},
  };
  if (http_port() > 0) doc["http_url"] = "http://127.0.0.1:" + std::to_string(http_port()) + "/v1";
  if (!o.insecure) {  // what a CURVE job client needs (with --job-curve)
    auto head_key = transport::ReadPublicKeyFile(dir_ + "/keys/head/" + transport::kPublicKeyFileName);
    if (head_key.ok()) doc["server_key"] = *head_key;
    doc["server_key_file"] = dir_ + "/keys/head/" + transport::kPublicKeyFileName;
    doc["client_key_file"] = dir_ + "/keys/client/" + transport::kSecretKeyFileName;
    doc["client_allowlist"] = dir_ + "/keys/clients";
  }
  return WriteAtomically(dir_ + "/cluster.json", doc.dump(2) + "\n");
}

int RunClusterUp(const ClusterOptions& options) {
  const StopSignals stop = StopSignals::Block();
  // A signal while starting must still stop the children that exist: poll for it.
  auto cluster = LocalCluster::Start(options);
  if (!cluster.ok()) {
    std::cerr << "troupe: cluster up: " << cluster.status().ToString() << std::endl;
    return 1;
  }
  LocalCluster& c = **cluster;
  std::cout << c.job_endpoint() << std::endl;
  std::cerr << "troupe: cluster up: head + " << options.shards << " shard(s)"
            << (options.replicas > 1 ? " x " + std::to_string(options.replicas) + " replicas" : "")
            << (options.insecure ? ", plain links" : ", CURVE links") << "; jobs on " << c.job_endpoint()
            << (options.job_curve ? " (CURVE, client key " + c.dir() + "/keys/client/node.key)" : "")
            << (c.http_port() > 0 ? "; HTTP API on http://127.0.0.1:" + std::to_string(c.http_port()) + "/v1" : "")
            << "; " << c.dir() << "/cluster.json; Ctrl-C stops" << std::endl;
  int code = 0;
  while (true) {
    if (stop.Wait(200)) break;
    if (std::string dead = c.CheckChildren(); !dead.empty()) {
      if (c.nodes().front().pid > 0) {  // a shard: its replicas (if any) carry on
        std::cerr << "troupe: cluster up: " << dead << std::endl;
        continue;
      }
      std::cerr << "troupe: cluster up: " << dead << "; starting it again" << std::endl;
      if (Status st = c.RestartHead(); !st.ok()) {
        std::cerr << "troupe: cluster up: the head did not start again: " << st.ToString() << "; stopping the cluster"
                  << std::endl;
        code = 1;
        break;
      }
      std::cerr << "troupe: cluster up: the head runs again (pid " << c.nodes().front().pid
                << "); its journal brings back the jobs it had accepted" << std::endl;
    }
  }
  c.Stop();
  return code;
}

}  // namespace troupe::cluster
