#include "scheduling/registry.h"

#include <algorithm>

namespace troupe::scheduling {

void Registry::Upsert(ShardEntry entry) {
  auto it = nodes_.find(entry.node_id);
  if (it != nodes_.end() && it->second.fixed) entry.fixed = true;
  nodes_[entry.node_id] = std::move(entry);
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

Result<std::vector<std::vector<const ShardEntry*>>> Registry::Spans(int64_t n_layers,
                                                                    std::chrono::steady_clock::time_point now) const {
  std::vector<std::vector<const ShardEntry*>> spans;
  int64_t layer = 0;
  while (layer < n_layers) {
    std::vector<const ShardEntry*> best;
    int64_t reach = layer;
    for (const auto& [id, e] : nodes_) {
      if (e.layer_begin != layer || !Alive(e, now) || e.layer_end > n_layers) continue;
      if (e.layer_end > reach) {
        reach = e.layer_end;
        best.clear();
      }
      if (e.layer_end == reach) best.push_back(&e);
    }
    if (best.empty()) {
      return Status::NotFound("no shard serves layer " + std::to_string(layer) + " of " + std::to_string(n_layers));
    }
    spans.push_back(std::move(best));
    layer = reach;
  }
  return spans;
}

Result<std::vector<Span>> Registry::Route(int64_t n_layers, std::chrono::steady_clock::time_point now) {
  TROUPE_ASSIGN_OR_RETURN(auto spans, Spans(n_layers, now));
  std::vector<Span> route;
  for (const auto& replicas : spans) {
    const ShardEntry& pick = *replicas[turn_[replicas.front()->layer_begin]++ % replicas.size()];
    route.push_back(Span{pick.node_id, pick.endpoint, pick.layer_begin, pick.layer_end, pick.public_key});
  }
  return route;
}

bool Registry::Routable(int64_t n_layers, std::chrono::steady_clock::time_point now) const {
  return Spans(n_layers, now).ok();
}

}  // namespace troupe::scheduling
