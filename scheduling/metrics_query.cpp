#include "scheduling/metrics_query.h"

#include <utility>

#include "messages/envelope_codec.h"

namespace troupe::scheduling {

void MergeSnapshot(v1::MetricsSnapshot& into, const v1::MetricsSnapshot& from) {
  const std::string prefix = from.node_id() + "/";
  for (const auto& [k, v] : from.counters()) (*into.mutable_counters())[prefix + k] = v;
  for (const auto& [k, v] : from.gauges()) (*into.mutable_gauges())[prefix + k] = v;
  for (const auto& [k, v] : from.histograms()) (*into.mutable_histograms())[prefix + k] = v;
}

uint64_t MetricsQueries::Begin(const Origin& client, uint64_t request_id, const v1::MetricsSnapshot& head,
                               const std::string& route_problem, Clock::time_point now) {
  const uint64_t q = ++next_query_;
  Query& query = queries_[q];
  query.client = client;
  query.request_id = request_id;
  query.deadline = now + timeout_;
  query.merged.set_node_id(head.node_id());
  MergeSnapshot(query.merged, head);
  // 1 while the registry has a route through every layer (a job would be
  // accepted now); what the HTTP front end's /health reports.
  (*query.merged.mutable_gauges())[head.node_id() + "/route_ready"] = route_problem.empty() ? 1.0 : 0.0;
  query.merged.set_route_problem(route_problem);
  return q;
}

void MetricsQueries::Expect(uint64_t q, const std::string& node_id) {
  auto it = queries_.find(q);
  if (it != queries_.end()) it->second.waiting.insert(node_id);
}

void MetricsQueries::Note(uint64_t q, const std::string& node_id, const std::string& name, double value) {
  auto it = queries_.find(q);
  if (it != queries_.end()) (*it->second.merged.mutable_gauges())[node_id + "/" + name] = value;
}

std::optional<Reply> MetricsQueries::Finish(uint64_t q) {
  auto it = queries_.find(q);
  if (it == queries_.end() || !it->second.waiting.empty()) return std::nullopt;
  return Complete(it);
}

std::optional<Reply> MetricsQueries::Answer(uint64_t q, const v1::MetricsSnapshot& snapshot) {
  auto it = queries_.find(q);
  if (it == queries_.end()) return std::nullopt;
  MergeSnapshot(it->second.merged, snapshot);
  it->second.waiting.erase(snapshot.node_id());
  if (!it->second.waiting.empty()) return std::nullopt;
  return Complete(it);
}

std::vector<Reply> MetricsQueries::Tick(Clock::time_point now) {
  std::vector<Reply> out;
  for (auto it = queries_.begin(); it != queries_.end();) {
    auto next = std::next(it);
    if (now >= it->second.deadline) out.push_back(Complete(it));
    it = next;
  }
  return out;
}

Reply MetricsQueries::Complete(std::map<uint64_t, Query>::iterator it) {
  v1::Envelope env = NewEnvelope(it->second.request_id);
  *env.mutable_metrics_snapshot() = std::move(it->second.merged);
  for (const std::string& missing : it->second.waiting) {
    (*env.mutable_metrics_snapshot()->mutable_gauges())[missing + "/unreachable"] = 1;
  }
  Reply reply{it->second.client, std::move(env)};
  queries_.erase(it);
  return reply;
}

}  // namespace troupe::scheduling
