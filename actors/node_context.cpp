#include "actors/node_context.h"
#include "pipeline/log.h"

#include <unistd.h>

#include <fstream>
#include <iostream>

#include <caf/send.hpp>

#include <chrono>

#include "actors/hop_timing.h"
#include "actors/local_messages.h"
#include "messages/envelope_codec.h"
#include "pipeline/quant/thread_pool.h"
#include "scheduling/console_views.h"

namespace troupe::actors {

const char* const kTroupeVersion = TROUPE_VERSION;

uint64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

v1::Envelope NodeAnnounce(const NodeContext& ctx) {
  v1::Envelope env = NewEnvelope();
  v1::RegistryAnnounce* a = env.mutable_registry_announce();
  a->set_node_id(ctx.node_id);
  v1::Endpoint* ep = a->add_endpoints();
  ep->set_name("steps");
  ep->set_address(ctx.node_endpoint);
  a->set_model_fingerprint(ctx.fingerprint);
  a->set_model_name(ctx.model_name);
  a->set_public_key(ctx.public_key);
  a->set_draining(ctx.draining);
  a->set_incarnation(ctx.incarnation);
  return env;
}

caf::actor NodeContext::StageActor(v1::Stage stage) const {
  switch (stage) {
    case v1::STAGE_EMBEDDING: return embedding_stage;
    case v1::STAGE_SHARD: return shard;
    case v1::STAGE_LM_HEAD: return lm_head_stage;
    case v1::STAGE_SAMPLER: return sampler;
    case v1::STAGE_SCHEDULER: return scheduler;
    default: return caf::actor();
  }
}

void NodeContext::ClearActors() {
  scheduler = embedding_stage = shard = lm_head_stage = sampler = caf::actor();
  inline_shard.reset();
  inline_embedding.reset();
}

v1::MetricsSnapshot NodeMetrics(const NodeContext& ctx) {
  v1::MetricsSnapshot m;
  m.set_node_id(ctx.node_id);
  const NodeCounters& c = ctx.counters;
  auto& g = *m.mutable_gauges();
  g["cache_bytes_in_use"] = static_cast<double>(c.cache_bytes_in_use.load());
  g["cache_bytes_parked"] = static_cast<double>(c.cache_bytes_parked.load());
  g["cache_budget_bytes"] = ctx.config.shard ? static_cast<double>(ctx.config.cache_budget_bytes) : 0.0;
  g["sessions_open"] = static_cast<double>(c.sessions_open.load());
  if (ctx.config.shard || ctx.config.StageNode()) g["draining"] = ctx.draining ? 1.0 : 0.0;
  g["kept_sessions"] = static_cast<double>(c.kept_sessions.load());
  g["burst_wait_ms"] = ctx.config.burst_wait_ms;  // a setting, shown so operators see what each node waits
  if (ctx.config.head) {
    g["jobs_live"] = static_cast<double>(c.jobs_live.load());
    g["queue_depth"] = static_cast<double>(c.queue_depth.load());
    g["nodes_quarantined"] = static_cast<double>(c.nodes_quarantined.load());
  }
  auto& n = *m.mutable_counters();
  n["steps_total"] = c.steps_total.load();
  n["inline_steps_total"] = c.inline_steps_total.load();
  n["step_bursts_sent_total"] = c.step_bursts_sent_total.load();
  n["batches_total"] = c.batches_total.load();
  n["batch_rows_total"] = c.batch_rows_total.load();
  n["max_batch_sessions"] = c.max_batch_sessions.load();
  n["sessions_opened_total"] = c.sessions_opened_total.load();
  n["sessions_closed_total"] = c.sessions_closed_total.load();
  n["cache_full_total"] = c.cache_full_total.load();
  n["sessions_resumed_total"] = c.sessions_resumed_total.load();
  n["jobs_queued_total"] = c.jobs_queued_total.load();
  n["prompt_tokens_prefilled_total"] = c.prompt_tokens_prefilled_total.load();
  n["prompt_tokens_reused_total"] = c.prompt_tokens_reused_total.load();
  n["sessions_evicted_total"] = c.sessions_evicted_total.load();
  n["prefix_positions_copied_total"] = c.prefix_positions_copied_total.load();
  n["send_errors_total"] = c.send_errors_total.load();
  n["beam_reorders_total"] = c.beam_reorders_total.load();
  if (ctx.config.head) {
    n["jobs_accepted_total"] = c.jobs_accepted_total.load();
    n["tokens_generated_total"] = c.tokens_generated_total.load();
    n["reroutes_total"] = c.reroutes_total.load();
    n["drains_total"] = c.drains_total.load();
    n["spot_checks_total"] = c.spot_checks_total.load();
    n["spot_check_mismatches_total"] = c.spot_check_mismatches_total.load();
    n["spot_check_positions_total"] = c.spot_check_positions_total.load();
    n["jobs_recovered_total"] = c.jobs_recovered_total.load();
    n["jobs_repeated_total"] = c.jobs_repeated_total.load();
    n["jobs_attached_total"] = c.jobs_attached_total.load();
    n["journal_errors_total"] = c.journal_errors_total.load();
  }
  n["compute_microseconds_total"] = c.compute_ns.load() / 1000;
  for (const auto& [to, bytes] : ctx.step_bytes.Snapshot()) n["step_bytes_sent_total{to=\"" + to + "\"}"] = bytes;
  for (size_t stage = 0; stage < ctx.stages.size(); ++stage) {
    const std::string label = "{stage=\"" + scheduling::StageName(static_cast<int>(stage)) + "\"}";
    auto put = [&](const char* name, const Histogram& h) {
      const Histogram::Snapshot s = h.Read();
      if (s.count == 0) return;
      v1::Histogram& out = (*m.mutable_histograms())[name + label];
      for (double b : s.bounds) out.add_bounds(b);
      for (uint64_t c : s.counts) out.add_counts(c);
      out.set_sum(s.sum);
      out.set_count(s.count);
    };
    put("step_queue_ms", ctx.stages[stage].queue_ms);
    put("step_compute_ms", ctx.stages[stage].compute_ms);
    put("batch_sessions", ctx.stages[stage].batch_sessions);
  }
  ctx.rejects.AppendTo(&m);
  ctx.refusals.AppendTo(&m, ctx.links);
  return m;
}

namespace {

v1::Envelope Refuse(const NodeContext& ctx, v1::ErrorCode code, const std::string& text, const v1::Envelope& request,
                    uint64_t session_id = 0) {
  return ErrorEnvelope(code, text, ctx.node_id, session_id, request.request_id());
}

// Sends `message` to `target` with no sender, as caf::anon_send does, but
// scheduled on `here` (the worker running the caller's handler) when given.
template <typename T>
void Enqueue(const caf::actor& target, caf::execution_unit* here, T&& message) {
  if (here == nullptr) return caf::anon_send(target, std::forward<T>(message));
  caf::actor_cast<caf::abstract_actor*>(target)->eq_impl(caf::make_message_id(), nullptr, here,
                                                         std::forward<T>(message));
}

}  // namespace

std::optional<v1::Envelope> DeliverLocal(const NodeContext& ctx, const Origin& from, Received m, bool job_link,
                                         bool on_loop, caf::execution_unit* here) {
  v1::Envelope& env = m.envelope;
  const auto body = env.body_case();
  if (job_link) {
    const bool job_body = body == v1::Envelope::kJobSubmit || body == v1::Envelope::kJobCancel ||
                          body == v1::Envelope::kNodeDrain || body == v1::Envelope::kJobStatusQuery ||
                          body == v1::Envelope::kJobAttach || body == v1::Envelope::kMetricsQuery ||
                          body == v1::Envelope::kConsoleQuery || body == v1::Envelope::kKeptSessionClose ||
                          body == v1::Envelope::kKeptSessionQuery;
    if (!job_body || !ctx.scheduler) {
      return Refuse(
          ctx, v1::BAD_REQUEST,
          std::string("the job endpoint takes job_submit, job_cancel, job_status_query, job_attach, "
                      "kept_session_close, kept_session_query, node_drain, metrics and console queries, not ") +
              BodyName(env),
          env);
    }
    Enqueue(ctx.scheduler, here, WireMessage{from, std::move(env)});
    return std::nullopt;
  }
  if (body == v1::Envelope::kPing) {  // answered here, on the I/O thread: the round trip is the link's
    v1::Envelope pong = NewEnvelope(env.request_id());
    pong.mutable_pong()->set_sent_micros(env.ping().sent_micros());
    pong.mutable_pong()->set_node_id(ctx.node_id);
    if (ctx.links) {
      for (const transport::LinkTrouble& t : ctx.links->Troubles()) {
        v1::LinkTrouble* out = pong.mutable_pong()->add_link_troubles();
        out->set_node_id(t.node_id);
        out->set_endpoint(t.endpoint);
        out->set_text(t.text);
      }
    }
    return pong;
  }
  if (!ctx.shard && !ctx.config.head) {  // a stage node: no shard actor to ask
    if (body == v1::Envelope::kMetricsQuery) {
      v1::Envelope reply = NewEnvelope(env.request_id());
      *reply.mutable_metrics_snapshot() = NodeMetrics(ctx);
      return reply;
    }
    if (body == v1::Envelope::kNodeDrain) {
      if (!ctx.draining.exchange(true)) {
        logging::Info(logging::Cat("draining (the head asked)"));
      }
      return std::nullopt;
    }
  }
  caf::actor target;
  std::string what;
  switch (body) {
    case v1::Envelope::kStep: {
      const v1::Stage stage = env.step().hop().stage();
      target = ctx.StageActor(stage);
      if (!target || stage == v1::STAGE_SCHEDULER) {
        return Refuse(ctx, v1::UNAVAILABLE, "node '" + ctx.node_id + "' does not run stage " + v1::Stage_Name(stage),
                      env, env.step().session_id());
      }
      StepMessage step{from, env.request_id(), std::move(*env.mutable_step()), std::move(m.tensor), SteadyNs()};
      if (on_loop && stage == v1::STAGE_SHARD && ctx.inline_shard && ctx.inline_shard->TryRun(step)) {
        return std::nullopt;  // computed and sent on, right here
      }
      if (here != nullptr && stage == v1::STAGE_EMBEDDING && ctx.inline_embedding &&
          ctx.inline_embedding->TryRun(step)) {
        return std::nullopt;  // embedded and sent on by the calling actor's thread
      }
      Enqueue(target, here, std::move(step));
      // The stage computes on the pool's threads as soon as its actor runs:
      // wake them now, in parallel with the actor's worker.
      if (stage == v1::STAGE_SHARD || stage == v1::STAGE_LM_HEAD) ThreadPool::Global().Prewake();
      return std::nullopt;
    }
    case v1::Envelope::kSessionOpen:
    case v1::Envelope::kSessionClose:
    case v1::Envelope::kMetricsQuery:  // from the head: this node's metrics
    case v1::Envelope::kNodeDrain:     // from the head: leave once the sessions are gone
      target = ctx.shard;
      what = "shard";
      break;
    case v1::Envelope::kSessionOpened:
    case v1::Envelope::kMetricsSnapshot:  // a shard's answer to the head's query
    case v1::Envelope::kError:
    case v1::Envelope::kRegistryAnnounce:
    case v1::Envelope::kCoverageQuery:
    case v1::Envelope::kPong:
    case v1::Envelope::kHeartbeat:
    case v1::Envelope::kJobSubmit:
    case v1::Envelope::kJobCancel:
    case v1::Envelope::kJobStatusQuery:
    case v1::Envelope::kJobAttach:
    case v1::Envelope::kKeptSessionClose:
    case v1::Envelope::kKeptSessionQuery:
      target = ctx.scheduler;
      what = "scheduler";
      break;
    default:
      return Refuse(ctx, v1::UNKNOWN_TYPE, std::string("nodes do not accept ") + BodyName(env) + " messages", env);
  }
  if (!target) {
    // Never answer an error with an error: two nodes could bounce them forever.
    if (body == v1::Envelope::kError) return std::nullopt;
    return Refuse(ctx, v1::UNAVAILABLE, "node '" + ctx.node_id + "' runs no " + what + " for " + BodyName(env), env);
  }
  Enqueue(target, here, WireMessage{from, std::move(env)});
  return std::nullopt;
}

}  // namespace troupe::actors
