#include "messages/reject_counters.h"

#include "messages/wire_error.h"

namespace troupe {

std::string RejectCounters::MetricName(v1::ErrorCode code) {
  return "messages_rejected_total{code=\"" + ErrorCodeName(code) + "\"}";
}

size_t RejectCounters::Slot(v1::ErrorCode code) {
  const int c = static_cast<int>(code);
  return c > 0 && static_cast<size_t>(c) < kSlots ? static_cast<size_t>(c) : 0;
}

void RejectCounters::Count(v1::ErrorCode code) { counts_[Slot(code)].fetch_add(1, std::memory_order_relaxed); }

uint64_t RejectCounters::Get(v1::ErrorCode code) const {
  if (Slot(code) == 0 && code != v1::ERROR_CODE_UNSPECIFIED) return 0;
  return counts_[Slot(code)].load(std::memory_order_relaxed);
}

uint64_t RejectCounters::Total() const {
  uint64_t total = 0;
  for (const auto& c : counts_) total += c.load(std::memory_order_relaxed);
  return total;
}

std::vector<std::pair<v1::ErrorCode, uint64_t>> RejectCounters::NonZero() const {
  std::vector<std::pair<v1::ErrorCode, uint64_t>> out;
  for (size_t i = 0; i < kSlots; ++i) {
    const uint64_t n = counts_[i].load(std::memory_order_relaxed);
    if (n != 0) out.emplace_back(static_cast<v1::ErrorCode>(i), n);
  }
  return out;
}

void RejectCounters::AppendTo(v1::MetricsSnapshot* snapshot) const {
  for (const auto& [code, n] : NonZero()) (*snapshot->mutable_counters())[MetricName(code)] = n;
}

}  // namespace troupe
