#include "actors/scheduler_actor.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "scheduling/registry.h"
#include "actors/stage_actor.h"
#include "messages/envelope_codec.h"
#include "messages/sampling_params_proto.h"
#include "pipeline/model/prompt.h"

namespace troupe::actors {
namespace {

using scheduling::Registry;
using scheduling::ShardEntry;
using scheduling::Span;

constexpr auto kTick = std::chrono::milliseconds(200);
constexpr auto kOpenTimeout = std::chrono::seconds(30);
constexpr auto kMetricsTimeout = std::chrono::seconds(2);
// A job survives this many route changes (a node dying mid-answer) before it
// fails: enough for any real outage, not a loop when nodes keep flapping.
constexpr int kMaxReroutes = 4;
// A job refused for want of cache that other sessions hold waits at most this
// long for it; its client hears from the head at least this often meanwhile.
constexpr auto kQueueTimeout = std::chrono::minutes(10);
constexpr auto kQueueNotice = std::chrono::seconds(10);

uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

v1::RouteHop Hop(const std::string& node, const std::string& endpoint, v1::Stage stage, int64_t begin = 0,
                 int64_t end = 0) {
  v1::RouteHop h;
  h.set_node_id(node);
  h.set_endpoint(endpoint);
  h.set_stage(stage);
  h.set_layer_begin(static_cast<uint32_t>(begin));
  h.set_layer_end(static_cast<uint32_t>(end));
  return h;
}

struct Job {
  uint64_t job_id = 0;
  uint64_t session_id = 0;
  uint64_t request_id = 0;
  Origin client;
  bool stream = true;
  std::vector<int32_t> prompt;
  SamplingParams params;
  v1::SamplingParams sampling;  // as sent to the shards (seed set)
  int64_t capacity = 0;
  std::vector<v1::RouteHop> route;  // the ring, embedding first
  std::set<std::string> waiting;    // shards yet to confirm SessionOpen
  bool running = false;  // the sampler holds the generation
  bool resume = false;   // moved to a new route: replay, do not start
  bool queued = false;   // waiting for cache: no session open anywhere
  int reroutes = 0;
  Clock::time_point submitted, opened;
  Clock::time_point attempt;       // when the current SessionOpen round began
  Clock::time_point queued_since;  // first refusal for want of cache (epoch: never)
  Clock::time_point noticed;       // last JOB_QUEUED sent to the client
};

struct MetricsQuery {
  Origin client;
  uint64_t request_id = 0;
  std::set<std::string> waiting;
  v1::MetricsSnapshot merged;
  Clock::time_point deadline;
};

class SchedulerActor : public StageActor {
 public:
  SchedulerActor(caf::actor_config& cfg, std::shared_ptr<NodeContext> ctx) : StageActor(cfg, std::move(ctx)) {
    // Session ids start at a random point so that a restarted head does not
    // reuse the ids of sessions its shards may still hold.
    next_session_ = static_cast<uint64_t>(std::random_device{}() & 0xffffff) << 32;
  }

  const char* name() const override { return "scheduler"; }

  caf::behavior make_behavior() override {
    RegisterFixedShards();
    delayed_send(this, kTick, tick_atom::value);
    return {
        [this](WireMessage& m) { OnWire(m); },
        [this](const SessionDone& d) { Close(d.session_id, "finished"); },
        [this](SessionFailed& f) { Fail(f.session_id, f.error); },
        [this](const PeerGone& g) { OnPeerGone(g.client); },
        [this](const NodeDown& d) { OnNodeDown(d.node_id, "disconnected"); },
        [this](tick_atom) {
          OnTick();
          delayed_send(this, kTick, tick_atom::value);
        },
        StartHandler(),
        RetryHandler(),
    };
  }

  void on_exit() override {
    // Nobody waits in vain: every job still running gets an answer.
    for (auto& [sid, job] : jobs_) {
      ReplyError(job.client, job.request_id, v1::UNAVAILABLE, "the head is shutting down", job.job_id, sid);
    }
    StageActor::on_exit();
    jobs_.clear();
    queries_.clear();
  }

