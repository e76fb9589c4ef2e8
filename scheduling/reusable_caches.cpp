#include "scheduling/reusable_caches.h"

#include <algorithm>
#include <utility>

namespace troupe::scheduling {

std::vector<ParkedCache> ReusableCaches::Park(ParkedCache cache) {
  caches_.push_back(std::move(cache));
  std::vector<ParkedCache> dropped;
  while (caches_.size() > capacity_) {
    auto oldest = std::min_element(caches_.begin(), caches_.end(), [](const ParkedCache& a, const ParkedCache& b) {
      return a.last_used < b.last_used;
    });
    if (!oldest->live) dropped.push_back(std::move(*oldest));
    caches_.erase(oldest);
  }
  return dropped;
}

std::optional<ReusableCaches::Match> ReusableCaches::Longest(const std::vector<int32_t>& prompt, int64_t min_length,
                                                             const std::function<bool(const ParkedCache&)>& usable,
                                                             Clock::time_point now) {
  ParkedCache* best = nullptr;
  int64_t best_length = 0;
  for (ParkedCache& c : caches_) {
    const size_t n = std::min(prompt.size(), c.tokens.size());
    const int64_t shared =
        std::mismatch(prompt.begin(), prompt.begin() + static_cast<std::ptrdiff_t>(n), c.tokens.begin()).first -
        prompt.begin();
    if (shared >= min_length && shared > best_length && usable(c)) {
      best = &c;
      best_length = shared;
    }
  }
  if (!best) return std::nullopt;
  best->last_used = now;
  return Match{*best, best_length};
}

std::optional<ParkedCache> ReusableCaches::Take(uint64_t session_id) {
  auto it =
      std::find_if(caches_.begin(), caches_.end(), [&](const ParkedCache& c) { return c.session_id == session_id; });
  if (it == caches_.end()) return std::nullopt;
  ParkedCache c = std::move(*it);
  caches_.erase(it);
  return c;
}

std::vector<ParkedCache> ReusableCaches::TakeThrough(const std::string& node_id) {
  std::vector<ParkedCache> out;
  for (auto it = caches_.begin(); it != caches_.end();) {
    const bool hit =
        std::any_of(it->route.begin(), it->route.end(), [&](const v1::RouteHop& h) { return h.node_id() == node_id; });
    if (hit) {
      out.push_back(std::move(*it));
      it = caches_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

}  // namespace troupe::scheduling
