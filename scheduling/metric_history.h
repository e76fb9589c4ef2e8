// MetricHistory: the head's numbers over the last hours, one sample a
// second, for the console's charts (/api/v1/metrics/history). Each series
// is a fixed ring (span / interval samples, allocated once); a sample
// closer than `interval` to the last one is ignored, so callers may offer
// one on every tick. Plain data; thread-safety: none (the scheduler's own).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace troupe::scheduling {

class MetricHistory {
 public:
  explicit MetricHistory(std::chrono::seconds span = std::chrono::hours(4),
                         std::chrono::milliseconds interval = std::chrono::seconds(1));

  // One sample of each series at `unix_ms`. Returns false when it came too
  // soon after the last and was ignored. A series first seen later starts then.
  bool Add(int64_t unix_ms, const std::map<std::string, double>& values);
  // The samples of the last `seconds` before `now_ms`, oldest first, per series.
  std::map<std::string, std::vector<std::pair<int64_t, double>>> Last(double seconds, int64_t now_ms) const;
  std::chrono::milliseconds interval() const { return interval_; }
  size_t capacity() const { return capacity_; }

 private:
  struct Ring {
    std::vector<std::pair<int64_t, double>> samples;  // capacity_ slots
    size_t next = 0, size = 0;
  };
  size_t capacity_;
  std::chrono::milliseconds interval_;
  int64_t last_ms_ = 0;
  bool any_ = false;
  std::map<std::string, Ring> series_;
};

}  // namespace troupe::scheduling