 private:
  // -------------------------------------------------------------- wiring

  void RegisterFixedShards() {
    const NodeConfig& c = ctx_->config;
    if (c.shard) {
      registry_.Upsert(ShardEntry{ctx_->node_id, ctx_->node_endpoint, c.layer_begin, c.layer_end, true, Clock::now()});
    }
    for (const PeerConfig& p : c.peers) {
      if (p.shard && !p.endpoint.empty()) {
        registry_.Upsert(ShardEntry{p.id, p.endpoint, p.layer_begin, p.layer_end, true, Clock::now()});
      }
    }
  }

  void OnWire(WireMessage& m) {
    v1::Envelope& env = m.envelope;
    switch (env.body_case()) {
      case v1::Envelope::kJobSubmit: return Submit(m.from, env.request_id(), env.job_submit());
      case v1::Envelope::kJobCancel: return Cancel(m.from, env.request_id(), env.job_cancel().job_id());
      case v1::Envelope::kJobStatusQuery: return StatusOf(m.from, env.request_id(), env.job_status_query().job_id());
      case v1::Envelope::kSessionOpened: return Opened(env.session_opened());
      case v1::Envelope::kError:
        if (env.error().has_session_id()) Fail(env.error().session_id(), env.error());
        return;
      case v1::Envelope::kRegistryAnnounce: return Announced(m.from, env.registry_announce());
      case v1::Envelope::kHeartbeat: return registry_.Touch(env.heartbeat().node_id(), Clock::now());
      case v1::Envelope::kMetricsSnapshot:
        if (env.metrics_snapshot().node_id().empty()) return QueryMetrics(m.from, env.request_id());
        return MetricsAnswer(env.request_id(), env.metrics_snapshot());
      default: return;
    }
  }

  void Reply(const Origin& to, v1::Envelope env) { Sent(sender_.Reply(to, std::move(env))); }

  void ReplyError(const Origin& to, uint64_t request_id, v1::ErrorCode code, const std::string& text,
                  uint64_t job_id = 0, uint64_t session_id = 0) {
    v1::Envelope env = ErrorEnvelope(code, text, ctx_->node_id, session_id, request_id);
    if (job_id) env.mutable_error()->set_job_id(job_id);
    Reply(to, std::move(env));
  }

  // ----------------------------------------------------------------- jobs

