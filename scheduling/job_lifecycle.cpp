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
    : config_(std::move(config)),
      registry_(std::move(registry)),
      next_session_(config_.first_session_id),
      reusable_(config_.max_parked) {}

Reply JobLifecycle::UnknownJob(const Origin& to, uint64_t request_id, uint64_t job_id) const {
  return Reply{
      to, ErrorEnvelope(v1::UNKNOWN_JOB, "no job " + std::to_string(job_id), config_.node_id, 0, request_id, job_id)};
}

v1::Error JobLifecycle::HeadError(v1::ErrorCode code, const std::string& text, uint64_t session_id) const {
  return ErrorEnvelope(code, text, config_.node_id, session_id).error();
}

// ------------------------------------------------------------------ submit

std::optional<v1::Error> JobLifecycle::Refusal(Clock::time_point now) {
  if (closing_) {
    v1::Error e = HeadError(v1::UNAVAILABLE,
                            "the head is shutting down: it takes no new job (its running jobs finish; retry once it "
                            "is back)",
                            0);
    e.clear_session_id();
    e.set_retryable(true);
    return e;
  }
  if (QueueDepth() >= config_.max_queued) return Busy();  // jobs already wait: this one would too, past the bound
  if (CanRoute(now)) return std::nullopt;
  v1::Error e = HeadError(v1::NO_ROUTE, RouteProblem(now), 0);
  e.clear_session_id();
  return e;
}

namespace {

const char* StageWord(v1::Stage s) { return s == v1::STAGE_EMBEDDING ? "the embedding" : "the LM head"; }

}  // namespace

Result<std::vector<v1::RouteHop>> JobLifecycle::NewRoute(Clock::time_point now) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<Span> spans, registry_.Route(config_.n_layers, now));
  std::optional<Span> embedding, lm_head;
  for (const auto& [stage, local, out] : {std::tuple{v1::STAGE_EMBEDDING, config_.local_embedding, &embedding},
                                          std::tuple{v1::STAGE_LM_HEAD, config_.local_lm_head, &lm_head}}) {
    if (local) continue;
    *out = registry_.StageNode(stage, now);
    if (!*out) return Status::NotFound(RouteProblem(now));
  }
  return RouteThrough(config_.node_id, config_.node_endpoint, spans, config_.int8_link_rtt_ms,
                      embedding ? &*embedding : nullptr, lm_head ? &*lm_head : nullptr);
}

bool JobLifecycle::CanRoute(Clock::time_point now) const {
  return registry_.Routable(config_.n_layers, now) &&
         (config_.local_embedding || registry_.HasStageNode(v1::STAGE_EMBEDDING, now)) &&
         (config_.local_lm_head || registry_.HasStageNode(v1::STAGE_LM_HEAD, now));
}

std::string JobLifecycle::RouteProblem(Clock::time_point now) const {
  std::string problem = registry_.RouteProblem(config_.n_layers, now);
  for (const auto& [stage, local] :
       {std::pair{v1::STAGE_EMBEDDING, config_.local_embedding}, std::pair{v1::STAGE_LM_HEAD, config_.local_lm_head}}) {
    if (local || registry_.HasStageNode(stage, now)) continue;
    problem += std::string(problem.empty() ? "" : "; ") + "no node runs " + StageWord(stage) +
               " (the head does not: head_stages)";
  }
  return problem;
}

