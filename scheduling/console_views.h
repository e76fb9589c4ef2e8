// ConsoleViews: the admin console's JSON views of the cluster (served as
// /api/v1/<view> by the head's HTTP API; their shapes are in the README,
// "Admin console"), built from what the head's scheduler holds: the
// registry (nodes, coverage), the job life cycle (running and queued jobs,
// their routes), the job book (tokens, ended jobs), the sessions' hop
// timelines and the metric history. Ids of jobs and sessions are decimal
// strings (64-bit values do not survive JavaScript numbers).
//
// A node's state: "draining" (leaving on purpose), "trouble" (alive but not
// usable: `detail` says why), "stale" (silent for kStaleAfter — three
// heartbeats — or past the registry's TTL), "lost" (gone from the registry:
// died, cut off or drained; listed for kLostShown, or until it comes back),
// else "ok". Coverage counts, per layer, the nodes serving it that are ok
// now: the replicas a new session could use. Plain functions; no sockets or
// actors.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "scheduling/job_book.h"
#include "scheduling/job_lifecycle.h"
#include "scheduling/metric_history.h"
#include "scheduling/registry.h"
#include "scheduling/timelines.h"

namespace troupe::scheduling {

// The head itself, as the views show it.
struct ConsoleHead {
  std::string node_id, endpoint, model_name, version, device;
  int64_t n_layers = 0;
  std::string route_problem;  // empty: a job can be routed now
  double uptime_s = 0;
  int64_t unix_ms = 0;
  uint64_t rss_bytes = 0;
  bool runs_embedding = true, runs_lm_head = true;
  double tokens_per_s = 0;  // tokens its sampler produced per second, lately
};

using Json = nlohmann::json;
using ConsoleClock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kStaleAfter{3500};
constexpr std::chrono::minutes kLostShown{10};

// A node that left the registry, as last known, and since when.
struct LostNode {
  ShardEntry entry;
  ConsoleClock::time_point since;
};

// Keeps `lost` up to date: nodes in `before` missing from `now_known` are
// lost from `now`; lost nodes back in `now_known`, or lost longer than
// kLostShown, are dropped.
void TrackLost(const std::map<std::string, ShardEntry>& before, const std::map<std::string, ShardEntry>& now_known,
               ConsoleClock::time_point now, std::map<std::string, LostNode>* lost);

std::string StageName(int stage);  // v1::Stage -> "embedding", "shard", "lm_head", "sampler"

Json ClusterView(const ConsoleHead& head, const Registry& registry, const std::vector<JobLifecycle::JobView>& jobs,
                 ConsoleClock::time_point now);
Json NodesView(const ConsoleHead& head, const Registry& registry, const std::map<std::string, LostNode>& lost,
               ConsoleClock::time_point now);
Json CoverageView(const Registry& registry, const std::map<std::string, LostNode>& lost, int64_t n_layers,
                  ConsoleClock::time_point now);
// Live jobs (queued by position, then running) and the recently ended ones.
Json JobsView(const std::vector<JobBook::Summary>& book, const std::vector<JobLifecycle::JobView>& jobs,
              ConsoleClock::time_point now, double unix_now);
Json SessionsView(const std::vector<JobBook::Summary>& book, const std::vector<JobLifecycle::JobView>& jobs,
                  ConsoleClock::time_point now);
Json TimelineView(uint64_t session_id, uint64_t job_id, const std::vector<StepTiming>& steps);
Json HistoryView(const MetricHistory& history, double seconds, int64_t now_ms);

}  // namespace troupe::scheduling
