// LocalCluster: `troupe cluster up` — a head node and shards × replicas shard
// nodes as child processes of this one, on this machine.
//
// In DIR it writes (and reuses on a later run) CURVE keys — keys/<node>/node.key
// and .pub for every node and for a local client, keys/allowlist/*.pub (node
// keys only) and keys/clients/client.pub (the head's client allowlist) — plus
// one config per node (<node>.yaml, format in cluster/node_config.h), their
// ready files (run/) and logs (logs/<node>.log). Layers are split evenly:
// shard i of N serves [L·i/N, L·(i+1)/N); its replicas serve the same span.
//
// Start: the head first (the shards need its address), then every shard; it
// waits for each ready file, then for every shard to be registered and for a
// real job to get through every replica of the ring (a probe with one token),
// and only then writes DIR/cluster.json:
//
//   {"nodes": [{"id": "head", "role": "head", "pid": 123, "layers": [0, 0],
//               "endpoints": {"nodes": "tcp://127.0.0.1:P", "jobs": "tcp://127.0.0.1:Q"},
//               "job_endpoint": "tcp://127.0.0.1:Q", "http_port": H,
//               "http_url": "http://127.0.0.1:H/v1"},
//              {"id": "shard-0", "role": "shard", "pid": 124, "layers": [0, 10],
//               "endpoints": {"nodes": "tcp://127.0.0.1:R"}}, ...],
//    "job_endpoint": "...", "http_port": H, "http_served": true,
//    "http_url": "http://127.0.0.1:H/v1", "curve": true, "pid": <cluster up>, ...}
//
// Node links use CURVE unless `insecure`; the job endpoint is plain on
// loopback unless `job_curve`, then CURVE with the client allowlist
// keys/clients/ (cluster.json: "job_curve", "server_key" — the head's public
// key, Z85 — and "client_key_file", keys/client/node.key; `troupe submit
// --server-key S --client-key F`). HTTP API keys (api_keys, api_key_file,
// admin_key_file) go to the head's config; cluster.json says "api_keys": true
// when requests need one. The head serves the OpenAI-compatible HTTP API (http/) on
// 127.0.0.1:http_port; H is the port actually bound (http_port 0, the
// default: one chosen by the OS). A negative http_port serves none:
// "http_port": null, "http_served": false, no "http_url".
//
// Ports: base_port 0 lets the OS choose every port; base_port P gives the head
// P (nodes) and P+1 (jobs) and shard k P+2+k.
//
// Thread-safety: one thread (the main thread: children's PDEATHSIG follows it).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/status.h"

namespace troupe::cluster {

struct ClusterOptions {
  int shards = 1;
  int replicas = 1;
  int stage_nodes = 0;  // > 0: that many nodes run the embedding and LM head; the head only schedules and samples
  std::string dir;      // empty: a new temporary directory
  int base_port = 0;
  int http_port = 0;                    // the head's HTTP API on http_host; 0 = chosen by the OS; < 0 = none
  std::string http_host = "127.0.0.1";  // where the HTTP API listens (0.0.0.0: every address)
  bool hop_timing = true;               // every node's hop_timing (the console's waterfall)
  bool node_metrics = false;            // every node but the head serves its own /metrics (a port the OS picks)
  bool insecure = false;                // plain node links
  std::string model;
  std::string amateur_model;  // the head's contrastive-decoding amateur; empty = none
  int threads = 0;            // per node; 0 = all cores
  std::string device = "cpu", backend = "auto", dtype = "auto";  // every node's (node_config.h)
  uint64_t cache_budget_bytes = uint64_t{512} << 20;             // per shard node
  int max_batch_sessions = 0;
  // Every node's; see node_config.h. 10, not a node's default 1: the nodes of
  // a local cluster share this machine's cores, so groups of sessions that ran
  // a stage apart gain nothing from computing at once and lose by reading every
  // weight apart; the sampler's longer hold merges them into one batch.
  double burst_wait_ms = 10;
  double kept_session_ttl_seconds = 300;  // the head's; see node_config.h
  bool prefix_reuse = true;               // the head's; see node_config.h
  int64_t max_queued_jobs = 1024;         // the head's; see node_config.h
  double spot_check_fraction = 0;         // the head's; see node_config.h
  double job_retention_seconds = 3600;    // the head's; see node_config.h (its journal: DIR/jobs.db)
  bool journal = true;                    // false: the head keeps jobs in memory only (benchmarks)
  std::vector<std::string> api_keys;      // the head's HTTP API keys (node config api_keys)
  std::string api_key_file;               // node config api_key_file (absolute path given to the head)
  std::string admin_key_file;             // node config admin_key_file
  bool job_curve = false;                 // CURVE on the (loopback) job endpoint too
  double ready_timeout_seconds = 180;
  std::string troupe_binary;  // what runs `node` (troupe-engine beside troupe)
};

struct ClusterNode {
  std::string id;
  bool head = false;
  bool stage = false;  // a stage node: the embedding and the LM head for the head
  int64_t layer_begin = 0, layer_end = 0;
  pid_t pid = -1;
  std::string node_endpoint;
  std::string job_endpoint;
  int http_port = 0;     // head: the bound HTTP API port; 0 = none
  int metrics_port = 0;  // its own /metrics port; 0 = none
};

class LocalCluster {
 public:
  // Starts every node and waits until the ring answers (or fails naming the
  // node and the last lines of its log; nothing is left running then).
  static Result<std::unique_ptr<LocalCluster>> Start(const ClusterOptions& options);
  ~LocalCluster();  // Stop()

  // SIGTERM to every node, SIGKILL after a grace period; reaps them. Idempotent.
  void Stop();

  const std::string& dir() const { return dir_; }
  const std::string& job_endpoint() const { return nodes_.front().job_endpoint; }
  // The head's bound HTTP API port; 0 when it serves none.
  int http_port() const { return nodes_.front().http_port; }
  const std::vector<ClusterNode>& nodes() const { return nodes_; }
  // Empty while all nodes run; else which node stopped and how.
  std::string CheckChildren();
  // Starts the head again after it died, on the same endpoints and with the
  // same journal (DIR/jobs.db: the jobs it had accepted run again), and
  // rewrites cluster.json (its new pid). Fails naming the log when it does
  // not come up within the ready timeout.
  Status RestartHead();

 private:
  LocalCluster() = default;
  Status Launch(const ClusterOptions& options);
  Status WriteClusterJson(const ClusterOptions& options) const;
  ClusterOptions options_;
  std::string dir_;
  std::vector<ClusterNode> nodes_;  // head first
  bool stopped_ = false;
};

// `troupe cluster up`: Start, print the job endpoint (one line on stdout),
// serve until SIGINT/SIGTERM, Stop. A shard that dies is reported (its
// replicas carry on); a head that dies is started again (RestartHead; its
// journal brings back the jobs it had accepted) — when that fails, the
// cluster stops with exit code 1.
int RunClusterUp(const ClusterOptions& options);

}  // namespace troupe::cluster