Actions JobLifecycle::Submit(uint64_t job_id, const Origin& client, uint64_t request_id, AdmittedJob admitted,
                             Clock::time_point now) {
  Actions out;
  Job job;
  job.job_id = job_id;
  job.priority = admitted.priority;
  job.request_id = request_id;
  job.client = client;
  job.stream = admitted.stream;
  job.params = admitted.params;
  job.submitted = now;
  const int64_t n = static_cast<int64_t>(admitted.prompt.size());
  job.max_length = std::min<int64_t>(config_.max_positions, n + job.params.max_tokens);
  if (!admitted.session.empty()) {
    std::optional<Job> in_session = InKeptSession(std::move(job), admitted, now, out);
    if (!in_session) return out;
    job = std::move(*in_session);
  } else {
    job.prompt = std::move(admitted.prompt);
  }
  KeptSession* kept = job.kept.empty() ? nullptr : kept_.Find(job.kept);
  if (kept && kept->bound()) {  // its caches are open: straight to the prefill of what is new
    job.session_id = kept->session_id;
    job.route = kept->route;
    job.cached = kept->cached;
  } else if (ReusePrefix(job, now)) {
    job.session_id = ++next_session_;
  } else {
    Result<std::vector<v1::RouteHop>> route = NewRoute(now);
    if (!route.ok()) {
      if (kept) kept->running_job = 0;
      if (kept && admitted.keep) kept_.Remove(kept->name, "never opened: no route");
      out.push_back(
          Reply{client, ErrorEnvelope(v1::NO_ROUTE, route.status().message(), config_.node_id, 0, request_id, job_id)});
      return out;
    }
    job.session_id = ++next_session_;
    job.route = std::move(*route);
  }
  if (!admitted.seed_given) job.params.seed = Mix64(job.session_id);
  out.push_back(Reply{client, JobStatusReply(request_id, job.job_id, v1::JOB_RUNNING, job.session_id)});

  const uint64_t sid = job.session_id;
  job_sessions_[job.job_id] = sid;
  Job& stored = jobs_[sid] = std::move(job);
  if (kept && kept->bound()) {
    Start(stored, now, out);
  } else {
    OpenOnShards(stored, now, out);
  }
  return out;
}

std::optional<JobLifecycle::Job> JobLifecycle::InKeptSession(Job job, const AdmittedJob& admitted,
                                                             Clock::time_point now, Actions& out) {
  const std::string& name = admitted.session;
  auto refuse = [&](v1::ErrorCode code, const std::string& text) {
    out.push_back(Reply{job.client, ErrorEnvelope(code, text, config_.node_id, 0, job.request_id, job.job_id)});
    return std::nullopt;
  };
  KeptSession* s = kept_.Find(name);
  if (admitted.keep) {
    if (s) return refuse(v1::SESSION_EXISTS, "kept session '" + name + "' is open already (continue it without keep)");
    KeptSession fresh;
    fresh.name = name;
    fresh.max_length =
        admitted.max_length > 0 ? admitted.max_length : std::min(config_.max_positions, config_.kept_max_length);
    fresh.last_used = now;
    s = &kept_.Add(std::move(fresh));
  } else if (!s) {
    return refuse(v1::UNKNOWN_SESSION, kept_.WhyGone(name));
  } else if (s->running_job != 0) {
    return refuse(v1::SESSION_BUSY, "kept session '" + name + "' is running job " + std::to_string(s->running_job) +
                                        " (one job at a time per session)");
  }
  std::vector<int32_t> context = s->context;
  auto prompt = admitted.prompt.begin();
  // A chat turn begins by closing the previous assistant turn; an answer
  // that ended with that very token (its eos) has closed it already.
  if (admitted.chat_continuation && !context.empty() && prompt != admitted.prompt.end() && *prompt == context.back()) {
    ++prompt;
  }
  context.insert(context.end(), prompt, admitted.prompt.end());
  const int64_t n = static_cast<int64_t>(context.size());
  if (n >= s->max_length) {
    const std::string text = "kept session '" + name + "' holds " + std::to_string(s->context.size()) + " of its " +
                             std::to_string(s->max_length) + " positions; with this prompt the context would be " +
                             std::to_string(n) + " tokens, leaving no room to answer";
    if (admitted.keep) kept_.Remove(name, "never opened: its first prompt did not fit");
    return refuse(v1::SESSION_FULL, text);
  }
  job.prompt = std::move(context);
  job.max_length = s->max_length;
  job.kept = name;
  s->running_job = job.job_id;
  return job;
}
bool JobLifecycle::ReusePrefix(Job& job, Clock::time_point now) {
  // Beam rows are filled from row 0 by the shards: a beam job copies nothing.
  // A job scoring its prompt needs every position computed.
  if (!config_.prefix_reuse || job.prompt.size() < 2 || job.params.beam_search() || job.params.prompt_logprobs >= 0) {
    return false;
  }
  auto up = [&](const ParkedCache& c) {
    for (const v1::RouteHop& hop : c.route) {
      // Its shards, and stage nodes other than the head, must still be there.
      if (hop.node_id() != config_.node_id && !registry_.Find(hop.node_id())) return false;
    }
    return true;
  };
  std::optional<ReusableCaches::Match> match = reusable_.Longest(job.prompt, config_.min_reuse, up, now);
  if (!match) return false;
  // The prompt's last token must run: its logits start the answer.
  const int64_t length = std::min<int64_t>(match->length, static_cast<int64_t>(job.prompt.size()) - 1);
  if (length < config_.min_reuse) return false;
  job.route = match->cache.route;
  job.copy_from = match->cache.session_id;
  job.cached = length;
  return true;
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
    v1::Envelope open = SessionOpenEnvelope(job.session_id, job.max_length, config_.fingerprint, job.params.num_beams);
    if (job.copy_from != 0) {
      open.mutable_session_open()->set_copy_from(job.copy_from);
      open.mutable_session_open()->set_copy_length(static_cast<uint32_t>(job.cached));
    }
    out.push_back(ToNode{hop.node_id(), hop.endpoint(), job.session_id, std::move(open)});
  }
}

