#include "pipeline/model/beam_caches.h"

#include <string>
#include <utility>

namespace troupe {

Result<int64_t> ReorderBeamCaches(const std::vector<int32_t>& parents, std::vector<std::unique_ptr<KvCache>>* caches) {
  const size_t n = caches->size();
  if (parents.size() != n) {
    return Status::InvalidArgument("beam reorder: " + std::to_string(parents.size()) + " parents for " +
                                   std::to_string(n) + " caches");
  }
  for (int32_t p : parents) {
    if (p < 0 || static_cast<size_t>(p) >= n) {
      return Status::InvalidArgument("beam reorder: parent row " + std::to_string(p) + " out of range");
    }
  }
  std::vector<std::unique_ptr<KvCache>> old = std::move(*caches);
  std::vector<std::unique_ptr<KvCache>> next(n);
  std::vector<int64_t> holder(n, -1);  // holder[j]: the new row that got old cache j
  // A row keeping its own parent keeps its cache; then any row whose parent's
  // cache is still free takes it. Every parent ends up held by some row.
  for (size_t i = 0; i < n; ++i) {
    if (static_cast<size_t>(parents[i]) == i) {
      next[i] = std::move(old[i]);
      holder[i] = static_cast<int64_t>(i);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const auto p = static_cast<size_t>(parents[i]);
    if (!next[i] && holder[p] < 0) {
      next[i] = std::move(old[p]);
      holder[p] = static_cast<int64_t>(i);
    }
  }
  // The rest take a cache no row continues and copy their parent's (held,
  // unchanged, by another row) into it.
  int64_t copies = 0;
  size_t free = 0;
  Status status = Status::Ok();
  for (size_t i = 0; i < n; ++i) {
    if (next[i]) continue;
    while (holder[free] >= 0) ++free;
    next[i] = std::move(old[free]);
    holder[free] = static_cast<int64_t>(i);
    const KvCache& source = *next[static_cast<size_t>(holder[static_cast<size_t>(parents[i])])];
    if (status.ok()) status = next[i]->CopyFrom(source);
    ++copies;
  }
  *caches = std::move(next);
  if (!status.ok()) return status;
  return copies;
}

}  // namespace troupe
