// ReusableCaches: the head's book of parked caches — the shard sessions of
// finished jobs, whose KV caches the shards keep (SessionClose with park) so
// that a new job whose prompt starts with the same tokens copies those
// positions (SessionOpen copy_from) instead of prefilling them: a long system
// prompt, or a chat client that resends the whole conversation each turn.
//
// A running job's prompt is a source too (live: its caches fill as its
// prefill passes each shard; a shard that has not got that far yet copies
// nothing) — n samples of one prompt share one prefill that way. When the job
// ends well its entry becomes the parked cache; otherwise it is forgotten.
//
// The shards own the memory: a parked cache counts in a shard's cache budget
// and is evicted there, least recently used first, when a session needs the
// room (the shard tells the head, which then forgets it here). This book
// holds at most `capacity` caches, dropping the least recently used.
//
// Plain data; the life cycle (job_lifecycle.h) decides. Thread-safety: none.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "messages/troupe.pb.h"
#include "scheduling/actions.h"

namespace troupe::scheduling {

struct ParkedCache {
  uint64_t session_id = 0;
  std::vector<v1::RouteHop> route;  // the route it was computed on, embedding first
  std::vector<int32_t> tokens;      // the positions its caches hold, in order
  Clock::time_point last_used;
  bool live = false;  // a running job's session (never closed from here)
};

class ReusableCaches {
 public:
  explicit ReusableCaches(size_t capacity = 256) : capacity_(capacity) {}

  // Adds `cache`; returns the parked ones dropped to stay within capacity (to close).
  std::vector<ParkedCache> Park(ParkedCache cache);

  struct Match {
    ParkedCache cache;   // a copy of the entry
    int64_t length = 0;  // tokens it shares with the prompt, from the first
  };
  // The parked cache sharing the longest prefix with `prompt`, at least
  // `min_length` tokens, among those `usable` accepts (their nodes are up);
  // the chosen one counts as used at `now`.
  std::optional<Match> Longest(const std::vector<int32_t>& prompt, int64_t min_length,
                               const std::function<bool(const ParkedCache&)>& usable, Clock::time_point now);

  // Forgets session `session_id` (evicted or failed on a shard); nullopt if unknown.
  std::optional<ParkedCache> Take(uint64_t session_id);
  // Forgets every cache whose route passes `node_id`.
  std::vector<ParkedCache> TakeThrough(const std::string& node_id);

  size_t size() const { return caches_.size(); }

 private:
  size_t capacity_;
  std::vector<ParkedCache> caches_;
};

}  // namespace troupe::scheduling
