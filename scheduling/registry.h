// Registry: which shard node serves which layers, where it listens, and
// whether it is still alive — the scheduler's map of the cluster — and the
// route a new session takes through it.
//
// A route covers the model's layers [0, n_layers) with spans of registered
// shards, starting at layer 0 and continuing where the previous span ended.
// Where several nodes serve the same span (replicas) the registry takes them
// in turn (round robin). Nodes learned from announces expire when they stop
// announcing; nodes from the config never do.
//
// Plain data, no sockets or actors. Thread-safety: none (the scheduler
// actor's own).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "pipeline/status.h"

namespace troupe::scheduling {

struct ShardEntry {
  std::string node_id;
  std::string endpoint;
  int64_t layer_begin = 0, layer_end = 0;
  bool fixed = false;  // from the config: never expires
  std::chrono::steady_clock::time_point last_seen;
  // Last reported load (for status).
  uint64_t cache_bytes_in_use = 0;
  uint32_t sessions = 0;
  std::string public_key{};  // Z85, from its announce (curve mode; checked against the allowlist); may be empty
};

// One shard span of a route.
struct Span {
  std::string node_id;
  std::string endpoint;
  int64_t layer_begin = 0, layer_end = 0;
  std::string public_key;  // the node's, when its announce gave one
};

class Registry {
 public:
  // Announces older than `ttl` make a node unroutable.
  explicit Registry(std::chrono::milliseconds ttl = std::chrono::seconds(10)) : ttl_(ttl) {}

  // Adds or refreshes a node (an announce or a config peer).
  void Upsert(ShardEntry entry);
  void Remove(const std::string& node_id);
  // A heartbeat from a known node: it is alive now. Unknown nodes are ignored
  // (they join by announcing).
  void Touch(const std::string& node_id, std::chrono::steady_clock::time_point now);
  // Learned nodes not heard from for longer than the ttl: stopped, hung or cut off.
  std::vector<std::string> Expired(std::chrono::steady_clock::time_point now) const;
  std::chrono::milliseconds ttl() const { return ttl_; }

  // Spans covering [0, n_layers): NotFound ("no shard serves layer 10") when
  // some layer has no live node.
  Result<std::vector<Span>> Route(int64_t n_layers, std::chrono::steady_clock::time_point now);
  // Whether Route would succeed now, without taking a replica's turn.
  bool Routable(int64_t n_layers, std::chrono::steady_clock::time_point now) const;

  // Live nodes.
  std::vector<ShardEntry> Live(std::chrono::steady_clock::time_point now) const;
  // Per layer of [0, n_layers): how many live nodes serve it.
  std::vector<uint32_t> Coverage(int64_t n_layers, std::chrono::steady_clock::time_point now) const;
  const ShardEntry* Find(const std::string& node_id) const;

 private:
  bool Alive(const ShardEntry& e, std::chrono::steady_clock::time_point now) const;
  // The spans of a route through [0, n_layers), each as its replicas: at
  // each layer the live nodes starting there that reach furthest. NotFound
  // naming the first layer no live node serves.
  Result<std::vector<std::vector<const ShardEntry*>>> Spans(int64_t n_layers,
                                                            std::chrono::steady_clock::time_point now) const;
  std::chrono::milliseconds ttl_;
  std::map<std::string, ShardEntry> nodes_;
  std::map<int64_t, uint64_t> turn_;  // round-robin counter per span start
};

}  // namespace troupe::scheduling
