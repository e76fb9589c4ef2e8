#include "actors/scheduler_actor.h"

#include <iostream>
#include <random>
#include <type_traits>
#include <utility>
#include <variant>

#include "actors/stage_actor.h"
#include "messages/envelope_codec.h"
#include "pipeline/model/prompt.h"
#include "scheduling/admission.h"
#include "scheduling/job_lifecycle.h"
#include "scheduling/metrics_query.h"

namespace troupe::actors {
namespace {

namespace sched = troupe::scheduling;

constexpr auto kTick = std::chrono::milliseconds(200);

sched::LifecycleConfig LifecycleConfigOf(const NodeContext& ctx) {
  sched::LifecycleConfig c;
  c.node_id = ctx.node_id;
  c.node_endpoint = ctx.node_endpoint;
  c.fingerprint = ctx.fingerprint;
  c.n_layers = ctx.source->config().n_layers;
  c.max_positions = ctx.source->config().max_positions;
  // Session ids start at a random point so that a restarted head does not
  // reuse the ids of sessions its shards may still hold.
  c.first_session_id = static_cast<uint64_t>(std::random_device{}() & 0xffffff) << 32;
  c.kept_ttl = std::chrono::milliseconds(static_cast<int64_t>(ctx.config.kept_session_ttl_seconds * 1000));
  c.kept_max_length = ctx.config.kept_session_max_length;
  c.prefix_reuse = ctx.config.prefix_reuse;
  c.max_queued = static_cast<size_t>(ctx.config.max_queued_jobs);
  return c;
}

class SchedulerActor : public StageActor {
 public:
  SchedulerActor(caf::actor_config& cfg, std::shared_ptr<NodeContext> ctx)
      : StageActor(cfg, ctx), jobs_(LifecycleConfigOf(*ctx), sched::Registry()) {}

  const char* name() const override { return "scheduler"; }

  caf::behavior make_behavior() override {
    RegisterFixedShards();
    delayed_send(this, kTick, tick_atom::value);
    return {
        [this](WireMessage& m) { OnWire(m); },
        [this](SessionDone& d) { Execute(jobs_.Done(d.session_id, std::move(d.tokens), Clock::now())); },
        [this](SessionFailed& f) { Execute(jobs_.Failed(f.session_id, f.error, Clock::now())); },
        [this](const PeerGone& g) { Execute(jobs_.ClientGone(g.client, Clock::now())); },
        [this](const NodeDown& d) { Execute(jobs_.NodeDown(d.node_id, "disconnected", Clock::now())); },
        [this](tick_atom) {
          OnTick();
          delayed_send(this, kTick, tick_atom::value);
        },
        StartHandler(),
        RetryHandler(),
    };
  }

  void on_exit() override {
    Execute(jobs_.Shutdown());  // nobody waits in vain: every job gets an answer
    StageActor::on_exit();
    queries_.Clear();
  }

 private:
  // -------------------------------------------------------------- inputs

  void RegisterFixedShards() {
    const cluster::NodeConfig& c = ctx_->config;
    sched::Registry& registry = jobs_.registry();
    if (c.shard) {
      registry.Upsert(
          sched::ShardEntry{ctx_->node_id, ctx_->node_endpoint, c.layer_begin, c.layer_end, true, Clock::now()});
    }
    for (const cluster::PeerConfig& p : c.peers) {
      if (p.shard && !p.endpoint.empty()) {
        registry.Upsert(sched::ShardEntry{p.id, p.endpoint, p.layer_begin, p.layer_end, true, Clock::now()});
      }
    }
  }

  void OnWire(WireMessage& m) {
    const v1::Envelope& env = m.envelope;
    const Origin from = m.from;
    const auto now = Clock::now();
    switch (env.body_case()) {
      case v1::Envelope::kJobSubmit: return Submit(from, env.request_id(), env.job_submit());
      case v1::Envelope::kJobCancel:
        return Execute(jobs_.Cancel(from, env.request_id(), env.job_cancel().job_id(), now));
      case v1::Envelope::kJobStatusQuery:
        return Execute(jobs_.Status(from, env.request_id(), env.job_status_query().job_id()));
      case v1::Envelope::kKeptSessionClose:
        return Execute(jobs_.CloseKept(from, env.request_id(), env.kept_session_close().name(), now));
      case v1::Envelope::kKeptSessionQuery: return Execute(jobs_.ListKept(from, env.request_id(), now));
      case v1::Envelope::kSessionOpened:
        return Execute(jobs_.Opened(env.session_opened().session_id(), env.session_opened().node_id(),
                                    env.session_opened().copied(), now));
      case v1::Envelope::kError:
        if (env.error().has_session_id()) Execute(jobs_.Failed(env.error().session_id(), env.error(), now));
        return;
      case v1::Envelope::kRegistryAnnounce: return Announced(m.from, env.registry_announce());
      case v1::Envelope::kHeartbeat: return jobs_.registry().Touch(env.heartbeat().node_id(), now);
      case v1::Envelope::kMetricsQuery: return QueryMetrics(from, env.request_id());
      case v1::Envelope::kMetricsSnapshot:
        if (auto reply = queries_.Answer(env.request_id(), env.metrics_snapshot())) Execute(std::move(*reply));
        return;
      default: return;
    }
  }

