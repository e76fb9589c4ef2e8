// MetricsQueries: a client's request for the cluster's metrics, fanned out to
// every live shard node and merged into one MetricsSnapshot.
//
//   Begin(client, request, head's own snapshot, route_problem)
//     └─ the head's counters under "<head>/<name>", and "<head>/route_ready"
//        1|0 (can a job be routed through every layer now: route_problem
//        empty) with route_problem, why not, in the snapshot's field
//   Expect(q, node)   a snapshot query was sent to `node`
//   Answer(q, snap)   `node`'s snapshot: merged under "<node>/<name>"
//   Finish / Tick     the merged snapshot, once every expected node answered or
//                     the deadline (2 s) passed; each node still silent then
//                     reads "<node>/unreachable" = 1
//
// Each query is answered exactly once. Time is passed in. Plain data;
// thread-safety: none (the scheduler actor's own).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "messages/origin.h"
#include "messages/troupe.pb.h"
#include "scheduling/actions.h"

namespace troupe::scheduling {

// Adds `from`'s counters and gauges to `into` under "<from.node_id>/<name>" keys.
void MergeSnapshot(v1::MetricsSnapshot& into, const v1::MetricsSnapshot& from);

class MetricsQueries {
 public:
  explicit MetricsQueries(std::chrono::milliseconds timeout = std::chrono::seconds(2)) : timeout_(timeout) {}

  // Starts a query answering `request_id` to `client`; returns its id (the
  // request id of the queries sent to the nodes).
  uint64_t Begin(const Origin& client, uint64_t request_id, const v1::MetricsSnapshot& head,
                 const std::string& route_problem, Clock::time_point now);
  // The query `q` was sent to `node_id`: wait for its answer.
  void Expect(uint64_t q, const std::string& node_id);
  // A gauge the head knows of `node_id` (its layers from the registry), as
  // "<node_id>/<name>" in the answer to `q`.
  void Note(uint64_t q, const std::string& node_id, const std::string& name, double value);
  // The answer to `q` when nothing more is expected; nullopt otherwise (or
  // for an unknown query).
  std::optional<Reply> Finish(uint64_t q);
  // `snapshot` answers query `q`; the reply when it was the last one awaited.
  // Unknown or already answered queries are ignored.
  std::optional<Reply> Answer(uint64_t q, const v1::MetricsSnapshot& snapshot);
  // Queries past their deadline, answered with what they have.
  std::vector<Reply> Tick(Clock::time_point now);

  size_t size() const { return queries_.size(); }
  void Clear() { queries_.clear(); }

 private:
  struct Query {
    Origin client;
    uint64_t request_id = 0;
    std::set<std::string> waiting;
    v1::MetricsSnapshot merged;
    Clock::time_point deadline;
  };
  Reply Complete(std::map<uint64_t, Query>::iterator it);

  std::chrono::milliseconds timeout_;
  std::map<uint64_t, Query> queries_;
  uint64_t next_query_ = 0;
};

}  // namespace troupe::scheduling