  void Submit(const Origin& client, uint64_t request_id, const v1::JobSubmit& submit) {
    const uint64_t job_id = submit.job_id() != 0 && !job_sessions_.count(submit.job_id()) ? submit.job_id() : NextJobId();
    auto refuse = [&](v1::ErrorCode code, const std::string& text) {
      ReplyError(client, request_id, code, text, job_id);
    };
    if (submit.has_session_id()) {
      return refuse(v1::BAD_REQUEST, "continuing a session is not supported yet: submit the whole conversation");
    }
    WireResult<SamplingParams> params = SamplingParamsFromProto(submit.sampling());
    if (!params.ok()) return refuse(params.error().code, params.error().text);
    PromptRequest prompt;
    if (submit.chat_size() > 0) {
      if (!submit.prompt().empty()) return refuse(v1::BAD_REQUEST, "a job has either a prompt or chat messages");
      // A whole conversation: system / user / assistant turns in order.
      prompt.chat = true;
      prompt.system = submit.system();
      for (int i = 0; i < submit.chat_size(); ++i) {
        const v1::ChatMessage& msg = submit.chat(i);
        if (msg.role() != "system" && msg.role() != "user" && msg.role() != "assistant") {
          return refuse(v1::BAD_REQUEST, "chat message " + std::to_string(i) + ": unknown role '" + msg.role() +
                                             "' (system, user, assistant)");
        }
        prompt.messages.push_back(ChatMessage{msg.role(), msg.content()});
      }
    } else {
      prompt.prompt = submit.prompt();
    }
    Result<std::vector<int32_t>> ids = PromptTokens(*ctx_->tokenizer, ctx_->source->tokenizer_spec(), prompt);
    if (!ids.ok()) return refuse(v1::BAD_REQUEST, ids.status().ToString());
    const ModelConfig& mc = ctx_->source->config();
    const int64_t n = static_cast<int64_t>(ids->size());
    if (n >= mc.max_positions) {
      return refuse(v1::BAD_REQUEST, "the prompt has " + std::to_string(n) + " tokens; the model's context is " +
                                         std::to_string(mc.max_positions));
    }
    Result<std::vector<Span>> spans = registry_.Route(mc.n_layers, Clock::now());
    if (!spans.ok()) return refuse(v1::NO_ROUTE, spans.status().message());

    Job job;
    job.job_id = job_id;
    job.session_id = NextSessionId();
    job.request_id = request_id;
    job.client = client;
    job.stream = submit.stream();
    job.params = *params;
    if (!submit.sampling().has_seed()) job.params.seed = Mix64(job.session_id);
    job.sampling = SamplingParamsToProto(job.params);
    job.prompt = std::move(*ids);
    job.capacity = std::min<int64_t>(mc.max_positions, n + job.params.max_tokens);
    job.submitted = Clock::now();
    job.route = Ring(*spans);

    v1::Envelope status = NewEnvelope(request_id);
    v1::JobStatus* js = status.mutable_job_status();
    js->set_job_id(job.job_id);
    js->set_state(v1::JOB_RUNNING);
    js->set_session_id(job.session_id);
    Reply(client, std::move(status));

    const uint64_t sid = job.session_id;
    job_sessions_[job.job_id] = sid;
    Job& stored = jobs_[sid] = std::move(job);
    ctx_->counters.sessions_open = jobs_.size();
    OpenOnShards(stored);
  }

  // The ring through `spans`: embedding, the shards, LM head, sampler.
  std::vector<v1::RouteHop> Ring(const std::vector<Span>& spans) const {
    std::vector<v1::RouteHop> route;
    route.push_back(Hop(ctx_->node_id, ctx_->node_endpoint, v1::STAGE_EMBEDDING));
    for (const Span& s : spans) {
      route.push_back(Hop(s.node_id, s.endpoint, v1::STAGE_SHARD, s.layer_begin, s.layer_end));
    }
    route.push_back(Hop(ctx_->node_id, ctx_->node_endpoint, v1::STAGE_LM_HEAD));
    route.push_back(Hop(ctx_->node_id, ctx_->node_endpoint, v1::STAGE_SAMPLER));
    return route;
  }

  // Sends SessionOpen to every shard of the job's route; Opened() goes on.
  void OpenOnShards(Job& job) {
    const uint64_t sid = job.session_id;
    job.attempt = Clock::now();
    job.waiting.clear();
    for (const v1::RouteHop& hop : job.route) {
      if (hop.stage() == v1::STAGE_SHARD) job.waiting.insert(hop.node_id());
    }
    for (const v1::RouteHop& hop : job.route) {
      if (hop.stage() != v1::STAGE_SHARD) continue;
      v1::Envelope open = NewEnvelope();
      v1::SessionOpen* o = open.mutable_session_open();
      o->set_session_id(sid);
      for (const v1::RouteHop& h : job.route) *o->add_route() = h;
      o->set_max_length(static_cast<uint32_t>(job.capacity));
      *o->mutable_sampling() = job.sampling;
      o->set_model_fingerprint(ctx_->fingerprint);
      o->set_job_id(job.job_id);
      Status st = sender_.ToNode(hop.node_id(), hop.endpoint(), std::move(open));
      if (!st.ok()) {
        return Fail(sid, ErrorEnvelope(v1::UNAVAILABLE, "cannot reach shard '" + hop.node_id() + "': " + st.ToString(),
                                       ctx_->node_id, sid)
                             .error());
      }
    }
    ScheduleRetry();
  }