Actions JobLifecycle::Opened(uint64_t session_id, const std::string& node_id, int64_t copied, Clock::time_point now) {
  Actions out;
  auto it = jobs_.find(session_id);
  if (it == jobs_.end()) return out;
  Job& job = it->second;
  if (job.state == JobState::kQueued) return out;  // a late answer from before the refusal; closed there
  if (job.waiting.erase(node_id) && job.copy_from != 0) job.cached = std::min(job.cached, copied);
  if (job.state == JobState::kRunning || !job.waiting.empty()) return out;
  if (job.state == JobState::kRerouting) {  // the sampler has the generation so far: replay it
    job.state = JobState::kRunning;
    out.push_back(SessionResume{job.session_id});
    return out;
  }
  Start(job, now, out);
  return out;
}

void JobLifecycle::Start(Job& job, Clock::time_point now, Actions& out) {
  job.state = JobState::kRunning;
  job.sampler_holds = true;
  if (config_.prefix_reuse && job.kept.empty() && static_cast<int64_t>(job.prompt.size()) > config_.min_reuse) {
    // A source for jobs with the same prompt start while it runs (its prompt but the last token).
    std::vector<int32_t> prefix(job.prompt.begin(), job.prompt.end() - 1);
    for (const ParkedCache& dropped :
         reusable_.Park(ParkedCache{job.session_id, job.route, std::move(prefix), now, true})) {
      CloseRoute(dropped.session_id, dropped.route, out);
    }
  }
  prefill_.prefilled += job.prompt.size() - static_cast<size_t>(job.cached);
  prefill_.reused += static_cast<uint64_t>(job.cached);
  SessionStart start;
  start.session_id = job.session_id;
  start.job_id = job.job_id;
  start.client = job.client;
  start.request_id = job.request_id;
  start.stream = job.stream;
  start.prompt = job.prompt;
  start.cached = job.cached;
  start.params = job.params;
  start.max_length = job.max_length;
  start.route = job.route;
  start.submitted = job.submitted;
  start.opened = now;
  out.push_back(std::move(start));
  // The prefill: what the caches do not hold yet, to the embedding, which chunks it.
  v1::Step prefill = PrefillStep(job.session_id, job.prompt, job.cached, job.route);
  prefill.set_all_logits(job.params.prompt_logprobs >= 0);  // every row's logits: the prompt's logprobs
  out.push_back(Prefill{job.session_id, std::move(prefill)});
}

// ------------------------------------------------------------------ endings