  void Submit(const Origin& client, uint64_t request_id, const v1::JobSubmit& submit) {
    const uint64_t job_id = jobs_.TakeJobId(submit.job_id());
    auto tokenize = [this](const PromptRequest& r) {
      return PromptTokens(*ctx_->tokenizer, ctx_->source->tokenizer_spec(), r);
    };
    const ModelConfig& model = ctx_->source->config();
    WireResult<sched::AdmittedJob> job =
        sched::Admit(submit, tokenize, {model.max_positions, model.vocab, ctx_->config.amateur_model});
    if (!job.ok()) {
      return Execute(sched::Reply{
          client, ErrorEnvelope(job.error().code, job.error().text, ctx_->node_id, 0, request_id, job_id)});
    }
    Execute(jobs_.Submit(job_id, client, request_id, std::move(*job), Clock::now()));
  }

  void Announced(const Origin& from, const v1::RegistryAnnounce& a) {
    if (a.model_fingerprint() != ctx_->fingerprint) {
      return Execute(sched::Reply{from, ErrorEnvelope(v1::WRONG_MODEL,
                                                      "node '" + a.node_id() + "' serves model " +
                                                          a.model_fingerprint() + ", the head " + ctx_->fingerprint,
                                                      ctx_->node_id)});
    }
    std::string endpoint;
    for (const v1::Endpoint& e : a.endpoints()) {
      if (e.name() == "steps") endpoint = e.address();
    }
    if (endpoint.empty() || a.layers_size() == 0) return;
    sched::Registry& registry = jobs_.registry();
    const bool fresh = registry.Find(a.node_id()) == nullptr;
    registry.Upsert(
        sched::ShardEntry{a.node_id(), endpoint, a.layers(0).begin(), a.layers(0).end(), false, Clock::now()});
    if (fresh) (void)ctx_->links->ConnectTo(a.node_id(), endpoint);  // dial early: the first job does not wait
  }

  void QueryMetrics(const Origin& from, uint64_t request_id) {
    const auto now = Clock::now();
    const sched::Registry& registry = jobs_.registry();
    const uint64_t q = queries_.Begin(from, request_id, NodeMetrics(*ctx_),
                                      registry.Routable(ctx_->source->config().n_layers, now), now);
    for (const sched::ShardEntry& e : registry.Live(now)) {
      if (e.node_id == ctx_->node_id) continue;  // counted above
      v1::Envelope env = NewEnvelope(q);
      env.mutable_metrics_query();
      if (sender_.ToNode(e.node_id, e.endpoint, std::move(env)).ok()) queries_.Expect(q, e.node_id);
    }
    ScheduleRetry();
    if (auto reply = queries_.Finish(q)) Execute(std::move(*reply));
  }

  void OnTick() {
    const auto now = Clock::now();
    Execute(jobs_.Tick(now));
    for (sched::Reply& reply : queries_.Tick(now)) Execute(std::move(reply));
  }

  // ------------------------------------------------------------- outputs

  // Carries out what the life cycle decided, in order. A SessionOpen or the
  // Prefill that cannot be sent fails its job (the life cycle decides what
  // follows); what is left for a session it no longer knows is skipped.
  void Execute(sched::Actions actions) {
    for (sched::Action& action : actions) {
      std::visit([this](auto& a) { Do(a); }, action);
    }
    ctx_->counters.sessions_open = jobs_.size();
    ctx_->counters.jobs_queued_total = jobs_.jobs_queued_total();
    ctx_->counters.kept_sessions = jobs_.kept().size();
    ctx_->counters.prompt_tokens_prefilled_total = jobs_.prefill_counts().prefilled;
    ctx_->counters.prompt_tokens_reused_total = jobs_.prefill_counts().reused;
  }
  void Execute(sched::Reply reply) { Do(reply); }

  void Do(sched::Reply& a) { Sent(sender_.Reply(a.client, std::move(a.envelope))); }

  void Do(sched::ToNode& a) {
    const bool open = a.envelope.has_session_open();
    if (open && !jobs_.Has(a.session_id)) return;  // its job failed earlier in this list
    Status st = sender_.ToNode(a.node_id, a.endpoint, std::move(a.envelope));
    if (!open) return Sent(st);
    ScheduleRetry();
    if (!st.ok()) {
      Execute(jobs_.SendFailed(a.session_id, v1::UNAVAILABLE,
                               "cannot reach shard '" + a.node_id + "': " + st.ToString(), Clock::now()));
    }
  }

  void Do(sched::SessionStart& a) { send(ctx_->sampler, std::move(a)); }

  void Do(sched::SessionMove& a) { send(ctx_->sampler, std::move(a)); }
  void Do(sched::SessionResume& a) { send(ctx_->sampler, a); }
  void Do(sched::SessionDrop& a) { send(ctx_->sampler, a); }

  void Do(sched::Prefill& a) {
    if (!jobs_.Has(a.session_id)) return;
    Status st = sender_.ForwardStep(std::move(a.step), at::Tensor());
    if (!st.ok()) {
      Execute(jobs_.SendFailed(a.session_id, v1::INTERNAL, "cannot start the prefill: " + st.ToString(), Clock::now()));
    }
  }

  void Do(sched::Log& a) { std::cerr << "troupe node " << ctx_->node_id << ": " << a.text << std::endl; }

  sched::JobLifecycle jobs_;
  sched::MetricsQueries queries_;
};

}  // namespace

caf::actor SpawnScheduler(caf::actor_system& system, std::shared_ptr<NodeContext> ctx) {
  return system.spawn<SchedulerActor, caf::lazy_init>(std::move(ctx));
}

}  // namespace troupe::actors