  void Opened(const v1::SessionOpened& o) {
    auto it = jobs_.find(o.session_id());
    if (it == jobs_.end()) return;
    Job& job = it->second;
    if (job.queued) return;  // a late answer from before the refusal; closed there
    job.waiting.erase(o.node_id());
    if (job.running || !job.waiting.empty()) return;
    job.running = true;
    if (job.resume) {  // the sampler has the generation so far: replay it
      job.resume = false;
      send(ctx_->sampler, SessionResume{job.session_id});
      return;
    }
    job.opened = Clock::now();
    SessionStart start;
    start.session_id = job.session_id;
    start.job_id = job.job_id;
    start.client = job.client;
    start.request_id = job.request_id;
    start.stream = job.stream;
    start.prompt = job.prompt;
    start.params = job.params;
    start.capacity = job.capacity;
    start.route = job.route;
    start.submitted = job.submitted;
    start.opened = job.opened;
    send(ctx_->sampler, std::move(start));
    // The prefill: the whole prompt to the embedding, which chunks it.
    v1::Step step;
    step.set_session_id(job.session_id);
    step.set_step_id(0);
    step.set_first_position(0);
    step.set_token_count(static_cast<uint32_t>(job.prompt.size()));
    for (int32_t id : job.prompt) step.add_token_ids(id);
    for (const v1::RouteHop& h : job.route) *step.add_rest_of_route() = h;
    Status st = sender_.ForwardStep(std::move(step), at::Tensor());
    if (!st.ok()) {
      Fail(job.session_id, ErrorEnvelope(v1::INTERNAL, "cannot start the prefill: " + st.ToString(), ctx_->node_id,
                                         job.session_id)
                               .error());
    }
  }

  // The job of `session_id` failed: tell its client, stop the sampler, close everywhere.
  void Fail(uint64_t session_id, const v1::Error& error) {
    auto it = jobs_.find(session_id);
    if (it == jobs_.end()) return;
    Job& job = it->second;
    if (job.queued && error.code() == v1::CACHE_FULL) return;  // another shard's refusal of the same round
    if (error.code() == v1::CACHE_FULL && error.retryable() && !job.running) return Enqueue(job, error);
    v1::Envelope env = NewEnvelope(job.request_id);
    *env.mutable_error() = error;
    env.mutable_error()->set_job_id(job.job_id);
    env.mutable_error()->set_session_id(session_id);
    Reply(job.client, std::move(env));
    if (job.running || job.resume) send(ctx_->sampler, SessionDrop{session_id});  // the sampler holds it
    Close(session_id, error.code() == v1::CANCELLED ? "cancelled" : "failed");
  }

  // Closes the session on every shard of its route and forgets the job.
  void Close(uint64_t session_id, const std::string& reason) {
    auto it = jobs_.find(session_id);
    if (it == jobs_.end()) return;
    CloseOnShards(it->second, reason);
    job_sessions_.erase(it->second.job_id);
    jobs_.erase(it);
    ctx_->counters.sessions_open = jobs_.size();
    DispatchQueued();  // the cache it held may be what a queued job waits for
  }

  // Sends SessionClose for the job's current session to the shards of its
  // route (but `skip`, a node known to be gone).
  void CloseOnShards(const Job& job, const std::string& reason, const std::string& skip = "") {
    for (const v1::RouteHop& hop : job.route) {
      if (hop.stage() != v1::STAGE_SHARD || hop.node_id() == skip) continue;
      v1::Envelope env = NewEnvelope();
      env.mutable_session_close()->set_session_id(job.session_id);
      env.mutable_session_close()->set_reason(reason);
      Sent(sender_.ToNode(hop.node_id(), hop.endpoint(), std::move(env)));
    }
  }

  // ---------------------------------------------------------------- queue

