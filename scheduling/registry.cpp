#include "scheduling/registry.h"

#include <algorithm>
#include <cstddef>
#include <limits>

namespace troupe::scheduling {

void Registry::Upsert(ShardEntry entry) {
  auto it = nodes_.find(entry.node_id);
  if (it != nodes_.end()) {  // a refreshed announce keeps what was measured
    if (it->second.fixed) entry.fixed = true;
    if (entry.step_ms < 0) entry.step_ms = it->second.step_ms;
    if (entry.rtt_ms < 0) entry.rtt_ms = it->second.rtt_ms;
    if (entry.sessions == 0) entry.sessions = it->second.sessions;
  }
  nodes_[entry.node_id] = std::move(entry);
}

void Registry::Report(const std::string& node_id, double step_ms, uint32_t sessions) {
  auto it = nodes_.find(node_id);
  if (it == nodes_.end()) return;
  if (step_ms >= 0) it->second.step_ms = step_ms;
  it->second.sessions = sessions;
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
  return e.fixed || now - e.last_seen <= ttl_;
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

std::vector<uint32_t> Registry::Coverage(int64_t n_layers, std::chrono::steady_clock::time_point now) const {
  std::vector<uint32_t> counts(static_cast<size_t>(std::max<int64_t>(0, n_layers)), 0);
  for (const auto& [id, e] : nodes_) {
    if (!Alive(e, now)) continue;
    for (int64_t l = std::max<int64_t>(0, e.layer_begin); l < std::min(e.layer_end, n_layers); ++l) counts[l]++;
  }
  return counts;
}

Result<std::vector<const ShardEntry*>> Registry::Cheapest(int64_t n_layers,
                                                          std::chrono::steady_clock::time_point now) const {
  // Shortest path over layer boundaries: best[l] is the cheapest way to have
  // run layers [0, l); a node serving [b, e) is an edge b -> e.
  std::vector<const ShardEntry*> live;
  for (const auto& [id, e] : nodes_) {
    if (Alive(e, now) && e.layer_begin >= 0 && e.layer_begin < e.layer_end && e.layer_end <= n_layers) {
      live.push_back(&e);
    }
  }
  if (!live.empty())
    std::rotate(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(turn_ % live.size()), live.end());
  constexpr double kUnreached = std::numeric_limits<double>::infinity();
  std::vector<double> best(static_cast<size_t>(n_layers) + 1, kUnreached);
  std::vector<const ShardEntry*> via(static_cast<size_t>(n_layers) + 1, nullptr);
  best[0] = 0;
  for (int64_t l = 0; l < n_layers; ++l) {
    if (best[l] == kUnreached) continue;
    for (const ShardEntry* e : live) {
      if (e->layer_begin != l) continue;
      const double cost = best[l] + Cost(*e);
      if (cost < best[e->layer_end]) {
        best[e->layer_end] = cost;
        via[e->layer_end] = e;
      }
    }
  }
  if (best[n_layers] == kUnreached) {
    int64_t layer = 0;  // the first layer no path runs: after the furthest boundary reached
    for (int64_t l = 0; l < n_layers; ++l) {
      if (best[l] != kUnreached) layer = l;
    }
    return Status::NotFound("no shard serves layer " + std::to_string(layer) + " of " + std::to_string(n_layers));
  }
  std::vector<const ShardEntry*> path;
  for (int64_t l = n_layers; l > 0; l = via[l]->layer_begin) path.push_back(via[l]);
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

bool Registry::Routable(int64_t n_layers, std::chrono::steady_clock::time_point now) const {
  return Cheapest(n_layers, now).ok();
}

}  // namespace troupe::scheduling
