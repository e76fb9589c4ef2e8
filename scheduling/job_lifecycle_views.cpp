// JobLifecycle's read-only views for the admin console and the metric
// history (scheduling/console_views.h): every job it holds, and how many wait.
#include "scheduling/job_lifecycle.h"

namespace troupe::scheduling {

size_t JobLifecycle::queued() const {
  size_t n = 0;
  for (const auto& [sid, job] : jobs_) n += job.state == JobState::kQueued ? 1 : 0;
  return n;
}

size_t JobLifecycle::Active() const { return jobs_.size() - queued(); }

std::vector<JobLifecycle::JobView> JobLifecycle::Views() const {
  std::vector<JobView> out;
  for (const auto& [sid, job] : jobs_) {
    JobView v;
    v.job_id = job.job_id;
    v.session_id = sid;
    v.live = job.state == JobState::kQueued ? LiveState{v1::JOB_QUEUED, QueuePosition(job), sid}
                                            : LiveState{v1::JOB_RUNNING, 0, sid};
    for (const v1::RouteHop& hop : job.route) {
      if (v.route.empty() || v.route.back() != hop.node_id()) v.route.push_back(hop.node_id());
    }
    v.priority = job.priority;
    v.max_tokens = job.params.max_tokens;
    v.prompt_tokens = job.prompt.size();
    v.submitted = job.submitted;
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace troupe::scheduling
