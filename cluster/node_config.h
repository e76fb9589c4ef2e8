// NodeConfig: what one Troupe process ("node") hosts and how it talks to the
// others — read from a YAML file by `troupe node --config FILE`.
//
//   id: shard-0                     # node id = its ZeroMQ routing id
//   roles: [shard]                  # head (scheduler, sampler, and the stages in head_stages),
//                                   # shard, embedding, lm_head (a stage node: it runs that
//                                   # stage of the ring for the head, announced like a shard)
//   head_stages: [embedding, lm_head]  # head: the model stages it runs itself (default both);
//                                   # a stage it leaves out goes to stage nodes
//   layers: [0, 10]                 # shard: decoder layers [begin, end), or `auto`: the
//                                   # span that most raises the cluster's weakest coverage
//                                   # within memory_budget_mb, chosen at start from the
//                                   # head's registry (scheduling/span_choice.h)
//   memory_budget_mb: 4096          # shard with layers: auto: weights + KV cache + process;
//                                   # absent = 90% of the memory available at start
//   model: /models/SmolLM2-135M-Instruct.Q4_1.gguf
//   amateur_model: /models/small.gguf # head: contrastive decoding's amateur (same
//                                   # vocabulary as model); absent = none, and
//                                   # contrastive jobs are refused (BAD_REQUEST)
//   device: cpu                     # cpu, cuda or cuda:N (a GPU needs a CUDA libtorch build)
//   backend: auto                   # auto (kernels on cpu, torch elsewhere), kernels or torch
//   dtype: auto                     # torch backend: auto (bf16 on cuda, f32 on cpu), bf16, f16, f32
//   threads: 2                      # compute threads of this process; 0 = all cores
//   cache_budget_mb: 512            # shard: KV cache memory for all sessions
//   idle_timeout_seconds: 600       # shard: close sessions without steps for this long
//   drain_timeout_seconds: 120      # shard: on SIGTERM (or the head's drain) wait at most this
//                                   # long for its running sessions to move or finish; head:
//                                   # on SIGTERM, for its running jobs to finish
//   log_level: info                 # debug, info, warn, error
//   log_format: auto                # auto (text on a terminal, else one JSON object per
//                                   # line), text or json
//   hop_timing: true                # every stage adds its queue/compute/send times to the
//                                   # steps it hands on (the console's waterfall); false: off
//   rebalance_seconds: 120          # shard with layers: auto: how often it asks whether the
//                                   # cluster became lopsided; it moves (drains, then starts
//                                   # again on better layers) when two answers in a row say
//                                   # so; 0 = never moves
//   max_batch_sessions: 0           # sessions per shard / LM head batch; 0 = no limit
//   burst_wait_ms: 1                # a stage holding part of a burst of steps (those
//                                   # one batch sent it) waits this long at most for the
//                                   # rest before it computes (scheduling/burst_gate.h),
//                                   # and the sampler holds a session's next step this
//                                   # long at most for others due back to the same first
//                                   # shard, so that they leave as one burst
//                                   # (scheduling/burst_joiner.h); 0 = never waits.
//                                   # `cluster up` writes 10: its nodes share one
//                                   # machine's cores
//   step_timeout_seconds: 120       # head: fail a session that makes no progress
//   kept_session_ttl_seconds: 300   # head: an idle kept session expires after this long
//                                   # (keep it below the shards' idle_timeout_seconds)
//   kept_session_max_length: 2048   # head: positions a kept session reserves unless its job says
//   max_queued_jobs: 1024           # head: jobs waiting for KV cache at most; past that BUSY
//   job_journal: /var/lib/troupe/jobs.db  # head: the SQLite journal of accepted jobs
//                                   # (scheduling/job_journal.h); absent = in memory,
//                                   # nothing survives a restart
//   job_retention_seconds: 3600     # head: how long an ended job stays to attach to
//   int8_link_rtt_ms: 0             # head: > 0: hidden states go as int8 blocks over links
//                                   # to or from a shard whose measured round trip exceeds
//                                   # this (4x fewer bytes, answers may differ from f32);
//                                   # 0 (default): f32 everywhere, answers exact
//   prefix_reuse: true              # head: park finished jobs' caches on the shards; a job
//                                   # whose prompt starts the same copies them (evicted LRU)
//   spot_check_fraction: 0          # head: the share of sessions run a second time with one
//                                   # span on another replica, to catch a shard computing
//                                   # wrong hidden states (scheduling/spot_checks.h); 0 = none
//   test_fault: corrupt_output      # shard, tests only (builds with TROUPE_TEST_FAULTS):
//                                   # this node lies — it alters the hidden states it sends
//   endpoints:
//     listen: tcp://127.0.0.1:0     # node-to-node ROUTER; port 0 = chosen by the OS
//     advertise: tcp://10.0.0.5:5601  # what peers dial; default: the bound address
//     jobs: tcp://127.0.0.1:5600    # head: the job endpoint (plain only on loopback)
//     http: 127.0.0.1:8000          # head: the OpenAI-compatible HTTP API (http/);
//                                   # host:port, port 0 = chosen by the OS; absent = none.
//                                   # Its handlers are clients of `jobs`; when that is
//                                   # not on loopback (CURVE), the head's own key must
//                                   # be in its allowlist.
//     metrics: 127.0.0.1:9100       # any node: its own GET /metrics (Prometheus text),
//                                   # port 0 = chosen by the OS; absent = none (a head's
//                                   # HTTP API serves the whole cluster's /metrics anyway)
//   api_keys: [sk-0123456789abcdef]  # head: HTTP API keys (Authorization: Bearer KEY),
//                                   # user role, no limits
//   api_key_file: keys/api_keys.txt # head: HTTP API key file, re-read on SIGHUP and
//                                   # POST /admin/keys/reload. One key per line:
//                                   #   [NAME] KEY [role=user|admin] [max_concurrent_jobs=N]
//                                   #   [max_prompt_tokens=N] [max_tokens=N] [max_request_bytes=N]
//                                   # (http/api_keys.h). No api_keys/api_key_file/
//                                   # admin_key_file: the API is open (logged at start).
//   admin_key_file: keys/admin.txt  # head: the same format, every key role=admin unless
//                                   # its line says otherwise; admin keys may change the
//                                   # cluster (/admin/ routes)
//   security:
//     curve: true                   # CURVE + ZAP allowlist on every node link
//     secret_key: keys/shard-0/node.key
//     allowlist: keys/allowlist     # node keys: a .pub file or a directory of them
//     client_allowlist: keys/clients  # head: job clients' keys (a .pub file or directory),
//                                   # checked on the job endpoint only; node keys are not
//                                   # accepted there, client keys not on node links.
//                                   # Absent: only the head itself (its HTTP API) may use
//                                   # a CURVE job endpoint.
//     job_curve: false              # head: CURVE on the job endpoint even on loopback
//                                   # (it always is elsewhere when curve is on)
//     insecure: false               # allow plain binds on non-loopback addresses
//   head: head                      # shard: the node it announces itself to
//   join: tcp://10.0.0.1:5601       # shard: the head's node endpoint — shorthand for a
//                                   # peers entry of `head` (default id "head") with it
//   head_public_key: keys/head.pub  # that entry's public_key (Z85, or a .pub file)
//   peers:                          # other nodes: ids, keys, optional endpoints
//     - {id: head, endpoint: "tcp://127.0.0.1:5601", public_key: "Z85..."}
//     - {id: shard-1, public_key: "Z85...", layers: [10, 20], endpoint: "..."}
//   ready_file: run/shard-0.ready.json  # written once listening (bound endpoints)
//   parent_pid: 1234                # exit when the parent process goes away
//
// Values may name environment variables, as compose and systemd do:
// `${NAME}`, or `${NAME:-default}` when NAME is unset or empty (NAME a C
// identifier; `$${` is a literal `${`; a value that is a Z85 key is never
// expanded); an unset NAME without a default is an error naming it. So one file
// serves every replica (`advertise: tcp://${POD_IP}:5601`) and every machine
// (`model: ${TROUPE_MODEL:-/models/m.gguf}`).
//
// Relative paths are resolved against the config file's folder. Peers with an
// endpoint and layers are routable without announcing themselves; peers
// without an endpoint are learned from announces (shards announce to `head`).
//
// Plain data; LoadNodeConfig / ParseNodeConfig validate and name the first
// bad key ("node config x.yaml: layers: begin 10 >= end 10");
// ParseNodeConfigProblems names every one (`troupe config check`). Hostile
// text is a problem, never an exception or a hang: a key that is a list or
// mapping, a budget past 2^40 MB, more than 100000 values (an alias counts
// each time it is used; a value reached through aliases is expanded once),
// values nested more than 64 deep (an alias inside its own anchor).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/status.h"

