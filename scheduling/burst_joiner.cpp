#include "scheduling/burst_joiner.h"

namespace troupe::scheduling {

void BurstJoiner::Sent(uint64_t session, const std::string& node, Clock::time_point now) {
  Session& s = sessions_[session];
  s.node = node;
  s.sent = now;
  s.out = true;
}

void BurstJoiner::Returned(uint64_t session, Clock::time_point now) {
  auto it = sessions_.find(session);
  if (it == sessions_.end() || !it->second.out) return;
  Session& s = it->second;
  s.round = now - s.sent;
  s.out = false;
  s.late = false;
}

void BurstJoiner::Forget(uint64_t session) { sessions_.erase(session); }

bool BurstJoiner::Waits(const std::string& node, Clock::time_point since, Clock::time_point now) {
  if (patience_ <= Clock::duration::zero()) return false;
  const Clock::time_point deadline = since + patience_;
  const bool over = now >= deadline;
  bool waits = false;
  for (auto& [id, s] : sessions_) {
    if (!s.out || s.late || s.node != node) continue;
    if (over) {
      s.late = true;  // waited for in vain: not again until it is back
      continue;
    }
    const bool first_round = s.round == Clock::duration::zero();
    if (first_round || s.sent + s.round <= deadline) waits = true;
  }
  return waits;
}

size_t BurstJoiner::out() const {
  size_t n = 0;
  for (const auto& [id, s] : sessions_) n += s.out ? 1 : 0;
  return n;
}

}  // namespace troupe::scheduling