  // A shard has no cache for the job now but will once other sessions close:
  // the job closes what this round opened and waits, oldest first, for its
  // next try (on every close and tick; replicas take turns on each try).
  void Enqueue(Job& job, const v1::Error& why) {
    const auto now = Clock::now();
    CloseOnShards(job, "queued");
    job.queued = true;
    job.waiting.clear();
    if (job.queued_since == Clock::time_point()) {
      job.queued_since = now;
      ctx_->counters.jobs_queued++;
      std::cerr << "troupe node " << ctx_->node_id << ": job " << job.job_id << " waits for cache: " << why.text()
                << std::endl;
    }
    if (now - job.noticed >= kQueueNotice) NoticeQueued(job);
  }

  void NoticeQueued(Job& job) {
    job.noticed = Clock::now();
    v1::Envelope env = NewEnvelope(job.request_id);
    v1::JobStatus* js = env.mutable_job_status();
    js->set_job_id(job.job_id);
    js->set_state(v1::JOB_QUEUED);
    js->set_session_id(job.session_id);
    Reply(job.client, std::move(env));
  }

  // Gives the oldest queued job its next try, unless a queued job is trying now.
  void DispatchQueued() {
    Job* oldest = nullptr;
    for (auto& [sid, job] : jobs_) {
      if (job.queued_since == Clock::time_point() || job.running) continue;
      if (!job.queued) return;  // one try at a time
      if (!oldest || job.queued_since < oldest->queued_since) oldest = &job;
    }
    if (oldest) Dispatch(oldest->session_id, v1::NO_ROUTE, "");
  }

  // Sends job `sid` (queued, or rerouted) down a fresh route as a new session;
  // answers from its earlier rounds then name a session that is gone. With no
  // route the job fails with `code`, its message prefixed by `why`.
  void Dispatch(uint64_t sid, v1::ErrorCode code, const std::string& why) {
    auto it = jobs_.find(sid);
    if (it == jobs_.end()) return;
    Result<std::vector<Span>> spans = registry_.Route(ctx_->source->config().n_layers, Clock::now());
    if (!spans.ok()) {
      return Fail(sid, ErrorEnvelope(code, why + spans.status().message(), ctx_->node_id, sid).error());
    }
    Job job = std::move(it->second);
    jobs_.erase(it);
    const uint64_t moved = NextSessionId();
    job.queued = false;
    job.session_id = moved;
    job.route = Ring(*spans);
    if (job.resume) send(ctx_->sampler, SessionMove{sid, moved, job.route});
    job_sessions_[job.job_id] = moved;
    Job& stored = jobs_[moved] = std::move(job);
    OpenOnShards(stored);
  }

  void Cancel(const Origin& from, uint64_t request_id, uint64_t job_id) {
    auto it = job_sessions_.find(job_id);
    if (it == job_sessions_.end()) {
      return ReplyError(from, request_id, v1::UNKNOWN_JOB, "no job " + std::to_string(job_id), job_id);
    }
    Fail(it->second, ErrorEnvelope(v1::CANCELLED, "job " + std::to_string(job_id) + " was cancelled",
                                   ctx_->node_id, it->second)
                         .error());
  }

  void OnPeerGone(const Origin& client) {
    std::vector<uint64_t> gone;
    for (const auto& [sid, job] : jobs_) {
      if (job.client.link == client.link && job.client.peer == client.peer) gone.push_back(sid);
    }
    for (uint64_t sid : gone) {
      Fail(sid, ErrorEnvelope(v1::CANCELLED, "the client went away", ctx_->node_id, sid).error());
    }
  }

  // `node` is gone (`how`: "disconnected", or silent past the heartbeat ttl).
  void OnNodeDown(const std::string& node, const std::string& how) {
    if (!registry_.Find(node) || registry_.Find(node)->fixed) return;
    registry_.Remove(node);  // back when it announces itself again
    std::vector<uint64_t> hit;
    for (const auto& [sid, job] : jobs_) {
      if (job.queued) continue;  // holds nothing; it gets a fresh route when it is its turn
      for (const v1::RouteHop& hop : job.route) {
        if (hop.node_id() == node) {
          hit.push_back(sid);
          break;
        }
      }
    }
    for (uint64_t sid : hit) Reroute(sid, node, how);
  }

