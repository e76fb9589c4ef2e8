#include "scheduling/metric_history.h"

#include <algorithm>

namespace troupe::scheduling {

MetricHistory::MetricHistory(std::chrono::seconds span, std::chrono::milliseconds interval)
    : capacity_(
          static_cast<size_t>(std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::milliseconds>(span).count() /
                                                       std::max<int64_t>(1, interval.count())))),
      interval_(interval) {}

bool MetricHistory::Add(int64_t unix_ms, const std::map<std::string, double>& values) {
  if (any_ && unix_ms - last_ms_ < interval_.count()) return false;
  any_ = true;
  last_ms_ = unix_ms;
  for (const auto& [name, value] : values) {
    Ring& r = series_[name];
    if (r.samples.empty()) r.samples.resize(capacity_);
    r.samples[r.next] = {unix_ms, value};
    r.next = (r.next + 1) % capacity_;
    r.size = std::min(r.size + 1, capacity_);
  }
  return true;
}

std::map<std::string, std::vector<std::pair<int64_t, double>>> MetricHistory::Last(double seconds,
                                                                                   int64_t now_ms) const {
  const int64_t since = now_ms - static_cast<int64_t>(seconds * 1000);
  std::map<std::string, std::vector<std::pair<int64_t, double>>> out;
  for (const auto& [name, r] : series_) {
    std::vector<std::pair<int64_t, double>>& v = out[name];
    const size_t first = (r.next + capacity_ - r.size) % capacity_;
    for (size_t i = 0; i < r.size; ++i) {
      const auto& s = r.samples[(first + i) % capacity_];
      if (s.first > since && s.first <= now_ms) v.push_back(s);
    }
  }
  return out;
}

}  // namespace troupe::scheduling