Actions JobLifecycle::Failed(uint64_t session_id, const v1::Error& error, Clock::time_point now) {
  Actions out;
  if (!jobs_.count(session_id)) {
    // A parked cache a shard evicted (or closed, idle): forgotten, closed on the others.
    if (std::optional<ParkedCache> parked = reusable_.Take(session_id)) {
      CloseRoute(session_id, parked->route, out, error.node_id());
      return out;
    }
    // An idle kept session's cache failed (a shard closed it, idle): next time it opens afresh.
    if (KeptSession* s = kept_.BoundTo(session_id)) {
      out.push_back(
          Log{"kept session '" + s->name + "' lost its cache (" + error.text() + "); its next job prefills again"});
      UnbindKept(*s, out, error.node_id());
    }
    return out;
  }
  Fail(session_id, error, now, out);
  return out;
}

Actions JobLifecycle::SendFailed(uint64_t session_id, v1::ErrorCode code, const std::string& text,
                                 Clock::time_point now) {
  Actions out;
  Fail(session_id, HeadError(code, text, session_id), now, out);
  return out;
}

Actions JobLifecycle::Done(uint64_t session_id, std::vector<int32_t> tokens, Clock::time_point now) {
  Actions out;
  auto it = jobs_.find(session_id);
  if (it == jobs_.end()) return out;
  reusable_.Take(session_id);  // a live source: parked below, or gone with the session
  KeptSession* kept = it->second.kept.empty() ? nullptr : kept_.Find(it->second.kept);
  // A beam job's tokens are its best sequence, not what its row 0 holds: closed, not parked.
  if (!kept && config_.prefix_reuse && !it->second.params.beam_search() &&
      static_cast<int64_t>(tokens.size()) > config_.min_reuse) {
    // Parked: its caches hold every token but the last sampled one.
    Job& job = it->second;
    tokens.pop_back();
    for (const ParkedCache& dropped : reusable_.Park(ParkedCache{session_id, job.route, std::move(tokens), now})) {
      CloseRoute(dropped.session_id, dropped.route, out);
    }
    for (const v1::RouteHop& hop : job.route) {
      if (hop.stage() != v1::STAGE_SHARD) continue;
      v1::Envelope park = SessionCloseEnvelope(session_id);
      park.mutable_session_close()->set_park(true);
      out.push_back(ToNode{hop.node_id(), hop.endpoint(), session_id, std::move(park)});
    }
    job_sessions_.erase(job.job_id);
    jobs_.erase(it);
    DispatchQueued(now, out);
    return out;
  }
  if (!kept || tokens.empty()) {
    if (kept) {  // no tokens to keep (cannot happen: admission refuses beams in a kept session)
      kept->running_job = 0;
      kept->Unbind();
    }
    Close(session_id, now, out);
    return out;
  }
  // The caches hold every token but the last sampled one, which no step has
  // carried yet: the next job's prefill starts with it.
  const Job& job = it->second;
  kept->context = std::move(tokens);
  kept->cached = static_cast<int64_t>(kept->context.size()) - 1;
  kept->session_id = job.session_id;
  kept->route = job.route;
  kept->running_job = 0;
  kept->jobs++;
  kept->last_used = now;
  job_sessions_.erase(job.job_id);
  jobs_.erase(it);
  DispatchQueued(now, out);
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
  if (KeptSession* kept = job.kept.empty() ? nullptr : kept_.Find(job.kept)) {
    // The context stays as before the job; the shard session goes (Close below).
    kept->running_job = 0;
    kept->last_used = now;
    if (kept->session_id != session_id) UnbindKept(*kept, out);
    kept->Unbind();
    if (kept->jobs == 0) kept_.Remove(kept->name, "ended: its first job failed (" + error.text() + ")");
  }
  Close(session_id, now, out);
}

void JobLifecycle::UnbindKept(KeptSession& s, Actions& out, const std::string& skip) {
  CloseRoute(s.session_id, s.route, out, skip);
  s.Unbind();
}

// ------------------------------------------------------------ kept sessions

