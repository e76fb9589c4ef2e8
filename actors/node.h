// Node: one Troupe process's share of the ring — the actors its config names
// (head: Scheduler, Embedding, LmHead, Sampler; shard: one Shard), the
// bridge thread that owns its sockets, and the model pieces they run.
//
// Start order: model pieces (a shard loads only its layers: the weights stay
// in the file mapping and only its layers' pages are touched) → ZeroMQ
// context and ZAP handler (curve mode) → poll loop (bridge thread) → bound
// listeners → actor system and actors → listeners handed to the loop → the
// HTTP API (head with endpoints.http; http/http_server.h), whose handlers are
// JobClients of the node's own job endpoint.
// Stop order (the reverse, and what CAF 0.17 needs to shut down cleanly):
// the HTTP API drains (new requests 503) → actors exit and close their
// outboxes (running jobs get UNAVAILABLE) → the HTTP workers are joined →
// the bridge thread is joined → the actor system is destroyed → ZAP handler
// → context.
//
// This header is free of CAF and torch. Thread-safety: Start/Stop from one
// thread; the accessors are immutable after Start.
#pragma once

#include <memory>
#include <string>

#include "cluster/node_config.h"
#include "pipeline/status.h"

namespace troupe::actors {

class Node {
 public:
  // Fails naming the problem: model, keys, a refused bind, a bad config.
  static Result<std::unique_ptr<Node>> Start(const cluster::NodeConfig& config);
  ~Node();  // Stop()
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  void Stop();

  const std::string& id() const;
  // The advertised node-to-node address, and the job endpoint's bound address
  // (head only; empty otherwise).
  const std::string& node_endpoint() const;
  const std::string& job_endpoint() const;
  // The bound port of the HTTP API (head with endpoints.http), else 0.
  int http_port() const;
  // The bound port of this node's own /metrics (endpoints.metrics), else 0.
  int metrics_port() const;

  // Who may use the head's doors (job endpoint, HTTP API), for the log.
  std::string DescribeAccess() const;
  // Re-reads the HTTP API key files (SIGHUP). On failure the keys in force
  // stay and the Status says why; Unsupported when no keys are configured.
  // Any thread.
  Status ReloadKeys();
  std::string DescribeKeys() const;  // "3 key(s) (1 admin) from ...";

  // Drain (a shard): Draining() once SIGTERM (BeginDrain) or the head's
  // NodeDrain asked it to leave; LiveSessions() running sessions (parked
  // caches excepted). Any thread.
  bool Draining() const;
  void BeginDrain();
  uint64_t LiveSessions() const;
  double DrainTimeout() const;  // the head's bound for this drain, 0 for none
  uint64_t StepsTotal() const;  // steps this node has run

  // Closing (a head): after BeginClosing (SIGTERM) the head takes no new job;
  // ActiveJobs() are those still running (queued ones wait in the journal).
  // Any thread.
  void BeginClosing();
  uint64_t ActiveJobs() const;

  struct Impl;

 private:
  explicit Node(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Writes `config.ready_file` (when set): {"id", "pid", "node_endpoint",
// "job_endpoint", "http_port" (0: none), "metrics_port" (0: none), "layers"}
// as JSON, atomically (rename).
Status WriteReadyFile(const cluster::NodeConfig& config, const Node& node);

// `troupe node`: starts the node, writes its ready file, serves until
// SIGINT/SIGTERM or until its parent (config.parent_pid) goes away, then
// stops. A shard drains first on SIGTERM (or when the head asks): it takes
// no new session, the head moves its running ones to replicas or lets them
// finish, and it leaves once none is left or after drain_timeout_seconds (a
// second SIGTERM, or SIGINT, leaves at once). SIGHUP re-reads the HTTP API key files (logged either way). Returns the
// process exit code; errors are printed to stderr.
//
// A shard with `layers: auto` also moves when the cluster becomes lopsided
// (join.h: CheckMove, every rebalance_seconds; two answers in a row): it
// drains as above and returns kExitToMove, and the caller starts it again
// (the same command: it chooses its layers anew). The span it set out for
// travels to the new process in the environment (kMoveToEnv, "BEGIN-END"),
// which it prefers among equally good spans (scheduling::ChooseSpan).
int RunNode(const cluster::NodeConfig& config);
constexpr int kExitToMove = 75;
constexpr const char* kMoveToEnv = "TROUPE_MOVE_TO";

}  // namespace troupe::actors