  // Node `dead` on the route of session `sid` is gone: the job goes on over a
  // route without it, as a new session (fresh caches on every shard of the
  // new route; the old session is closed on the shards that survive). The
  // client sees no gap: the sampler replays the tokens so far and carries on.
  // Without another node for the dead one's layers, the job fails UNAVAILABLE.
  void Reroute(uint64_t sid, const std::string& dead, const std::string& how) {
    auto it = jobs_.find(sid);
    if (it == jobs_.end()) return;
    const std::string lost = "node '" + dead + "' on the session's route " + how;
    if (it->second.reroutes >= kMaxReroutes) {
      return Fail(sid, ErrorEnvelope(v1::UNAVAILABLE, lost + " (" + std::to_string(kMaxReroutes) +
                                                          " route changes already)", ctx_->node_id, sid)
                           .error());
    }
    Job& job = it->second;
    CloseOnShards(job, "rerouted", dead);
    job.resume = job.running || job.resume;  // the sampler holds it (under `sid`)
    job.running = false;
    job.reroutes++;
    std::cerr << "troupe node " << ctx_->node_id << ": " << lost << "; job " << job.job_id
              << " goes on over another route" << std::endl;
    Dispatch(sid, v1::UNAVAILABLE, lost + " and no other node can take its place: ");
  }

  void StatusOf(const Origin& from, uint64_t request_id, uint64_t job_id) {
    auto it = job_sessions_.find(job_id);
    if (it == job_sessions_.end()) {
      return ReplyError(from, request_id, v1::UNKNOWN_JOB, "no job " + std::to_string(job_id), job_id);
    }
    const Job& job = jobs_.at(it->second);
    v1::Envelope env = NewEnvelope(request_id);
    v1::JobStatus* js = env.mutable_job_status();
    js->set_job_id(job_id);
    js->set_state(job.running || !job.queued ? v1::JOB_RUNNING : v1::JOB_QUEUED);
    js->set_session_id(job.session_id);
    Reply(from, std::move(env));
  }

  // ------------------------------------------------------------- registry

  void Announced(const Origin& from, const v1::RegistryAnnounce& a) {
    if (a.model_fingerprint() != ctx_->fingerprint) {
      return ReplyError(from, 0, v1::WRONG_MODEL,
                        "node '" + a.node_id() + "' serves model " + a.model_fingerprint() + ", the head " +
                            ctx_->fingerprint);
    }
    std::string endpoint;
    for (const v1::Endpoint& e : a.endpoints()) {
      if (e.name() == "steps") endpoint = e.address();
    }
    if (endpoint.empty() || a.layers_size() == 0) return;
    const bool fresh = registry_.Find(a.node_id()) == nullptr;
    ShardEntry e{a.node_id(), endpoint, a.layers(0).begin(), a.layers(0).end(), false, Clock::now()};
    registry_.Upsert(std::move(e));
    if (fresh) (void)ctx_->links->ConnectTo(a.node_id(), endpoint);  // dial early: the first job does not wait
  }

  // -------------------------------------------------------------- metrics

  void QueryMetrics(const Origin& from, uint64_t request_id) {
    const uint64_t q = ++next_query_;
    MetricsQuery& query = queries_[q];
    query.client = from;
    query.request_id = request_id;
    query.deadline = Clock::now() + kMetricsTimeout;
    query.merged.set_node_id(ctx_->node_id);
    Merge(query.merged, NodeMetrics(*ctx_));
    // 1 while the registry has a route through every layer (a job would be
    // accepted now); what the HTTP front end's /health reports.
    (*query.merged.mutable_gauges())[ctx_->node_id + "/route_ready"] =
        registry_.Routable(ctx_->source->config().n_layers, Clock::now()) ? 1.0 : 0.0;
    for (const ShardEntry& e : registry_.Live(Clock::now())) {
      if (e.node_id == ctx_->node_id) continue;  // counted above
      v1::Envelope env = NewEnvelope(q);
      env.mutable_metrics_snapshot();  // empty node_id: a query
      if (sender_.ToNode(e.node_id, e.endpoint, std::move(env)).ok()) query.waiting.insert(e.node_id);
    }
    ScheduleRetry();
    if (query.waiting.empty()) AnswerMetrics(q);
  }