Actions JobLifecycle::CloseKept(const Origin& from, uint64_t request_id, const std::string& name,
                                Clock::time_point now) {
  Actions out;
  KeptSession* s = kept_.Find(name);
  if (!s) {
    out.push_back(Reply{from, ErrorEnvelope(v1::UNKNOWN_SESSION, kept_.WhyGone(name), config_.node_id, 0, request_id)});
    return out;
  }
  const uint64_t running = SessionOf(s->running_job);
  if (s->bound() && s->session_id != running) UnbindKept(*s, out);  // a running job's own closes as it ends
  kept_.Remove(name, "was closed");
  if (running != 0) End(running, HeadError(v1::CANCELLED, "kept session '" + name + "' was closed", running), now, out);
  out.push_back(Log{"kept session '" + name + "' closed"});
  v1::Envelope reply = NewEnvelope(request_id);
  reply.mutable_kept_session_closed()->set_name(name);
  out.push_back(Reply{from, std::move(reply)});
  DispatchQueued(now, out);
  return out;
}

Actions JobLifecycle::ListKept(const Origin& from, uint64_t request_id, Clock::time_point now) const {
  Actions out;
  v1::Envelope reply = NewEnvelope(request_id);
  v1::KeptSessionList* list = reply.mutable_kept_session_list();
  for (const auto& [name, s] : kept_.all()) {
    v1::KeptSession* k = list->add_sessions();
    k->set_name(name);
    k->set_context_tokens(static_cast<uint32_t>(s.context.size()));
    k->set_max_length(static_cast<uint32_t>(s.max_length));
    k->set_jobs(s.jobs);
    k->set_running_job(s.running_job);
    const double idle = s.running_job ? 0.0 : std::chrono::duration<double>(now - s.last_used).count();
    k->set_idle_seconds(idle);
    k->set_expires_in_seconds(std::max(0.0, std::chrono::duration<double>(config_.kept_ttl).count() - idle));
    for (const v1::RouteHop& hop : s.route) {
      if (hop.stage() == v1::STAGE_SHARD) k->add_route(hop.node_id());
    }
  }
  out.push_back(Reply{from, std::move(reply)});
  return out;
}

// Closes the session on every shard of its route and forgets the job.
void JobLifecycle::Close(uint64_t session_id, Clock::time_point now, Actions& out) {
  auto it = jobs_.find(session_id);
  if (it == jobs_.end()) return;
  reusable_.Take(session_id);  // a live source no more
  it->second.state = JobState::kFinished;
  CloseOnShards(it->second, out);
  job_sessions_.erase(it->second.job_id);
  jobs_.erase(it);
  DispatchQueued(now, out);  // the cache it held may be what a queued job waits for
}

// SessionClose for the job's current session to the shards of its route
// (but `skip`, a node known to be gone).
void JobLifecycle::CloseOnShards(const Job& job, Actions& out, const std::string& skip) const {
  CloseRoute(job.session_id, job.route, out, skip);
}

void JobLifecycle::CloseRoute(uint64_t session_id, const std::vector<v1::RouteHop>& route, Actions& out,
                              const std::string& skip) const {
  for (const v1::RouteHop& hop : route) {
    if (hop.stage() != v1::STAGE_SHARD || hop.node_id() == skip) continue;
    out.push_back(ToNode{hop.node_id(), hop.endpoint(), session_id, SessionCloseEnvelope(session_id)});
  }
}

// -------------------------------------------------------------------- queue

// A shard has no cache for the job now but will once other sessions close:
// the job closes what this round opened and waits, oldest first, for its next
// try (on every close and tick; replicas take turns on each try).
size_t JobLifecycle::QueueDepth() const {
  size_t n = 0;
  for (const auto& [sid, job] : jobs_) {
    n += job.state == JobState::kQueued || (job.state == JobState::kOpening && !job.sampler_holds);
  }
  return n;
}

v1::Error JobLifecycle::Busy() const {
  const size_t depth = QueueDepth();
  v1::Error e = HeadError(v1::BUSY,
                          "the head's queue is full: " + std::to_string(depth) + " jobs wait for KV cache (at most " +
                              std::to_string(config_.max_queued) + "); retry in " +
                              std::to_string(Seconds(config_.busy_retry)) + " s",
                          0);
  e.clear_session_id();
  e.set_retryable(true);
  e.set_queue_depth(static_cast<uint32_t>(depth));
  e.set_retry_after_seconds(std::chrono::duration<double>(config_.busy_retry).count());
  return e;
}