namespace troupe::cluster {

struct PeerConfig {
  std::string id;
  std::string endpoint;    // may be empty: learned from the peer's announce
  std::string public_key;  // Z85; required in curve mode for peers this node dials
  bool shard = false;      // set when layers are given
  int64_t layer_begin = 0, layer_end = 0;
};

struct NodeConfig {
  std::string id;
  bool head = false;
  bool shard = false;
  bool embedding = false, lm_head = false;          // stage node roles
  bool head_embedding = true, head_lm_head = true;  // head: runs these stages itself (head_stages)
  bool RunsEmbedding() const { return embedding || (head && head_embedding); }
  bool RunsLmHead() const { return lm_head || (head && head_lm_head); }
  bool StageNode() const { return (embedding || lm_head) && !head; }  // announces its stages to a head
  int64_t layer_begin = 0, layer_end = 0;
  bool layers_auto = false;          // shard: layers chosen at start (layer_begin/end set then)
  uint64_t memory_budget_bytes = 0;  // shard with layers_auto; 0 = 90% of MemAvailable
  std::string model;
  std::string amateur_model;  // head only; empty = no contrastive decoding
  std::string device = "cpu";
  std::string backend = "auto";  // pipeline/model/model_options.h
  std::string dtype = "auto";
  int threads = 0;
  uint64_t cache_budget_bytes = uint64_t{512} << 20;
  double idle_timeout_seconds = 600;
  double drain_timeout_seconds = 120;  // how long a shard's drain or a head's closing waits
  bool hop_timing = true;
  std::string log_level = "info", log_format = "auto";
  double rebalance_seconds = 120;  // layers: auto: how often to ask whether to move; 0 = never
  int max_batch_sessions = 0;
  double burst_wait_ms = 1;  // see burst_wait_ms above
  double step_timeout_seconds = 120;
  double kept_session_ttl_seconds = 300;
  std::string job_journal;              // head: path of the job journal; empty = in memory
  double job_retention_seconds = 3600;  // head: ended jobs kept this long for attach
  int64_t kept_session_max_length = 2048;
  bool prefix_reuse = true;
  double int8_link_rtt_ms = 0;  // head: int8 hidden states over links slower than this; 0 = never
  int64_t max_queued_jobs = 1024;
  double spot_check_fraction = 0;  // head: sessions checked on a second replica (spot_checks.h)
  std::string test_fault;          // shard: "corrupt_output" (TROUPE_TEST_FAULTS builds only); empty = none
  std::string listen = "tcp://127.0.0.1:*";
  std::string advertise;
  std::string job_listen = "tcp://127.0.0.1:*";
  std::string http_listen;     // "host:port" (head); empty = no HTTP server
  std::string metrics_listen;  // "host:port": this node's own /metrics (port 0: the OS picks); empty = none
  bool curve = false;
  std::string secret_key_file;
  std::string allowlist;
  std::string client_allowlist;  // head: job clients' keys; empty = only the head's own
  bool job_curve = false;        // head: CURVE on a loopback job endpoint too
  bool insecure = false;
  std::vector<std::string> api_keys;  // head: HTTP API keys given inline
  std::string api_key_file;           // head: HTTP API key file (re-read on SIGHUP)
  std::string admin_key_file;         // head: HTTP API admin key file
  std::string head_id;
  std::vector<PeerConfig> peers;
  std::string ready_file;
  int parent_pid = 0;

