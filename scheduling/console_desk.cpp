#include "scheduling/console_desk.h"

#include <vector>

namespace troupe::scheduling {

void ConsoleDesk::Sample(ConsoleClock::time_point now, double unix_now, const JobLifecycle& jobs, uint64_t tokens_total,
                         uint64_t failed_total) {
  const Registry& registry = jobs.registry();
  TrackLost(known_, registry.All(), now, &lost_);
  known_ = registry.All();
  const double dt = unix_now - sampled_at_;
  if (dt < 1.0) return;
  if (sampled_at_ > 0) {
    tokens_per_s_ = static_cast<double>(tokens_total - tokens_seen_) / dt;
    double cache = 0, sessions = 0, queued = 0;
    for (const auto& [id, e] : registry.All()) {
      if (registry.IsAlive(e, now)) cache += static_cast<double>(e.details.cache_bytes);
    }
    for (const auto& j : jobs.Views()) (j.live.state == v1::JOB_QUEUED ? queued : sessions) += 1;
    history_.Add(static_cast<int64_t>(unix_now * 1000),
                 {{"tokens_per_s", tokens_per_s_},
                  {"queue_depth", queued},
                  {"sessions", sessions},
                  {"cache_bytes", cache},
                  {"errors_per_s", static_cast<double>(failed_total - failed_seen_) / dt}});
  }
  sampled_at_ = unix_now;
  tokens_seen_ = tokens_total;
  failed_seen_ = failed_total;
}

Result<Json> ConsoleDesk::View(const std::string& view, uint64_t session_id, double seconds, const ConsoleHead& head,
                               const JobLifecycle& jobs, const JobBook& book, const Timelines* timelines,
                               ConsoleClock::time_point now, double unix_now) const {
  const std::vector<JobLifecycle::JobView> views = jobs.Views();
  const Registry& registry = jobs.registry();
  if (view == "cluster") return ClusterView(head, registry, views, now);
  if (view == "nodes") return NodesView(head, registry, lost_, now);
  if (view == "coverage") return CoverageView(registry, lost_, head.n_layers, now);
  if (view == "jobs") return JobsView(book.Summaries(kEndedJobsShown), views, now, unix_now);
  if (view == "sessions") return SessionsView(book.Summaries(0), views, now);
  if (view == "timeline") {
    std::optional<std::vector<StepTiming>> steps = timelines ? timelines->Of(session_id) : std::nullopt;
    if (!steps) {
      return Status::NotFound("no timeline of session " + std::to_string(session_id) +
                              " (never run here, ended more than 10 minutes ago, or hop_timing is off)");
    }
    uint64_t job_id = 0;
    for (const auto& j : views) job_id = j.session_id == session_id ? j.job_id : job_id;
    return TimelineView(session_id, job_id, *steps);
  }
  if (view == "history") return HistoryView(history_, seconds > 0 ? seconds : 600, head.unix_ms);
  return Status::InvalidArgument("no console view '" + view +
                                 "' (cluster, nodes, coverage, jobs, sessions, timeline, history)");
}

}  // namespace troupe::scheduling
