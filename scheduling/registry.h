// Registry: which shard node serves which layers, where it listens, and
// whether it is still alive — the scheduler's map of the cluster — and the
// route a new session takes through it.
//
// A route covers the model's layers [0, n_layers) with spans of registered
// shards, starting at layer 0 and continuing where the previous span ended.
// It is the shortest such path by estimated step time: each node costs its
// round trip from the head (measured by pings; links are what a slow hop
// pays) plus its measured compute per step times (1 + the sessions on it),
// so sessions take the fast nodes and spread over replicas by load. A node
// not measured yet costs kDefaultStepMs per session; equal costs go to the
// node whose turn it is (so equal replicas alternate). Each route taken
// counts a session on its nodes until their next heartbeat reports the
// real number. Nodes learned from announces expire when they stop
// announcing; nodes from the config never do.
//
// Trouble: a node the head cannot use although it is alive — the head's
// link to it is refused or its handshakes fail, or the head refused its key
// (SetTrouble) — takes no new session until the trouble is cleared; a hop
// from a node to one it reports it cannot reach (SetUnreachable: its key
// is not in that node's allowlist...) is never part of a route. Without a
// route, Route's error names these troubles, not only the missing layers.
//
// Draining: a node that is leaving on purpose (SetDraining: an operator's
// drain, or its own announce saying so) takes no new session and is not
// counted in coverage (so a joining node fills its place); a draining node
// from the config expires like a learned one, so that once gone it leaves
// the registry until it announces again.
//
// Quarantine: a node its replicas found computing wrong hidden states
// (spot_checks.h) takes no new session and is not counted in coverage, like
// a draining one, and says so in Route's errors. It lasts while the head
// runs: a refreshed announce, or the node started again, keeps it.
//
// Stage nodes: nodes that run the embedding or the LM head for the ring
// (`stages`, no layers) announce themselves like shards; StageNode picks one
// for a session's route when the head does not run that stage itself.
//
// Plain data, no sockets or actors. Thread-safety: none (the scheduler
// actor's own).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/status.h"

namespace troupe::scheduling {

// The cost per session of a node whose step time is not measured yet.
constexpr double kDefaultStepMs = 1.0;

// What a node's heartbeats say of it beyond routing (status, the console).
struct NodeDetails {
  uint64_t rss_bytes = 0;
  std::string version, device;
  uint64_t cache_bytes = 0, cache_budget_bytes = 0;
  uint64_t steps_total = 0;
  double steps_per_s = 0;  // from successive heartbeats' steps_total, smoothed
  std::chrono::steady_clock::time_point steps_at{};
};

struct ShardEntry {
  std::string node_id;
  std::string endpoint;
  int64_t layer_begin = 0, layer_end = 0;
  bool fixed = false;  // from the config: never expires
  std::chrono::steady_clock::time_point last_seen;
  // Last reported load (for status and routing).
  uint64_t cache_bytes_in_use = 0;
  uint32_t sessions = 0;
  double step_ms = -1;       // measured compute per step (its heartbeats); < 0 = not yet
  double rtt_ms = -1;        // measured round trip from the head (pings); < 0 = not yet
  std::string public_key{};  // Z85, from its announce (curve mode; checked against the allowlist); may be empty
  std::string trouble{};     // why the head cannot use it now; empty = none
  std::map<std::string, std::string> unreachable{};  // nodes it cannot send to -> why (its heartbeats)
  bool draining = false;                             // leaving: no new sessions (SetDraining)
  std::string quarantine{};                          // why its replicas found it wrong; empty = not quarantined
  std::vector<int> stages{};  // a stage node: the v1::Stage values it runs (no layers); empty for a shard
  uint64_t incarnation = 0;   // its process's (RegistryAnnounce.incarnation); 0 = not told
  NodeDetails details{};      // from its heartbeats (ReportDetails)
};

// One shard span of a route.
struct Span {
  std::string node_id;
  std::string endpoint;
  int64_t layer_begin = 0, layer_end = 0;
  std::string public_key;  // the node's, when its announce gave one
  double rtt_ms = -1;      // its measured round trip from the head; < 0 = not yet
};

class Registry {
 public:
  // Announces older than `ttl` make a node unroutable.
  explicit Registry(std::chrono::milliseconds ttl = std::chrono::seconds(10)) : ttl_(ttl) {}

