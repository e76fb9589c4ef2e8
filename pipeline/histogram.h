// Histogram: counts of observed values in fixed buckets (each bucket counts
// values <= its upper bound; the last is +Inf), their sum and count — what
// Prometheus histograms expose. Observe is lock-free (relaxed atomics) and
// may be called from any thread; a Snapshot read while values arrive may be
// a few observations behind between buckets, never torn within one.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace troupe {

class Histogram {
 public:
  // `bounds`: ascending upper bounds (the +Inf bucket is added).
  explicit Histogram(std::vector<double> bounds);

  void Observe(double value);

  struct Snapshot {
    std::vector<double> bounds;    // without +Inf
    std::vector<uint64_t> counts;  // per bucket (not cumulative), bounds.size() + 1 of them
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Read() const;

  // Milliseconds from 0.05 ms to 10 s, about x2.5 apart.
  static std::vector<double> MillisecondBounds();
  // 1, 2, 4, ..., 256 (batch sizes).
  static std::vector<double> PowersOfTwo(int up_to_exponent);

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

}  // namespace troupe
