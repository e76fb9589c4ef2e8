// ConsoleDesk: what the head keeps for its admin console between ticks, and
// its answer to a console query. Between ticks: the nodes that left the
// registry lately (shown as "lost"), one metric sample a second
// (MetricHistory: tokens/s, queue depth, sessions, cache bytes, errors/s)
// and the tokens/s of the last second. A query names one of the views of
// console_views.h; the desk gathers what that view needs from the job life
// cycle, the job book and the sessions' timelines.
//
// The scheduler actor owns one and calls it on its own thread; no sockets
// or actors here. Failure: View returns NotFound for a timeline it does not
// have and InvalidArgument for a view that does not exist, each naming it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "pipeline/status.h"
#include "scheduling/console_views.h"

namespace troupe::scheduling {

class ConsoleDesk {
 public:
  // Ended jobs the "jobs" view lists.
  static constexpr size_t kEndedJobsShown = 20;

  // Once a tick: which nodes left the registry; at most once a second, a
  // history sample from the life cycle and the head's running totals.
  void Sample(ConsoleClock::time_point now, double unix_now, const JobLifecycle& jobs, uint64_t tokens_total,
              uint64_t failed_total);
  // Tokens the sampler produced per second over the last sample's second.
  double tokens_per_s() const { return tokens_per_s_; }

  // The view named `view` ("cluster", "nodes", "coverage", "jobs",
  // "sessions", "timeline" of `session_id`, "history" of the last `seconds`,
  // 600 when 0). `timelines` may be null (hop timing off).
  Result<Json> View(const std::string& view, uint64_t session_id, double seconds, const ConsoleHead& head,
                    const JobLifecycle& jobs, const JobBook& book, const Timelines* timelines,
                    ConsoleClock::time_point now, double unix_now) const;

 private:
  MetricHistory history_;
  std::map<std::string, ShardEntry> known_;  // the registry at the last tick
  std::map<std::string, LostNode> lost_;     // nodes that left it lately
  double sampled_at_ = 0, tokens_per_s_ = 0;
  uint64_t tokens_seen_ = 0, failed_seen_ = 0;
};

}  // namespace troupe::scheduling