  const PeerConfig* FindPeer(const std::string& id) const;
};

// Whether the head's job endpoint uses CURVE: curve on, and the endpoint
// off loopback or job_curve set.
bool JobEndpointCurve(const NodeConfig& config);

Result<NodeConfig> LoadNodeConfig(const std::string& path);
// The checks ParseNodeConfig makes across keys, for a config built or
// changed in code (`troupe node` flags over a file): InvalidArgument
// naming the first problem, prefixed with `what`.
Status ValidateNodeConfig(const NodeConfig& config, const std::string& what);
// Every problem those checks find, one line each (empty: none).
std::vector<std::string> NodeConfigProblems(const NodeConfig& config, const std::string& what);
// Every problem of a config text, one line each, each prefixed with `what`
// (empty: none; ParseNodeConfig fails with the first). Parsing goes on past
// each problem, so `*out` (when not null) holds what could be read.
// With `read_key_files` false, a public key given as a file path (peers'
// public_key, head_public_key) is kept as that path, unread: what a check
// of configs whose keys are made later (an init step) needs.
std::vector<std::string> ParseNodeConfigProblems(const std::string& yaml, const std::string& base_dir,
                                                 const std::string& what, NodeConfig* out, bool read_key_files = true);
// Makes `head_id` (default "head") a peer at `endpoint` with `public_key`
// (Z85 or a .pub path; may be empty) — what `join:` and `troupe node
// --join` mean. InvalidArgument when `endpoint` is not tcp://, the key does
// not read, or `head_id` is the node's own id (it would be its own peer).
Status JoinHead(NodeConfig* config, const std::string& endpoint, const std::string& public_key);
// `base_dir` resolves relative paths; `what` names the source in errors.
Result<NodeConfig> ParseNodeConfig(const std::string& yaml, const std::string& base_dir, const std::string& what);
// The YAML text of `config` (what `cluster up` writes for its nodes).
std::string NodeConfigToYaml(const NodeConfig& config);

// "host:port" (an optional "http://" prefix allowed; IPv6 hosts in brackets)
// -> host and port 0..65535; InvalidArgument naming the problem.
Status ParseHostPort(const std::string& text, std::string* host, int* port);

// "tcp://h:0" -> "tcp://h:*" (ZeroMQ's spelling of an OS-chosen port).
std::string BindSpelling(const std::string& endpoint);

}  // namespace troupe::cluster
