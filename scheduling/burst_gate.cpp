#include "scheduling/burst_gate.h"

#include <string>

namespace troupe::scheduling {

void BurstGate::Arrived(uint64_t burst_id, uint32_t burst_size, Clock::time_point now) {
  ++held_;
  if (burst_id == 0 || burst_size <= 1) {
    ++unbursted_;
    return;
  }
  Forget(now);
  auto [it, fresh] = bursts_.try_emplace(burst_id);
  Burst& b = it->second;
  if (fresh) {
    b.size = burst_size;
    b.first = now;
  }
  ++b.arrived;
  ++b.held;
}

void BurstGate::Left(uint64_t burst_id, Clock::time_point now) {
  if (held_ > 0) --held_;
  auto it = burst_id == 0 ? bursts_.end() : bursts_.find(burst_id);
  if (it == bursts_.end() || it->second.held == 0) {
    if (unbursted_ > 0) --unbursted_;
    return;
  }
  Burst& b = it->second;
  --b.held;
  b.started = true;
  if (b.held == 0 && b.arrived >= b.size) bursts_.erase(it);
  Forget(now);
}

bool BurstGate::Ready(Clock::time_point now) const {
  if (unbursted_ > 0) return true;
  for (const auto& [id, b] : bursts_) {
    if (b.held > 0 && !Waits(b, now)) return true;
  }
  return false;
}

BurstGate::Clock::time_point BurstGate::WaitUntil() const {
  Clock::time_point until = Clock::time_point::max();
  for (const auto& [id, b] : bursts_) {
    if (b.held > 0 && !b.started && b.arrived < b.size && b.first + patience_ < until) until = b.first + patience_;
  }
  return until;
}

void BurstGate::Forget(Clock::time_point now) {
  for (auto it = bursts_.begin(); it != bursts_.end();) {
    if (it->second.held == 0 && now >= it->second.first + patience_ * 64) {
      it = bursts_.erase(it);
    } else {
      ++it;
    }
  }
}

void TagBursts(const std::vector<v1::Step*>& steps, uint64_t burst_id, int hop) {
  std::map<std::string, uint32_t> per_node;
  for (const v1::Step* s : steps) {
    if (s->rest_of_route_size() > hop) ++per_node[s->rest_of_route(hop).node_id()];
  }
  for (v1::Step* s : steps) {
    const uint32_t n = s->rest_of_route_size() > hop ? per_node[s->rest_of_route(hop).node_id()] : 0;
    s->set_burst_id(n < 2 ? 0 : burst_id);
    s->set_burst_size(n < 2 ? 0 : n);
  }
}

void TagBursts(std::vector<v1::Step>& steps, uint64_t burst_id, int hop) {
  std::vector<v1::Step*> all;
  all.reserve(steps.size());
  for (v1::Step& s : steps) all.push_back(&s);
  TagBursts(all, burst_id, hop);
}

}  // namespace troupe::scheduling