void JobLifecycle::Enqueue(Job& job, const v1::Error& why, Clock::time_point now, Actions& out) {
  CloseOnShards(job, out);
  job.state = JobState::kQueued;
  job.waiting.clear();
  if (!job.queued_since) {
    job.queued_since = now;
    jobs_queued_total_++;
    out.push_back(
        Log{"job " + std::to_string(job.job_id) + " waits for cache: " + why.text(), job.job_id, job.session_id});
  }
  if (!job.noticed || now - *job.noticed >= config_.queue_notice) NoticeQueued(job, now, out);
}

void JobLifecycle::NoticeQueued(Job& job, Clock::time_point now, Actions& out) {
  job.noticed = now;
  out.push_back(Reply{job.client,
                      JobStatusReply(job.request_id, job.job_id, v1::JOB_QUEUED, job.session_id, QueuePosition(job))});
}

bool JobLifecycle::Before(const Job& a, const Job& b) {
  return std::make_tuple(-static_cast<int64_t>(a.priority), *a.queued_since, a.session_id) <
         std::make_tuple(-static_cast<int64_t>(b.priority), *b.queued_since, b.session_id);
}

// Queued jobs whose turn comes before `job`'s (higher priority, or as high and older).
uint32_t JobLifecycle::QueuePosition(const Job& job) const {
  uint32_t ahead = 0;
  for (const auto& [sid, other] : jobs_) {
    if (sid == job.session_id || !other.queued_since || other.state == JobState::kRunning) continue;
    if (Before(other, job)) ++ahead;
  }
  return ahead;
}

// Gives the first queued job (by priority, then age) its next try, unless a
// queued job is trying now.
void JobLifecycle::DispatchQueued(Clock::time_point now, Actions& out) {
  if (closing_) return;  // the queued jobs wait in the journal for the next start
  const Job* first = nullptr;
  for (const auto& [sid, job] : jobs_) {
    if (!job.queued_since || job.state == JobState::kRunning) continue;
    if (job.state != JobState::kQueued) return;  // one try at a time
    if (!first || Before(job, *first)) first = &job;
  }
  if (first) Dispatch(first->session_id, v1::NO_ROUTE, "", now, out);
}

