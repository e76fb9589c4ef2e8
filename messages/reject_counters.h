// RejectCounters: how many inbound messages a node rejected, per ErrorCode,
// for metrics (`/metrics`, MetricsSnapshot).
//
// Thread-safe: Count and the readers may run concurrently from any thread
// (relaxed atomics; a snapshot is not a consistent cut across codes). Codes
// outside the ErrorCode range are counted under ERROR_CODE_UNSPECIFIED.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "messages/troupe.pb.h"

namespace troupe {

class RejectCounters {
 public:
  // Counter name in MetricsSnapshot.counters, one per code:
  // messages_rejected_total{code="BAD_HEADER"}.
  static std::string MetricName(v1::ErrorCode code);

  void Count(v1::ErrorCode code);
  uint64_t Get(v1::ErrorCode code) const;
  uint64_t Total() const;
  // Codes with a nonzero count, in code order.
  std::vector<std::pair<v1::ErrorCode, uint64_t>> NonZero() const;
  // Sets one counter per nonzero code in snapshot->counters (MetricName keys).
  void AppendTo(v1::MetricsSnapshot* snapshot) const;

 private:
  static size_t Slot(v1::ErrorCode code);
  static constexpr size_t kSlots = v1::ErrorCode_ARRAYSIZE;
  std::array<std::atomic<uint64_t>, kSlots> counts_{};
};

}  // namespace troupe
