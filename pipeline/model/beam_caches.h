// ReorderBeamCaches: after a beam-search step (pipeline/sampling/beam_search.h)
// new row i continues old row parents[i]; the caches of the rows follow.
//
// Each old cache goes, without a copy, to one row that continues it (its own
// row first, so a beam that keeps its parent copies nothing); every other row
// gets a cache no row continues and has it refilled from its parent
// (KvCache::CopyFrom). Copies only read caches that stay as they are and only
// write caches nobody reads, so any permutation or fan-out is safe.
//
// caches: one per old row, all of one shape and max_length (rows with an
// empty cache are fine: the first step has only row 0 filled). Ownership stays
// with the caller's vector. Thread-safety: none. Failure: InvalidArgument when
// parents.size() != caches->size() or a parent is out of range (the caches
// are then untouched).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "pipeline/model/kv_cache.h"
#include "pipeline/status.h"

namespace troupe {

// Returns the number of caches copied (rows that did not get their parent's
// own cache).
Result<int64_t> ReorderBeamCaches(const std::vector<int32_t>& parents, std::vector<std::unique_ptr<KvCache>>* caches);

}  // namespace troupe