// Sends job `sid` (queued, or rerouted) down a fresh route as a new session;
// answers from its earlier rounds then name a session that is gone. With no
// route the job fails with `code`, its message prefixed by `why`.
void JobLifecycle::Dispatch(uint64_t sid, v1::ErrorCode code, const std::string& why, Clock::time_point now,
                            Actions& out) {
  auto it = jobs_.find(sid);
  if (it == jobs_.end()) return;
  Result<std::vector<v1::RouteHop>> route = NewRoute(now);
  if (!route.ok()) return Fail(sid, HeadError(code, why + route.status().message(), sid), now, out);
  Job job = std::move(it->second);
  jobs_.erase(it);
  reusable_.Take(sid);  // its old session, a live source no more
  const uint64_t moved = ++next_session_;
  job.state = job.sampler_holds ? JobState::kRerouting : JobState::kOpening;
  job.session_id = moved;
  job.route = std::move(*route);
  job.copy_from = 0;  // a fresh route: nothing to copy (a rerouted job replays it all)
  job.cached = 0;
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

Actions JobLifecycle::NodeTroubled(const std::string& node_id, const std::string& how, Clock::time_point now) {
  Actions out;
  if (registry_.Find(node_id)) RerouteThrough(node_id, how, now, out);
  return out;
}

void JobLifecycle::Down(const std::string& node, const std::string& how, Clock::time_point now, Actions& out) {
  const ShardEntry* entry = registry_.Find(node);
  if (!entry || (entry->fixed && !entry->draining)) return;  // a drained one leaves even from the config
  registry_.Remove(node);                                    // back when it announces itself again
  RerouteThrough(node, how, now, out);
}

void JobLifecycle::RerouteThrough(const std::string& node, const std::string& how, Clock::time_point now,
                                  Actions& out) {
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
  for (const ParkedCache& parked : reusable_.TakeThrough(node)) {
    if (!parked.live) CloseRoute(parked.session_id, parked.route, out, node);
  }
  for (auto& [name, s] : kept_.all()) {
    if (s.running_job != 0 || !s.bound()) continue;
    for (const v1::RouteHop& hop : s.route) {
      if (hop.node_id() == node) {
        UnbindKept(s, out, node);
        break;
      }
    }
  }
}

// Node `dead` on the route of session `sid` is gone: the job goes on over a
// route without it, as a new session (fresh caches on every shard of the new
// route; the old session is closed on the shards that survive). The client
// sees no gap: the sampler replays the tokens so far and carries on. Without
// another node for the dead one's layers, the job fails UNAVAILABLE.
void JobLifecycle::Reroute(uint64_t sid, const std::string& dead, const std::string& how, Clock::time_point now,
                           Actions& out, bool alive) {
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
  CloseOnShards(job, out, alive ? "" : dead);
  job.state = job.sampler_holds ? JobState::kRerouting : JobState::kOpening;
  job.reroutes++;
  reroutes_total_++;
  out.push_back(
      Log{lost + "; job " + std::to_string(job.job_id) + " goes on over another route", job.job_id, sid, true});
  Dispatch(sid, v1::UNAVAILABLE, lost + " and no other node can take its place: ", now, out);
}

std::string DrainText(const std::string& node, const DrainCounts& c) {
  return "node '" + node + "' is draining: " + std::to_string(c.moved) + " job(s) moved to other nodes, " +
         std::to_string(c.staying) + " finishing on it" +
         (c.staying > 0 ? " (no other node serves its layers now); it leaves when they are done" : "");
}

Actions JobLifecycle::Drain(const std::string& node, Clock::time_point now, DrainCounts* counts) {
  Actions out;
  DrainCounts c;
  if (registry_.Find(node)) {
    drains_total_++;
    registry_.SetDraining(node);
    std::vector<uint64_t> through;
    for (const auto& [sid, job] : jobs_) {
      if (job.state == JobState::kQueued) continue;  // holds nothing; its turn takes a route without it
      for (const v1::RouteHop& hop : job.route) {
        if (hop.node_id() == node) {
          through.push_back(sid);
          break;
        }
      }
    }
    const bool elsewhere = CanRoute(now);
    for (uint64_t sid : through) {
      if (!elsewhere) {
        c.staying++;
        continue;
      }
      c.moved++;
      Reroute(sid, node, "is draining", now, out, /*alive=*/true);
    }
    for (const ParkedCache& parked : reusable_.TakeThrough(node)) {
      if (!parked.live) CloseRoute(parked.session_id, parked.route, out);
    }
    for (auto& [name, s] : kept_.all()) {
      if (s.running_job != 0 || !s.bound()) continue;
      for (const v1::RouteHop& hop : s.route) {
        if (hop.node_id() == node) {
          UnbindKept(s, out);
          break;
        }
      }
    }
    out.push_back(Log{DrainText(node, c)});
  }
  if (counts) *counts = c;
  return out;
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
  std::vector<std::string> idle;
  for (const auto& [name, s] : kept_.all()) {
    if (s.running_job == 0 && now - s.last_used > config_.kept_ttl) idle.push_back(name);
  }
  for (const std::string& name : idle) {
    const std::string why = "expired after " + std::to_string(Seconds(config_.kept_ttl)) + " s idle";
    UnbindKept(*kept_.Find(name), out);
    kept_.Remove(name, why);
    out.push_back(Log{"kept session '" + name + "' " + why});
  }
  DispatchQueued(now, out);
  return out;
}

// ----------------------------------------------------------------- queries

std::optional<LiveState> JobLifecycle::Live(uint64_t job_id) const {
  auto it = job_sessions_.find(job_id);
  if (it == job_sessions_.end()) return std::nullopt;
  const Job& job = jobs_.at(it->second);
  if (job.state == JobState::kQueued) return LiveState{v1::JOB_QUEUED, QueuePosition(job), job.session_id};
  return LiveState{v1::JOB_RUNNING, 0, job.session_id};
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