  // Adds or refreshes a node (an announce or a config peer). A refresh keeps
  // what was measured and whether it drains; an entry with another non-zero
  // incarnation is the node started again: it keeps only `fixed` and the
  // link's round trip (Restarted tells the two apart).
  void Upsert(ShardEntry entry);
  void Remove(const std::string& node_id);
  // Whether Upsert(entry) would replace a known node's earlier process.
  bool Restarted(const ShardEntry& entry) const;
  // A heartbeat from a known node: it is alive now. Unknown nodes are ignored
  // (they join by announcing).
  void Touch(const std::string& node_id, std::chrono::steady_clock::time_point now);
  // What its heartbeat reports: compute per step (< 0: none measured yet)
  // and sessions open on it.
  void Report(const std::string& node_id, double step_ms, uint32_t sessions);
  // The rest of its heartbeat (`d.steps_per_s` is worked out here from the
  // last report's steps_total). Unknown nodes are ignored.
  void ReportDetails(const std::string& node_id, NodeDetails d, std::chrono::steady_clock::time_point now);
  // The head cannot use the node (`text` says why), or — empty — can again.
  // Unknown nodes are ignored.
  void SetTrouble(const std::string& node_id, std::string text);
  // The node is leaving: no new session goes to it. Kept until the node is
  // removed (an announce does not clear it). Unknown nodes are ignored.
  void SetDraining(const std::string& node_id);
  // Its replicas found it wrong (`why`): no new session goes to it, for
  // good. Unknown nodes are ignored.
  void SetQuarantined(const std::string& node_id, std::string why);
  // What the node reports it cannot reach (node id -> why); replaces the last report.
  void SetUnreachable(const std::string& node_id, std::map<std::string, std::string> nodes);
  // A ping's round trip to the node (smoothed over the last few).
  void RecordRoundTrip(const std::string& node_id, double rtt_ms);
  // The estimated cost of one more session's step through the node, ms.
  static double Cost(const ShardEntry& e);
  // Learned nodes not heard from for longer than the ttl: stopped, hung or cut off.
  std::vector<std::string> Expired(std::chrono::steady_clock::time_point now) const;
  std::chrono::milliseconds ttl() const { return ttl_; }

  // Spans covering [0, n_layers): NotFound ("no shard serves layer 10") when
  // some layer has no live node.
  Result<std::vector<Span>> Route(int64_t n_layers, std::chrono::steady_clock::time_point now);
  // Whether Route would succeed now, without taking a replica's turn.
  bool Routable(int64_t n_layers, std::chrono::steady_clock::time_point now) const;
  // Why Route would fail now (its error's text); "" when it would succeed.
  std::string RouteProblem(int64_t n_layers, std::chrono::steady_clock::time_point now) const;

  // The node to run ring stage `stage` (v1::Stage: embedding, LM head) for a
  // new session: the cheapest live, usable stage node serving it (Cost, as
  // for shards; sessions counted the same way); nullopt when none does.
  std::optional<Span> StageNode(int stage, std::chrono::steady_clock::time_point now);
  bool HasStageNode(int stage, std::chrono::steady_clock::time_point now) const;

  // Live nodes.
  std::vector<ShardEntry> Live(std::chrono::steady_clock::time_point now) const;
  // Live nodes that can take a new session: no trouble, not draining, not quarantined.
  std::vector<ShardEntry> Usable(std::chrono::steady_clock::time_point now) const;
  // Every node it holds, live or not, by id.
  const std::map<std::string, ShardEntry>& All() const { return nodes_; }
  bool IsAlive(const ShardEntry& e, std::chrono::steady_clock::time_point now) const { return Alive(e, now); }
  // Per layer of [0, n_layers): how many live nodes serve it.
  std::vector<uint32_t> Coverage(int64_t n_layers, std::chrono::steady_clock::time_point now) const;
  const ShardEntry* Find(const std::string& node_id) const;

 private:
  bool Alive(const ShardEntry& e, std::chrono::steady_clock::time_point now) const;
  bool CanTake(const ShardEntry& e, std::chrono::steady_clock::time_point now) const {
    return Alive(e, now) && e.trouble.empty() && !e.draining && e.quarantine.empty();
  }
  const ShardEntry* CheapestStage(int stage, std::chrono::steady_clock::time_point now) const;
  // The troubles of live nodes, "; "-joined, for errors ("" when none).
  std::string Troubles(std::chrono::steady_clock::time_point now) const;
  // The cheapest path of live nodes through [0, n_layers) (Cost per node,
  // ties to the turn); NotFound naming the first layer no path reaches.
  Result<std::vector<const ShardEntry*>> Cheapest(int64_t n_layers, std::chrono::steady_clock::time_point now) const;
  std::chrono::milliseconds ttl_;
  std::map<std::string, ShardEntry> nodes_;
  uint64_t turn_ = 0;  // which of equal-cost nodes goes first
};

}  // namespace troupe::scheduling
