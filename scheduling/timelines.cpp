#include "scheduling/timelines.h"

#include <algorithm>

namespace troupe::scheduling {

double StepTiming::network_ms() const {
  if (total_ms < 0) return 0;
  double own = 0;
  for (const HopTiming& h : hops) own += h.own_ms();
  return std::max(0.0, total_ms - own);
}

void Timelines::Record(uint64_t session_id, StepTiming step, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  Kept& k = sessions_[session_id];
  k.steps.push_back(std::move(step));
  while (k.steps.size() > kStepsKept) k.steps.pop_front();
  Expire(now);
}

void Timelines::End(uint64_t session_id, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(session_id);
  if (it != sessions_.end() && !it->second.ended) it->second.ended = now;
  Expire(now);
}

std::optional<std::vector<StepTiming>> Timelines::Of(uint64_t session_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(session_id);
  if (it == sessions_.end()) return std::nullopt;
  return std::vector<StepTiming>(it->second.steps.begin(), it->second.steps.end());
}

void Timelines::Expire(Clock::time_point now) {
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    it = it->second.ended && now - *it->second.ended > kEndedKept ? sessions_.erase(it) : std::next(it);
  }
  while (sessions_.size() > kSessionsKept) {  // the longest-ended first, then the oldest id
    auto victim = sessions_.begin();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
      const bool ended = it->second.ended.has_value();
      const bool victim_ended = victim->second.ended.has_value();
      if (ended && (!victim_ended || *it->second.ended < *victim->second.ended)) victim = it;
    }
    sessions_.erase(victim);
  }
}

}  // namespace troupe::scheduling
