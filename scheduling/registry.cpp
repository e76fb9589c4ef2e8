#include "scheduling/registry.h"

#include <algorithm>
#include <cstddef>
#include <limits>

namespace troupe::scheduling {

bool Registry::Restarted(const ShardEntry& entry) const {
  auto it = nodes_.find(entry.node_id);
  return it != nodes_.end() && entry.incarnation != 0 && it->second.incarnation != 0 &&
         entry.incarnation != it->second.incarnation;
}

void Registry::Upsert(ShardEntry entry) {
  auto it = nodes_.find(entry.node_id);
  if (it != nodes_.end() && Restarted(entry)) {  // a new process: nothing carries over but the link
    if (it->second.fixed) entry.fixed = true;
    if (entry.rtt_ms < 0) entry.rtt_ms = it->second.rtt_ms;
    entry.quarantine = it->second.quarantine;  // ... and the verdict of its replicas
  } else if (it != nodes_.end()) {             // a refreshed announce keeps what was measured
    if (it->second.fixed) entry.fixed = true;
    if (entry.step_ms < 0) entry.step_ms = it->second.step_ms;
    if (entry.rtt_ms < 0) entry.rtt_ms = it->second.rtt_ms;
    if (entry.sessions == 0) entry.sessions = it->second.sessions;
    if (entry.trouble.empty()) entry.trouble = it->second.trouble;
    if (entry.unreachable.empty()) entry.unreachable = it->second.unreachable;
    if (entry.stages.empty()) entry.stages = it->second.stages;
    entry.draining = entry.draining || it->second.draining;
    if (entry.quarantine.empty()) entry.quarantine = it->second.quarantine;
    if (entry.incarnation == 0) entry.incarnation = it->second.incarnation;
    entry.details = it->second.details;
  }
  nodes_[entry.node_id] = std::move(entry);
}

void Registry::Report(const std::string& node_id, double step_ms, uint32_t sessions) {
  auto it = nodes_.find(node_id);
  if (it == nodes_.end()) return;
  if (step_ms >= 0) it->second.step_ms = step_ms;
  it->second.sessions = sessions;
}

void Registry::ReportDetails(const std::string& node_id, NodeDetails d, std::chrono::steady_clock::time_point now) {
  auto it = nodes_.find(node_id);
  if (it == nodes_.end()) return;
  const NodeDetails& before = it->second.details;
  d.steps_per_s = before.steps_per_s;
  const double dt = std::chrono::duration<double>(now - before.steps_at).count();
  if (before.steps_at.time_since_epoch().count() != 0 && dt > 0.05 && d.steps_total >= before.steps_total) {
    const double rate = static_cast<double>(d.steps_total - before.steps_total) / dt;
    d.steps_per_s = before.steps_per_s > 0 ? 0.5 * before.steps_per_s + 0.5 * rate : rate;
  }
  d.steps_at = now;
  it->second.details = std::move(d);
}

void Registry::SetTrouble(const std::string& node_id, std::string text) {
  auto it = nodes_.find(node_id);
  if (it != nodes_.end()) it->second.trouble = std::move(text);
}

void Registry::SetDraining(const std::string& node_id) {
  auto it = nodes_.find(node_id);
  if (it != nodes_.end()) it->second.draining = true;
}

void Registry::SetQuarantined(const std::string& node_id, std::string why) {
  auto it = nodes_.find(node_id);
  if (it != nodes_.end()) it->second.quarantine = std::move(why);
}

void Registry::SetUnreachable(const std::string& node_id, std::map<std::string, std::string> nodes) {
  auto it = nodes_.find(node_id);
  if (it != nodes_.end()) it->second.unreachable = std::move(nodes);
}

std::string Registry::Troubles(std::chrono::steady_clock::time_point now) const {
  std::string out;
  auto add = [&out](const std::string& line) { out += (out.empty() ? "" : "; ") + line; };
  for (const auto& [id, e] : nodes_) {
    if (!Alive(e, now)) continue;
    const std::string span = " (layers " + std::to_string(e.layer_begin) + "-" + std::to_string(e.layer_end) + ")";
    if (!e.trouble.empty()) add("shard '" + id + "'" + span + " is unusable: " + e.trouble);
    if (e.draining) add("shard '" + id + "'" + span + " is draining");
    if (!e.quarantine.empty()) add("shard '" + id + "'" + span + " is quarantined: " + e.quarantine);
    for (const auto& [to, why] : e.unreachable) add("shard '" + id + "'" + span + " cannot reach '" + to + "': " + why);
  }
  return out;
}

void Registry::RecordRoundTrip(const std::string& node_id, double rtt_ms) {
  auto it = nodes_.find(node_id);
  if (it == nodes_.end() || rtt_ms < 0) return;
  double& r = it->second.rtt_ms;
  r = r < 0 ? rtt_ms : 0.7 * r + 0.3 * rtt_ms;
}

double Registry::Cost(const ShardEntry& e) {
  const double step = e.step_ms >= 0 ? std::max(e.step_ms, 0.01) : kDefaultStepMs;
  return std::max(e.rtt_ms, 0.0) + step * (1.0 + e.sessions);
}

void Registry::Remove(const std::string& node_id) { nodes_.erase(node_id); }

void Registry::Touch(const std::string& node_id, std::chrono::steady_clock::time_point now) {
  auto it = nodes_.find(node_id);
  if (it != nodes_.end()) it->second.last_seen = std::max(it->second.last_seen, now);
}

std::vector<std::string> Registry::Expired(std::chrono::steady_clock::time_point now) const {
  std::vector<std::string> out;
  for (const auto& [id, e] : nodes_) {
    if (!Alive(e, now)) out.push_back(id);
  }
  return out;
}

bool Registry::Alive(const ShardEntry& e, std::chrono::steady_clock::time_point now) const {
  return (e.fixed && !e.draining) || now - e.last_seen <= ttl_;
}

const ShardEntry* Registry::Find(const std::string& node_id) const {
  auto it = nodes_.find(node_id);
  return it == nodes_.end() ? nullptr : &it->second;
}

std::vector<ShardEntry> Registry::Live(std::chrono::steady_clock::time_point now) const {
  std::vector<ShardEntry> out;
  for (const auto& [id, e] : nodes_) {
    if (Alive(e, now)) out.push_back(e);
  }
  return out;
}

std::vector<ShardEntry> Registry::Usable(std::chrono::steady_clock::time_point now) const {
  std::vector<ShardEntry> out;
  for (const auto& [id, e] : nodes_) {
    if (CanTake(e, now)) out.push_back(e);
  }
  return out;
}

std::vector<uint32_t> Registry::Coverage(int64_t n_layers, std::chrono::steady_clock::time_point now) const {
  std::vector<uint32_t> counts(static_cast<size_t>(std::max<int64_t>(0, n_layers)), 0);
  for (const auto& [id, e] : nodes_) {
    if (!Alive(e, now) || e.draining || !e.quarantine.empty()) continue;
    for (int64_t l = std::max<int64_t>(0, e.layer_begin); l < std::min(e.layer_end, n_layers); ++l) counts[l]++;
  }
  return counts;
}

Result<std::vector<const ShardEntry*>> Registry::Cheapest(int64_t n_layers,
                                                          std::chrono::steady_clock::time_point now) const {
  // Shortest path over (node, span): best[i] is the cheapest way to have run
  // layers [0, end of node i) with node i last; node j may follow node i
  // when i's span ends where j's begins and i can reach j.
  std::vector<const ShardEntry*> live;
  for (const auto& [id, e] : nodes_) {
    if (CanTake(e, now) && e.layer_begin >= 0 && e.layer_begin < e.layer_end && e.layer_end <= n_layers) {
      live.push_back(&e);
    }
  }
  if (!live.empty())
    std::rotate(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(turn_ % live.size()), live.end());
  // Spans only grow along a path: by begin, the turn's order kept among equals.
  std::stable_sort(live.begin(), live.end(),
                   [](const ShardEntry* a, const ShardEntry* b) { return a->layer_begin < b->layer_begin; });
  constexpr double kUnreached = std::numeric_limits<double>::infinity();
  const size_t n = live.size();
  std::vector<double> best(n, kUnreached);
  std::vector<ptrdiff_t> via(n, -1);
  int64_t reached = 0;  // the furthest layer boundary some path reaches
  for (size_t j = 0; j < n; ++j) {
    const ShardEntry& e = *live[j];
    double from = e.layer_begin == 0 ? 0 : kUnreached;
    for (size_t i = 0; i < j && e.layer_begin > 0; ++i) {
      const ShardEntry& p = *live[i];
      if (p.layer_end != e.layer_begin || best[i] == kUnreached || p.unreachable.count(e.node_id)) continue;
      if (best[i] < from) {
        from = best[i];
        via[j] = static_cast<ptrdiff_t>(i);
      }
    }
    if (from == kUnreached) continue;
    best[j] = from + Cost(e);
    reached = std::max(reached, e.layer_end);
  }
  ptrdiff_t last = -1;
  for (size_t j = 0; j < n; ++j) {
    if (live[j]->layer_end == n_layers && best[j] != kUnreached && (last < 0 || best[j] < best[last])) {
      last = static_cast<ptrdiff_t>(j);
    }
  }
  if (last < 0) {
    const std::string troubles = Troubles(now);
    return Status::NotFound("no shard serves layer " + std::to_string(reached) + " of " + std::to_string(n_layers) +
                            (troubles.empty() ? "" : " that the route can use: " + troubles));
  }
  std::vector<const ShardEntry*> path;
  for (ptrdiff_t j = last; j >= 0; j = via[j]) path.push_back(live[j]);
  std::reverse(path.begin(), path.end());
  return path;
}

Result<std::vector<Span>> Registry::Route(int64_t n_layers, std::chrono::steady_clock::time_point now) {
  TROUPE_ASSIGN_OR_RETURN(auto path, Cheapest(n_layers, now));
  ++turn_;
  std::vector<Span> route;
  for (const ShardEntry* pick : path) {
    route.push_back(
        Span{pick->node_id, pick->endpoint, pick->layer_begin, pick->layer_end, pick->public_key, pick->rtt_ms});
    nodes_[pick->node_id].sessions++;  // until its next heartbeat says
  }
  return route;
}

const ShardEntry* Registry::CheapestStage(int stage, std::chrono::steady_clock::time_point now) const {
  const ShardEntry* best = nullptr;
  for (const auto& [id, e] : nodes_) {
    if (!CanTake(e, now)) continue;
    if (std::find(e.stages.begin(), e.stages.end(), stage) == e.stages.end()) continue;
    if (!best || Cost(e) < Cost(*best)) best = &e;
  }
  return best;
}

std::optional<Span> Registry::StageNode(int stage, std::chrono::steady_clock::time_point now) {
  const ShardEntry* e = CheapestStage(stage, now);
  if (!e) return std::nullopt;
  nodes_[e->node_id].sessions++;  // until its next heartbeat says
  return Span{e->node_id, e->endpoint, 0, 0, e->public_key, e->rtt_ms};
}

bool Registry::HasStageNode(int stage, std::chrono::steady_clock::time_point now) const {
  return CheapestStage(stage, now) != nullptr;
}

bool Registry::Routable(int64_t n_layers, std::chrono::steady_clock::time_point now) const {
  return Cheapest(n_layers, now).ok();
}

std::string Registry::RouteProblem(int64_t n_layers, std::chrono::steady_clock::time_point now) const {
  auto path = Cheapest(n_layers, now);
  return path.ok() ? std::string() : path.status().message();
}

}  // namespace troupe::scheduling