  // Adds `from` under "<node>/<name>" keys.
  static void Merge(v1::MetricsSnapshot& into, const v1::MetricsSnapshot& from) {
    const std::string prefix = from.node_id() + "/";
    for (const auto& [k, v] : from.counters()) (*into.mutable_counters())[prefix + k] = v;
    for (const auto& [k, v] : from.gauges()) (*into.mutable_gauges())[prefix + k] = v;
  }

  void MetricsAnswer(uint64_t q, const v1::MetricsSnapshot& snapshot) {
    auto it = queries_.find(q);
    if (it == queries_.end()) return;
    Merge(it->second.merged, snapshot);
    it->second.waiting.erase(snapshot.node_id());
    if (it->second.waiting.empty()) AnswerMetrics(q);
  }

  void AnswerMetrics(uint64_t q) {
    auto it = queries_.find(q);
    if (it == queries_.end()) return;
    v1::Envelope env = NewEnvelope(it->second.request_id);
    *env.mutable_metrics_snapshot() = std::move(it->second.merged);
    for (const std::string& missing : it->second.waiting) {
      (*env.mutable_metrics_snapshot()->mutable_gauges())[missing + "/unreachable"] = 1;
    }
    Reply(it->second.client, std::move(env));
    queries_.erase(it);
  }

  // ----------------------------------------------------------------- time

  void OnTick() {
    const auto now = Clock::now();
    const auto ttl = std::chrono::duration_cast<std::chrono::seconds>(registry_.ttl()).count();
    for (const std::string& node : registry_.Expired(now)) {
      OnNodeDown(node, "stopped answering (no heartbeat for " + std::to_string(ttl) + " s)");
    }
    std::vector<uint64_t> late;
    std::vector<uint64_t> expired;
    for (auto& [sid, job] : jobs_) {
      if (job.queued) {
        if (now - job.queued_since > kQueueTimeout) expired.push_back(sid);
        else if (now - job.noticed >= kQueueNotice) NoticeQueued(job);
      } else if (!job.running && now - job.attempt > kOpenTimeout) {
        late.push_back(sid);
      }
    }
    for (uint64_t sid : late) {
      std::string who;
      for (const std::string& n : jobs_[sid].waiting) who += (who.empty() ? "" : ", ") + n;
      Fail(sid, ErrorEnvelope(v1::TIMEOUT, "no answer to SessionOpen from " + who, ctx_->node_id, sid).error());
    }
    for (uint64_t sid : expired) {
      Fail(sid, ErrorEnvelope(v1::CACHE_FULL,
                              "waited " + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kQueueTimeout).count()) +
                                  " s for KV cache that other sessions hold",
                              ctx_->node_id, sid)
                    .error());
    }
    DispatchQueued();
    std::vector<uint64_t> due;
    for (const auto& [q, query] : queries_) {
      if (now >= query.deadline) due.push_back(q);
    }
    for (uint64_t q : due) AnswerMetrics(q);
  }

  uint64_t NextJobId() {
    while (job_sessions_.count(++next_job_)) {
    }
    return next_job_;
  }
  uint64_t NextSessionId() { return ++next_session_; }

  Registry registry_;
  std::map<uint64_t, Job> jobs_;                // by session id
  std::map<uint64_t, uint64_t> job_sessions_;   // job id -> session id
  std::map<uint64_t, MetricsQuery> queries_;
  uint64_t next_job_ = 0;
  uint64_t next_session_ = 0;
  uint64_t next_query_ = 0;
};

}  // namespace

caf::actor SpawnScheduler(caf::actor_system& system, std::shared_ptr<NodeContext> ctx) {
  return system.spawn<SchedulerActor, caf::lazy_init>(std::move(ctx));
}

}  // namespace troupe::actors
