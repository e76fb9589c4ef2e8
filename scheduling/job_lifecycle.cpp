#include "scheduling/job_lifecycle.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "messages/envelope_codec.h"
#include "scheduling/session_messages.h"

namespace troupe::scheduling {
namespace {

int64_t Seconds(std::chrono::milliseconds d) { return std::chrono::duration_cast<std::chrono::seconds>(d).count(); }

}  // namespace

const char* JobStateName(JobState state) {
  switch (state) {
    case JobState::kOpening: return "opening";
    case JobState::kRunning: return "running";
    case JobState::kQueued: return "queued";
    case JobState::kRerouting: return "rerouting";
    case JobState::kFinished: return "finished";
  }
  return "?";
}

uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

JobLifecycle::JobLifecycle(LifecycleConfig config, Registry registry)
    : config_(std::move(config)), registry_(std::move(registry)), next_session_(config_.first_session_id) {}

Reply JobLifecycle::UnknownJob(const Origin& to, uint64_t request_id, uint64_t job_id) const {
  return Reply{
      to, ErrorEnvelope(v1::UNKNOWN_JOB, "no job " + std::to_string(job_id), config_.node_id, 0, request_id, job_id)};
}

v1::Error JobLifecycle::HeadError(v1::ErrorCode code, const std::string& text, uint64_t session_id) const {
  return ErrorEnvelope(code, text, config_.node_id, session_id).error();
}

// ------------------------------------------------------------------ submit

uint64_t JobLifecycle::TakeJobId(uint64_t asked) {
  if (asked != 0 && !job_sessions_.count(asked)) return asked;
  while (job_sessions_.count(++next_job_)) {
  }
  return next_job_;
}

Actions JobLifecycle::Submit(uint64_t job_id, const Origin& client, uint64_t request_id, AdmittedJob admitted,
                             Clock::time_point now) {
  Actions out;
  Result<std::vector<Span>> spans = registry_.Route(config_.n_layers, now);
  if (!spans.ok()) {
    out.push_back(
        Reply{client, ErrorEnvelope(v1::NO_ROUTE, spans.status().message(), config_.node_id, 0, request_id, job_id)});
    return out;
  }
  Job job;
  job.job_id = job_id;
  job.session_id = ++next_session_;
  job.request_id = request_id;
  job.client = client;
  job.stream = admitted.stream;
  job.params = std::move(admitted.params);
  if (!admitted.seed_given) job.params.seed = Mix64(job.session_id);
  const int64_t n = static_cast<int64_t>(admitted.prompt.size());
  job.prompt = std::move(admitted.prompt);
  job.max_length = std::min<int64_t>(config_.max_positions, n + job.params.max_tokens);
  job.submitted = now;
  job.route = RouteThrough(config_.node_id, config_.node_endpoint, *spans);
  out.push_back(Reply{client, JobStatusReply(request_id, job.job_id, v1::JOB_RUNNING, job.session_id)});

  const uint64_t sid = job.session_id;
  job_sessions_[job.job_id] = sid;
  Job& stored = jobs_[sid] = std::move(job);
  OpenOnShards(stored, now, out);
  return out;
}

// SessionOpen to every shard of the job's route; Opened() goes on.
void JobLifecycle::OpenOnShards(Job& job, Clock::time_point now, Actions& out) {
  job.attempt = now;
  job.waiting.clear();
  for (const v1::RouteHop& hop : job.route) {
    if (hop.stage() == v1::STAGE_SHARD) job.waiting.insert(hop.node_id());
  }
  for (const v1::RouteHop& hop : job.route) {
    if (hop.stage() != v1::STAGE_SHARD) continue;
    out.push_back(
        ToNode{hop.node_id(), hop.endpoint(), job.session_id,
               SessionOpenEnvelope(job.session_id, job.max_length, config_.fingerprint, job.params.num_beams)});
  }
}

Actions JobLifecycle::Opened(uint64_t session_id, const std::string& node_id, Clock::time_point now) {
  Actions out;
  auto it = jobs_.find(session_id);
  if (it == jobs_.end()) return out;
  Job& job = it->second;
  if (job.state == JobState::kQueued) return out;  // a late answer from before the refusal; closed there
  job.waiting.erase(node_id);
  if (job.state == JobState::kRunning || !job.waiting.empty()) return out;
  if (job.state == JobState::kRerouting) {  // the sampler has the generation so far: replay it
    job.state = JobState::kRunning;
    out.push_back(SessionResume{job.session_id});
    return out;
  }
  job.state = JobState::kRunning;
  job.sampler_holds = true;
  SessionStart start;
  start.session_id = job.session_id;
  start.job_id = job.job_id;
  start.client = job.client;
  start.request_id = job.request_id;
  start.stream = job.stream;
  start.prompt = job.prompt;
  start.params = job.params;
  start.max_length = job.max_length;
  start.route = job.route;
  start.submitted = job.submitted;
  start.opened = now;
  out.push_back(std::move(start));
  // The prefill: the whole prompt to the embedding, which chunks it.
  out.push_back(Prefill{job.session_id, PrefillStep(job.session_id, job.prompt, job.route)});
  return out;
}

// ------------------------------------------------------------------ endings

Actions JobLifecycle::Failed(uint64_t session_id, const v1::Error& error, Clock::time_point now) {
  Actions out;
  Fail(session_id, error, now, out);
  return out;
}

Actions JobLifecycle::SendFailed(uint64_t session_id, v1::ErrorCode code, const std::string& text,
                                 Clock::time_point now) {
  Actions out;
  Fail(session_id, HeadError(code, text, session_id), now, out);
  return out;
}

Actions JobLifecycle::Done(uint64_t session_id, Clock::time_point now) {
  Actions out;
  Close(session_id, now, out);
  return out;
}

Actions JobLifecycle::Cancel(const Origin& from, uint64_t request_id, uint64_t job_id, Clock::time_point now) {
  Actions out;
  auto it = job_sessions_.find(job_id);
  if (it == job_sessions_.end()) {
    out.push_back(UnknownJob(from, request_id, job_id));
    return out;
  }
  const uint64_t sid = it->second;
  Fail(sid, HeadError(v1::CANCELLED, "job " + std::to_string(job_id) + " was cancelled", sid), now, out);
  return out;
}

Actions JobLifecycle::ClientGone(const Origin& client, Clock::time_point now) {
  Actions out;
  std::vector<uint64_t> gone;
  for (const auto& [sid, job] : jobs_) {
    if (job.client == client) gone.push_back(sid);
  }
  for (uint64_t sid : gone) Fail(sid, HeadError(v1::CANCELLED, "the client went away", sid), now, out);
  return out;
}

Actions JobLifecycle::Shutdown() {
  Actions out;
  // Nobody waits in vain: every job still running gets an answer.
  for (const auto& [sid, job] : jobs_) {
    out.push_back(Reply{job.client, ErrorEnvelope(v1::UNAVAILABLE, "the head is shutting down", config_.node_id, sid,
                                                  job.request_id, job.job_id)});
  }
  jobs_.clear();
  job_sessions_.clear();
  return out;
}

// The job of `session_id` failed: tell its client, stop the sampler, close everywhere.
void JobLifecycle::Fail(uint64_t session_id, const v1::Error& error, Clock::time_point now, Actions& out) {
  auto it = jobs_.find(session_id);
  if (it == jobs_.end()) return;
  Job& job = it->second;
  if (job.state == JobState::kQueued && error.code() == v1::CACHE_FULL) return;  // another shard, same round
  if (error.code() == v1::CACHE_FULL && error.retryable() && job.state != JobState::kRunning) {
    return Enqueue(job, error, now, out);
  }
  End(session_id, error, now, out);
}

// The job of `session_id` ends with `error`, whatever its state.
void JobLifecycle::End(uint64_t session_id, const v1::Error& error, Clock::time_point now, Actions& out) {
  auto it = jobs_.find(session_id);
  if (it == jobs_.end()) return;
  Job& job = it->second;
  v1::Envelope env = NewEnvelope(job.request_id);
  *env.mutable_error() = error;
  env.mutable_error()->set_job_id(job.job_id);
  env.mutable_error()->set_session_id(session_id);
  out.push_back(Reply{job.client, std::move(env)});
  if (job.sampler_holds) out.push_back(SessionDrop{session_id});
  Close(session_id, now, out);
}

// Closes the session on every shard of its route and forgets the job.
void JobLifecycle::Close(uint64_t session_id, Clock::time_point now, Actions& out) {
  auto it = jobs_.find(session_id);
  if (it == jobs_.end()) return;
  it->second.state = JobState::kFinished;
  CloseOnShards(it->second, out);
  job_sessions_.erase(it->second.job_id);
  jobs_.erase(it);
  DispatchQueued(now, out);  // the cache it held may be what a queued job waits for
}

// SessionClose for the job's current session to the shards of its route
// (but `skip`, a node known to be gone).
void JobLifecycle::CloseOnShards(const Job& job, Actions& out, const std::string& skip) const {
  for (const v1::RouteHop& hop : job.route) {
    if (hop.stage() != v1::STAGE_SHARD || hop.node_id() == skip) continue;
    out.push_back(ToNode{hop.node_id(), hop.endpoint(), job.session_id, SessionCloseEnvelope(job.session_id)});
  }
}

// -------------------------------------------------------------------- queue

// A shard has no cache for the job now but will once other sessions close:
// the job closes what this round opened and waits, oldest first, for its next
// try (on every close and tick; replicas take turns on each try).
void JobLifecycle::Enqueue(Job& job, const v1::Error& why, Clock::time_point now, Actions& out) {
  CloseOnShards(job, out);
  job.state = JobState::kQueued;
  job.waiting.clear();
  if (!job.queued_since) {
    job.queued_since = now;
    jobs_queued_total_++;
    out.push_back(Log{"job " + std::to_string(job.job_id) + " waits for cache: " + why.text()});
  }
  if (!job.noticed || now - *job.noticed >= config_.queue_notice) NoticeQueued(job, now, out);
}

void JobLifecycle::NoticeQueued(Job& job, Clock::time_point now, Actions& out) {
  job.noticed = now;
  out.push_back(Reply{job.client,
                      JobStatusReply(job.request_id, job.job_id, v1::JOB_QUEUED, job.session_id, QueuePosition(job))});
}

// Queued jobs that are older than `job` (each gets its try before it).
uint32_t JobLifecycle::QueuePosition(const Job& job) const {
  uint32_t ahead = 0;
  for (const auto& [sid, other] : jobs_) {
    if (sid == job.session_id || !other.queued_since || other.state == JobState::kRunning) continue;
    if (std::tie(*other.queued_since, sid) < std::tie(*job.queued_since, job.session_id)) ++ahead;
  }
  return ahead;
}

// Gives the oldest queued job its next try, unless a queued job is trying now.
void JobLifecycle::DispatchQueued(Clock::time_point now, Actions& out) {
  const Job* oldest = nullptr;
  for (const auto& [sid, job] : jobs_) {
    if (!job.queued_since || job.state == JobState::kRunning) continue;
    if (job.state != JobState::kQueued) return;  // one try at a time
    if (!oldest || *job.queued_since < *oldest->queued_since) oldest = &job;
  }
  if (oldest) Dispatch(oldest->session_id, v1::NO_ROUTE, "", now, out);
}

// Sends job `sid` (queued, or rerouted) down a fresh route as a new session;
// answers from its earlier rounds then name a session that is gone. With no
// route the job fails with `code`, its message prefixed by `why`.
void JobLifecycle::Dispatch(uint64_t sid, v1::ErrorCode code, const std::string& why, Clock::time_point now,
                            Actions& out) {
  auto it = jobs_.find(sid);
  if (it == jobs_.end()) return;
  Result<std::vector<Span>> spans = registry_.Route(config_.n_layers, now);
  if (!spans.ok()) return Fail(sid, HeadError(code, why + spans.status().message(), sid), now, out);
  Job job = std::move(it->second);
  jobs_.erase(it);
  const uint64_t moved = ++next_session_;
  job.state = job.sampler_holds ? JobState::kRerouting : JobState::kOpening;
  job.session_id = moved;
  job.route = RouteThrough(config_.node_id, config_.node_endpoint, *spans);
  if (job.sampler_holds) out.push_back(SessionMove{sid, moved, job.route});
  job_sessions_[job.job_id] = moved;
  Job& stored = jobs_[moved] = std::move(job);
  OpenOnShards(stored, now, out);
}

// --------------------------------------------------------------- node loss

Actions JobLifecycle::NodeDown(const std::string& node_id, const std::string& how, Clock::time_point now) {
  Actions out;
  Down(node_id, how, now, out);
  return out;
}

void JobLifecycle::Down(const std::string& node, const std::string& how, Clock::time_point now, Actions& out) {
  const ShardEntry* entry = registry_.Find(node);
  if (!entry || entry->fixed) return;
  registry_.Remove(node);  // back when it announces itself again
  std::vector<uint64_t> hit;
  for (const auto& [sid, job] : jobs_) {
    if (job.state == JobState::kQueued) continue;  // holds nothing; a fresh route when it is its turn
    for (const v1::RouteHop& hop : job.route) {
      if (hop.node_id() == node) {
        hit.push_back(sid);
        break;
      }
    }
  }
  for (uint64_t sid : hit) Reroute(sid, node, how, now, out);
}

// Node `dead` on the route of session `sid` is gone: the job goes on over a
// route without it, as a new session (fresh caches on every shard of the new
// route; the old session is closed on the shards that survive). The client
// sees no gap: the sampler replays the tokens so far and carries on. Without
// another node for the dead one's layers, the job fails UNAVAILABLE.
void JobLifecycle::Reroute(uint64_t sid, const std::string& dead, const std::string& how, Clock::time_point now,
                           Actions& out) {
  auto it = jobs_.find(sid);
  if (it == jobs_.end()) return;
  const std::string lost = "node '" + dead + "' on the session's route " + how;
  Job& job = it->second;
  if (job.reroutes >= config_.max_reroutes) {
    return Fail(
        sid,
        HeadError(v1::UNAVAILABLE, lost + " (" + std::to_string(config_.max_reroutes) + " route changes already)", sid),
        now, out);
  }
  CloseOnShards(job, out, dead);
  job.state = job.sampler_holds ? JobState::kRerouting : JobState::kOpening;
  job.reroutes++;
  out.push_back(Log{lost + "; job " + std::to_string(job.job_id) + " goes on over another route"});
  Dispatch(sid, v1::UNAVAILABLE, lost + " and no other node can take its place: ", now, out);
}

// -------------------------------------------------------------------- time

Actions JobLifecycle::Tick(Clock::time_point now) {
  Actions out;
  const std::string ttl = std::to_string(Seconds(registry_.ttl()));
  for (const std::string& node : registry_.Expired(now)) {
    Down(node, "stopped answering (no heartbeat for " + ttl + " s)", now, out);
  }
  std::vector<uint64_t> late;
  std::vector<uint64_t> expired;
  for (auto& [sid, job] : jobs_) {
    if (job.state == JobState::kQueued) {
      if (now - *job.queued_since > config_.queue_timeout) {
        expired.push_back(sid);
      } else if (!job.noticed || now - *job.noticed >= config_.queue_notice) {
        NoticeQueued(job, now, out);
      }
    } else if (job.state != JobState::kRunning && now - job.attempt > config_.open_timeout) {
      late.push_back(sid);
    }
  }
  for (uint64_t sid : late) {
    auto it = jobs_.find(sid);
    if (it == jobs_.end()) continue;
    std::string who;
    for (const std::string& n : it->second.waiting) who += (who.empty() ? "" : ", ") + n;
    Fail(sid, HeadError(v1::TIMEOUT, "no answer to SessionOpen from " + who, sid), now, out);
  }
  for (uint64_t sid : expired) {  // End, not Fail: Fail ignores a queued job's CACHE_FULL (same round)
    End(sid,
        HeadError(
            v1::CACHE_FULL,
            "waited " + std::to_string(Seconds(config_.queue_timeout)) + " s for KV cache that other sessions hold",
            sid),
        now, out);
  }
  DispatchQueued(now, out);
  return out;
}

// ----------------------------------------------------------------- queries

Actions JobLifecycle::Status(const Origin& from, uint64_t request_id, uint64_t job_id) const {
  Actions out;
  auto it = job_sessions_.find(job_id);
  if (it == job_sessions_.end()) {
    out.push_back(UnknownJob(from, request_id, job_id));
    return out;
  }
  const Job& job = jobs_.at(it->second);
  const Reply reply =
      job.state == JobState::kQueued
          ? Reply{from, JobStatusReply(request_id, job_id, v1::JOB_QUEUED, job.session_id, QueuePosition(job))}
          : Reply{from, JobStatusReply(request_id, job_id, v1::JOB_RUNNING, job.session_id)};
  out.push_back(reply);
  return out;
}

std::optional<JobState> JobLifecycle::StateOf(uint64_t job_id) const {
  auto it = job_sessions_.find(job_id);
  if (it == job_sessions_.end()) return std::nullopt;
  return jobs_.at(it->second).state;
}

uint64_t JobLifecycle::SessionOf(uint64_t job_id) const {
  auto it = job_sessions_.find(job_id);
  return it == job_sessions_.end() ? 0 : it->second;
}

}  // namespace troupe::scheduling
