#include "actors/scheduler_actor.h"

#include <deque>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <type_traits>
#include <utility>
#include <variant>

#include "actors/stage_actor.h"
#include "messages/envelope_codec.h"
#include "pipeline/log.h"
#include "pipeline/text/prompt.h"
#include "scheduling/admission.h"
#include "scheduling/console_desk.h"
#include "scheduling/job_lifecycle.h"
#include "scheduling/metrics_query.h"
#include "scheduling/spot_checks.h"
#include "scheduling/startup_hold.h"

namespace troupe::actors {
namespace {

namespace sched = troupe::scheduling;

constexpr auto kTick = std::chrono::milliseconds(200);
// How often ended jobs past the retention window are dropped.
constexpr auto kExpireEvery = std::chrono::seconds(10);
constexpr auto kPingEvery = std::chrono::seconds(2);
// How long jobs recovered after a restart wait for a route before they run anyway.
constexpr auto kRecoveryWait = std::chrono::seconds(30);
// How long new jobs wait for a restarted head's first route (sched::StartupHold).
constexpr auto kStartupWait = std::chrono::seconds(5);
const Origin kBook{kJobBookLink, ""};

double UnixNow() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

uint64_t RandomSeed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) | rd();
}

sched::LifecycleConfig LifecycleConfigOf(const NodeContext& ctx) {
  sched::LifecycleConfig c;
  c.node_id = ctx.node_id;
  c.node_endpoint = ctx.node_endpoint;
  c.fingerprint = ctx.fingerprint;
  c.int8_link_rtt_ms = ctx.config.int8_link_rtt_ms;
  c.local_embedding = ctx.config.head_embedding;
  c.local_lm_head = ctx.config.head_lm_head;
  c.n_layers = ctx.source->config().n_layers;
  c.max_positions = ctx.source->config().max_positions;
  // Session ids start at a random point so that a restarted head does not
  // reuse the ids of sessions its shards may still hold; their high 32 bits
  // name this incarnation of the head (shards close the sessions of an older
  // one when a newer one opens: actors/shard_actor.h).
  c.first_session_id = static_cast<uint64_t>(std::random_device{}() & 0xffffff) << 32;
  c.kept_ttl = std::chrono::milliseconds(static_cast<int64_t>(ctx.config.kept_session_ttl_seconds * 1000));
  c.kept_max_length = ctx.config.kept_session_max_length;
  c.prefix_reuse = ctx.config.prefix_reuse;
  c.max_queued = static_cast<size_t>(ctx.config.max_queued_jobs);
  return c;
}

class SchedulerActor : public StageActor {
 public:
  SchedulerActor(caf::actor_config& cfg, std::shared_ptr<NodeContext> ctx, std::unique_ptr<sched::JobBook> book,
                 std::vector<sched::JournaledJob> recovered)
      : StageActor(cfg, ctx),
        jobs_(LifecycleConfigOf(*ctx), sched::Registry()),
        book_(std::move(book)),
        recovered_(std::make_move_iterator(recovered.begin()), std::make_move_iterator(recovered.end())),
        hold_(Clock::now(), kStartupWait),
        spot_(ctx->config.spot_check_fraction, RandomSeed()),
        started_(Clock::now()),
        expired_(Clock::now()) {}

  const char* name() const override { return "scheduler"; }

  caf::behavior make_behavior() override {
    RegisterFixedShards();
    delayed_send(this, kTick, tick_atom::value);
    return {
        [this](WireMessage& m) { OnWire(m); },
        [this](SessionDone& d) { Execute(jobs_.Done(d.session_id, std::move(d.tokens), Clock::now())); },
        [this](SessionFailed& f) {
          if (spot_.Has(f.session_id)) return Execute(spot_.Failed(f.session_id, f.error.text()));
          Execute(jobs_.Failed(f.session_id, f.error, Clock::now()));
        },
        [this](const ShadowEnd& e) { ShadowEnded(e); },
        [this](JobOutput& o) {
          LogJobEnd(o.envelope);
          Execute(book_->Output(std::move(o.envelope), UnixNow()));
        },
        [this](const PeerGone& g) { book_->Gone(g.client); },
        [this](const NodeDown& d) { Execute(jobs_.NodeDown(d.node_id, "disconnected", Clock::now())); },
        [this](const NodeTrouble& t) { Troubled(t); },
        [this](closing_atom) {
          jobs_.BeginClosing();
          Execute(sched::Actions{});  // the counters the node's main thread waits on
          Say("closing: no new job; " + std::to_string(jobs_.Active()) + " running job(s) finish, " +
              std::to_string(jobs_.queued() + recovered_.size()) +
              " queued job(s) stay in the journal for the next start");
        },
        [this](tick_atom) {
          OnTick();
          delayed_send(this, kTick, tick_atom::value);
        },
        StartHandler(),
        RetryHandler(),
    };
  }

  void on_exit() override {
    // Nobody waits in vain: every watcher gets an answer. The jobs stay
    // unfinished in the journal (what the life cycle says of them now is
    // not their end).
    Execute(book_->Close());
    Execute(jobs_.Shutdown());
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
      case v1::Envelope::kJobCancel: return Cancel(from, env.request_id(), env.job_cancel().job_id());
      case v1::Envelope::kNodeDrain: return DrainAsked(from, env.request_id(), env.node_drain());
      case v1::Envelope::kJobStatusQuery: return StatusQuery(from, env.request_id(), env.job_status_query().job_id());
      case v1::Envelope::kJobAttach: return Attach(from, env.request_id(), env.job_attach());
      case v1::Envelope::kKeptSessionClose:
        return Execute(jobs_.CloseKept(from, env.request_id(), env.kept_session_close().name(), now));
      case v1::Envelope::kKeptSessionQuery: return Execute(jobs_.ListKept(from, env.request_id(), now));
      case v1::Envelope::kSessionOpened:
        if (spot_.Has(env.session_opened().session_id())) {
          return Execute(spot_.Opened(env.session_opened().session_id(), env.session_opened().node_id()));
        }
        return Execute(jobs_.Opened(env.session_opened().session_id(), env.session_opened().node_id(),
                                    env.session_opened().copied(), now));
      case v1::Envelope::kError:
        if (!env.error().has_session_id()) return;
        if (spot_.Has(env.error().session_id())) {
          return Execute(spot_.Failed(env.error().session_id(), "'" + env.error().node_id() + "' answered " +
                                                                    v1::ErrorCode_Name(env.error().code()) + ": " +
                                                                    env.error().text()));
        }
        Execute(jobs_.Failed(env.error().session_id(), env.error(), now));
        return;
      case v1::Envelope::kRegistryAnnounce: return Announced(m.from, env.registry_announce());
      case v1::Envelope::kCoverageQuery: return CoverageAsked(m.from, env.request_id(), env.coverage_query());
      case v1::Envelope::kHeartbeat: {
        const v1::Heartbeat& hb = env.heartbeat();
        jobs_.registry().Touch(hb.node_id(), now);
        Heard(hb.node_id());
        Unreachable(hb.node_id(), hb.link_troubles());
        jobs_.registry().Report(hb.node_id(), hb.step_ms() > 0 ? hb.step_ms() : -1, hb.sessions());
        jobs_.registry().ReportDetails(hb.node_id(),
                                       sched::NodeDetails{hb.rss_bytes(), hb.version(), hb.device(), hb.cache_bytes(),
                                                          hb.cache_budget_bytes(), hb.steps_total()},
                                       now);
        if (hb.draining()) Draining(hb.node_id());
        return;
      }
      case v1::Envelope::kPong: {
        Unreachable(env.pong().node_id(), env.pong().link_troubles());
        const auto sent = std::chrono::microseconds(env.pong().sent_micros());
        const auto rtt = now.time_since_epoch() - sent;
        return jobs_.registry().RecordRoundTrip(env.pong().node_id(),
                                                std::chrono::duration<double, std::milli>(rtt).count());
      }
      case v1::Envelope::kMetricsQuery: return QueryMetrics(from, env.request_id());
      case v1::Envelope::kConsoleQuery: return ConsoleAsked(from, env.request_id(), env.console_query());
      case v1::Envelope::kMetricsSnapshot:
        if (auto reply = queries_.Answer(env.request_id(), env.metrics_snapshot())) Execute(std::move(*reply));
        return;
      default: return;
    }
  }

  // A JobSubmit: a job id the book knows is answered as an attach (the same
  // job) or refused (another job); a new job is admitted, checked for room
  // and a route, journaled (accepted: the book acknowledges it as the life
  // cycle's JobStatus reaches it) and run. Refusals before the journal leave
  // no trace: the client may retry with the same id.
  void Submit(const Origin& client, uint64_t request_id, const v1::JobSubmit& submit) {
    if (const auto now = Clock::now(); !jobs_.closing() && hold_.Holding(now, jobs_.CanRoute(now))) {
      return hold_.Hold(sched::HeldSubmit{client, request_id, submit});
    }
    const auto refuse = [&](v1::ErrorCode code, const std::string& text, uint64_t job_id) {
      Execute(sched::Reply{client, ErrorEnvelope(code, text, ctx_->node_id, 0, request_id, job_id)});
    };
    if (submit.job_id() != 0 && book_->Knows(submit.job_id())) {
      const uint64_t id = submit.job_id();
      if (!book_->SameJob(id, submit)) {
        return refuse(v1::BAD_REQUEST,
                      "job id " + std::to_string(id) + " names another job (a different submit); pick a fresh id", id);
      }
      ctx_->counters.jobs_repeated_total++;
      return Execute(book_->Attach(id, sched::Watcher{client, request_id, submit.stream(), 0}, Live(id)));
    }
    const uint64_t job_id = submit.job_id() != 0 ? submit.job_id() : book_->NewId();
    v1::JobSubmit accepted = submit;
    accepted.set_job_id(job_id);
    const uint64_t seed = submit.sampling().has_seed() ? submit.sampling().seed() : RandomSeed();
    WireResult<sched::AdmittedJob> job = AdmitWithSeed(accepted, seed);
    if (!job.ok()) return refuse(job.error().code, job.error().text, job_id);
    if (std::optional<v1::Error> no = jobs_.Refusal(Clock::now())) {
      v1::Envelope env = NewEnvelope(request_id);
      *env.mutable_error() = std::move(*no);
      env.mutable_error()->set_job_id(job_id);
      return Execute(sched::Reply{client, std::move(env)});
    }
    if (Status st =
            book_->Accept(job_id, accepted, seed, sched::Watcher{client, request_id, submit.stream(), 0}, UnixNow());
        !st.ok()) {
      ctx_->counters.journal_errors_total++;
      return refuse(v1::UNAVAILABLE, "the head cannot journal the job, so it is not accepted: " + st.message(), job_id);
    }
    ctx_->counters.jobs_accepted_total++;
    Run(job_id, request_id, std::move(*job));
  }

  // `submit` admitted to run with `seed` (the journaled one).
  WireResult<sched::AdmittedJob> AdmitWithSeed(v1::JobSubmit submit, uint64_t seed) {
    submit.mutable_sampling()->set_seed(seed);
    auto tokenize = [this](const PromptRequest& r) {
      return PromptTokens(*ctx_->tokenizer, ctx_->source->tokenizer_spec(), r);
    };
    const ModelConfig& model = ctx_->source->config();
    return sched::Admit(submit, tokenize, {model.max_positions, model.vocab, ctx_->config.amateur_model});
  }

  // An accepted job to the life cycle, the book as its client. The sampler
  // always streams: the book keeps every token for attach and replay.
  void Run(uint64_t job_id, uint64_t request_id, sched::AdmittedJob job) {
    job.stream = true;
    Execute(jobs_.Submit(job_id, kBook, request_id, std::move(job), Clock::now()));
  }

  // New jobs held by hold_, once the head has a route (or kStartupWait passed).
  void SubmitHeld(Clock::time_point now) {
    for (sched::HeldSubmit& h : hold_.Release(now, jobs_.CanRoute(now))) Submit(h.client, h.request_id, h.submit);
  }

  // Jobs the journal gave back after a restart run once a route exists (or
  // after kRecoveryWait: then they fail NO_ROUTE like any job), in the order
  // they were accepted.
  void RunRecovered(Clock::time_point now) {
    if (recovered_.empty() || jobs_.closing()) return;
    if (!jobs_.CanRoute(now) && now - started_ < kRecoveryWait) return;
    while (!recovered_.empty()) {
      sched::JournaledJob j = std::move(recovered_.front());
      recovered_.pop_front();
      ctx_->counters.jobs_recovered_total++;
      WireResult<sched::AdmittedJob> job = AdmitWithSeed(j.submit, j.seed);
      if (!job.ok()) {
        Execute(
            book_->Output(ErrorEnvelope(job.error().code, job.error().text, ctx_->node_id, 0, 0, j.job_id), UnixNow()));
        continue;
      }
      Say("job " + std::to_string(j.job_id) + " runs again (accepted before the head restarted)");
      Run(j.job_id, 0, std::move(*job));
    }
  }

  // The life cycle's view of a live job, or its place among the recovered ones.
  std::optional<sched::LiveState> Live(uint64_t job_id) const {
    if (auto live = jobs_.Live(job_id)) return live;
    for (size_t i = 0; i < recovered_.size(); ++i) {
      if (recovered_[i].job_id == job_id) return sched::LiveState{v1::JOB_QUEUED, static_cast<uint32_t>(i), 0};
    }
    return std::nullopt;
  }

  v1::Envelope UnknownJob(uint64_t request_id, uint64_t job_id) const {
    return ErrorEnvelope(v1::UNKNOWN_JOB,
                         "no job " + std::to_string(job_id) + " (never accepted, or ended more than " +
                             std::to_string(static_cast<int64_t>(ctx_->config.job_retention_seconds)) + " s ago)",
                         ctx_->node_id, 0, request_id, job_id);
  }

  void Attach(const Origin& from, uint64_t request_id, const v1::JobAttach& a) {
    if (!book_->Knows(a.job_id())) return Execute(sched::Reply{from, UnknownJob(request_id, a.job_id())});
    ctx_->counters.jobs_attached_total++;
    Execute(book_->Attach(a.job_id(), sched::Watcher{from, request_id, a.stream(), a.from_index()}, Live(a.job_id())));
  }

  void StatusQuery(const Origin& from, uint64_t request_id, uint64_t job_id) {
    if (!book_->Knows(job_id)) return Execute(sched::Reply{from, UnknownJob(request_id, job_id)});
    Execute(sched::Reply{from, book_->StatusOf(job_id, request_id, Live(job_id))});
  }

  // Cancels a live job (its watchers get CANCELLED); `from` gets the job's
  // JobStatus afterwards (JOB_ABORTED, or how it ended before).
  void Cancel(const Origin& from, uint64_t request_id, uint64_t job_id) {
    if (!book_->Knows(job_id)) return Execute(sched::Reply{from, UnknownJob(request_id, job_id)});
    if (!book_->Ended(job_id)) {
      const std::string text = "job " + std::to_string(job_id) + " was cancelled";
      if (jobs_.Live(job_id)) {
        Execute(jobs_.Cancel(from, request_id, job_id, Clock::now()));
      } else {  // recovered, not yet running
        for (auto it = recovered_.begin(); it != recovered_.end(); ++it) {
          if (it->job_id == job_id) {
            recovered_.erase(it);
            break;
          }
        }
        Execute(book_->Output(ErrorEnvelope(v1::CANCELLED, text, ctx_->node_id, 0, 0, job_id), UnixNow()));
      }
    }
    Execute(sched::Reply{from, book_->StatusOf(job_id, request_id, Live(job_id))});
  }

  // Refuses a node whose model is not the head's (WRONG_MODEL, naming both,
  // logged here too); nullopt when it is the same.
  std::optional<std::string> ModelMismatch(const std::string& node_id, const std::string& fingerprint,
                                           const std::string& model_name) const {
    if (fingerprint == ctx_->fingerprint) return std::nullopt;
    return "node '" + node_id + "' serves model " + (model_name.empty() ? std::string("?") : model_name) + " (" +
           fingerprint + "), the head " + ctx_->model_name + " (" + ctx_->fingerprint + ")";
  }

  void RefuseNode(const Origin& from, uint64_t request_id, const std::string& node_id, const std::string& reason,
                  const std::string& text) {
    ctx_->refusals.Announce(node_id, reason);
    // Announces repeat every second: say it once per node and reason.
    if (refused_said_[node_id] != text) {
      refused_said_[node_id] = text;
      Say("refused " + text);
    }
    Execute(sched::Reply{from, ErrorEnvelope(v1::WRONG_MODEL, text, ctx_->node_id, 0, request_id)});
  }

  void Announced(const Origin& from, const v1::RegistryAnnounce& a) {
    if (auto mismatch = ModelMismatch(a.node_id(), a.model_fingerprint(), a.model_name())) {
      return RefuseNode(from, 0, a.node_id(), "other model", *mismatch);
    }
    std::string endpoint;
    for (const v1::Endpoint& e : a.endpoints()) {
      if (e.name() == "steps") endpoint = e.address();
    }
    if (endpoint.empty()) return;
    if (a.layers_size() == 0 && a.serves_size() > 0) return StageAnnounced(from, a, endpoint);
    if (a.layers_size() == 0) return;
    const int64_t begin = a.layers(0).begin(), end = a.layers(0).end();
    if (end > ctx_->source->config().n_layers || begin >= end) {
      return RefuseNode(from, 0, a.node_id(), "layers",
                        "node '" + a.node_id() + "' announces layers " + std::to_string(begin) + "-" +
                            std::to_string(end) + " of a model with " +
                            std::to_string(ctx_->source->config().n_layers));
    }
    const std::string expected = ctx_->digests ? ctx_->digests->Span(begin, end) : "";
    if (!expected.empty() && a.layers_digest() != expected) {
      return RefuseNode(from, 0, a.node_id(), "other weights",
                        "node '" + a.node_id() + "' serves model " + a.model_name() + " with other weights in layers " +
                            std::to_string(begin) + "-" + std::to_string(end) + " (digest " +
                            (a.layers_digest().empty() ? std::string("none") : a.layers_digest()) + ", the head's " +
                            ctx_->model_name + " " + expected + ")");
    }
    if (!AcceptKey(from, a)) return;
    sched::Registry& registry = jobs_.registry();
    const sched::ShardEntry* known = registry.Find(a.node_id());
    sched::ShardEntry entry{a.node_id(), endpoint, begin, end, false, Clock::now()};
    entry.public_key = a.public_key();
    entry.incarnation = a.incarnation();
    const bool restarted = registry.Restarted(entry);
    const bool fresh = known == nullptr || restarted;
    const std::string before = known ? std::to_string(known->layer_begin) + "-" + std::to_string(known->layer_end) : "";
    registry.Upsert(std::move(entry));
    if (const std::string why = spot_.Why(a.node_id()); !why.empty()) {
      registry.SetQuarantined(a.node_id(), why);  // it left (or went silent) and came back: still quarantined
    }
    if (auto t = troubles_.find(a.node_id()); t != troubles_.end() && !t->second.empty()) {
      registry.SetTrouble(a.node_id(), t->second.begin()->second);  // it left and came back: still troubled
    }
    if (fresh) {
      Say("shard '" + a.node_id() + "' " + (restarted ? "joined again" : "joined") + ": layers " +
          std::to_string(begin) + "-" + std::to_string(end) + " at " + endpoint +
          (restarted ? " (was " + before + ")" : ""));
      (void)ctx_->links->ConnectTo(a.node_id(), endpoint);  // dial early: the first job does not wait
    }
    if (a.draining()) Draining(a.node_id());
  }

  // The announcing node's key, in curve mode: its connection passed the
  // allowlist, but a key it names outside the allowlist is not one to dial
  // (refused, false). Otherwise the key is learned for dialling it back, and
  // what was refused of it before is forgotten.
  bool AcceptKey(const Origin& from, const v1::RegistryAnnounce& a) {
    if (ctx_->links->curve() && !a.public_key().empty()) {
      if (!ctx_->links->Allows(a.public_key())) {
        RefuseNode(from, 0, a.node_id(), "key",
                   "node '" + a.node_id() + "' announces public key " + a.public_key() +
                       ", which is not in this head's allowlist");
        return false;
      }
      ctx_->links->LearnKey(a.node_id(), a.public_key());
    }
    refused_said_.erase(a.node_id());
    Heard(a.node_id());
    return true;
  }

  // A stage node (embedding, LM head) announced itself: same model, a key
  // this head allows; then the registry routes over it.
  void StageAnnounced(const Origin& from, const v1::RegistryAnnounce& a, const std::string& endpoint) {
    if (!AcceptKey(from, a)) return;
    sched::Registry& registry = jobs_.registry();
    const bool fresh = registry.Find(a.node_id()) == nullptr;
    sched::ShardEntry entry{a.node_id(), endpoint, 0, 0, false, Clock::now()};
    entry.public_key = a.public_key();
    entry.incarnation = a.incarnation();
    std::string serves;
    for (int s : a.serves()) {
      if (s != v1::STAGE_EMBEDDING && s != v1::STAGE_LM_HEAD) continue;
      entry.stages.push_back(s);
      serves += std::string(serves.empty() ? "" : ", ") + (s == v1::STAGE_EMBEDDING ? "embedding" : "LM head");
    }
    if (entry.stages.empty()) return;
    registry.Upsert(std::move(entry));
    if (fresh) {
      Say("stage node '" + a.node_id() + "' joined: " + serves + " at " + endpoint);
      (void)ctx_->links->ConnectTo(a.node_id(), endpoint);
    }
    if (a.draining()) Draining(a.node_id());
  }

  // ------------------------------------------------------------ drain

  // A client asks to drain a shard node: the life cycle moves what it can
  // (Drain), the node is told to leave once its sessions are gone, and the
  // client hears what happened.
  void DrainAsked(const Origin& from, uint64_t request_id, const v1::NodeDrain& d) {
    const sched::ShardEntry* e = jobs_.registry().Find(d.node_id());
    if (d.node_id() == ctx_->node_id || !e) {
      std::string known;
      for (const sched::ShardEntry& n : jobs_.registry().Live(Clock::now())) {
        if (n.node_id != ctx_->node_id) known += (known.empty() ? "" : ", ") + n.node_id;
      }
      const std::string text = d.node_id() == ctx_->node_id
                                   ? "the head is not drained: stop it (its journal brings its jobs back)"
                                   : "no shard node '" + d.node_id() + "' (known: " + known + ")";
      return Execute(sched::Reply{from, ErrorEnvelope(v1::BAD_REQUEST, text, ctx_->node_id, 0, request_id)});
    }
    const std::string endpoint = e->endpoint;
    sched::DrainCounts counts;
    sched::Actions actions = jobs_.Drain(d.node_id(), Clock::now(), &counts);
    const std::string text = sched::DrainText(d.node_id(), counts);
    Execute(std::move(actions));
    v1::Envelope tell = NewEnvelope();
    *tell.mutable_node_drain() = d;
    (void)sender_.ToNode(d.node_id(), endpoint, std::move(tell));  // its heartbeats say when it has it
    v1::Envelope reply = NewEnvelope(request_id);
    v1::NodeDrainStatus* s = reply.mutable_node_drain_status();
    s->set_node_id(d.node_id());
    s->set_moved(counts.moved);
    s->set_staying(counts.staying);
    s->set_text(text);
    Execute(sched::Reply{from, std::move(reply)});
  }

  // A node says it is draining (its own SIGTERM, or our NodeDrain reached it).
  void Draining(const std::string& node_id) {
    const sched::ShardEntry* e = jobs_.registry().Find(node_id);
    if (!e || e->draining) return;
    Execute(jobs_.Drain(node_id, Clock::now(), nullptr));
  }

  // ------------------------------------------------------------ troubles

  // The head's link to a node fell into trouble or left it, or the head's
  // allowlist refused the node's key: no new session goes through it, the
  // running ones go on over another route (or fail naming it).
  void Troubled(const NodeTrouble& t) { Trouble(t.node_id, t.link ? kLinkTrouble : kKeyRefused, t.text); }

  // A message from `node_id` arrived: whatever refused its key before lets it through now.
  void Heard(const std::string& node_id) { Trouble(node_id, kKeyRefused, ""); }

  // Sets (or, with an empty text, clears) one of a node's troubles; the
  // registry gets the first that holds, and a new one moves the node's sessions.
  enum TroubleSource { kLinkTrouble, kKeyRefused, kHeadUnreachable };
  void Trouble(const std::string& node_id, TroubleSource source, const std::string& text) {
    std::map<int, std::string>& of = troubles_[node_id];
    auto it = of.find(source);
    if (text.empty() ? it == of.end() : it != of.end() && it->second == text) return;
    if (text.empty()) {
      of.erase(it);
    } else {
      of[source] = text;
    }
    jobs_.registry().SetTrouble(node_id, of.empty() ? "" : of.begin()->second);
    if (of.empty()) troubles_.erase(node_id);
    if (!text.empty()) Execute(jobs_.NodeTroubled(node_id, "is unusable: " + text, Clock::now()));
  }

  // What a node's heartbeat or pong says it cannot reach: no hop from it to
  // those nodes (and, when it cannot reach this head, no session at all);
  // sessions through a newly unreachable node go elsewhere.
  void Unreachable(const std::string& node_id, const google::protobuf::RepeatedPtrField<v1::LinkTrouble>& troubles) {
    const sched::ShardEntry* entry = jobs_.registry().Find(node_id);
    if (!entry) return;
    std::map<std::string, std::string> now;
    std::string head_text;
    for (const v1::LinkTrouble& t : troubles) {
      if (t.node_id() == ctx_->node_id) {
        head_text = t.text();
      } else {
        now[t.node_id()] = t.text();
      }
    }
    Trouble(node_id, kHeadUnreachable, head_text.empty() ? "" : "it cannot reach this head: " + head_text);
    std::vector<std::pair<std::string, std::string>> fresh;
    for (const auto& [to, text] : now) {
      if (!entry->unreachable.count(to)) fresh.emplace_back(to, text);
    }
    for (const auto& [to, text] : entry->unreachable) {
      if (!now.count(to)) Say("shard '" + node_id + "' reaches '" + to + "' again");
    }
    jobs_.registry().SetUnreachable(node_id, now);
    for (const auto& [to, text] : fresh) {
      Say("shard '" + node_id + "' cannot reach '" + to + "': " + text);
      Execute(jobs_.NodeTroubled(to, "is unreachable from shard '" + node_id + "': " + text, Clock::now()));
    }
  }

  // A node about to choose its layers (`layers: auto`) asks what is served.
  void CoverageAsked(const Origin& from, uint64_t request_id, const v1::CoverageQuery& q) {
    if (auto mismatch = ModelMismatch(q.node_id(), q.model_fingerprint(), q.model_name())) {
      return RefuseNode(from, request_id, q.node_id(), "other model", *mismatch);
    }
    const auto now = Clock::now();
    const int64_t n = ctx_->source->config().n_layers;
    v1::Envelope env = NewEnvelope(request_id);
    v1::Coverage* c = env.mutable_coverage();
    c->set_n_layers(static_cast<uint32_t>(n));
    for (uint32_t count : jobs_.registry().Coverage(n, now)) c->add_replicas(count);
    c->set_model_fingerprint(ctx_->fingerprint);
    c->set_model_name(ctx_->model_name);
    for (const sched::ShardEntry& e : jobs_.registry().Live(now)) {
      if (e.layer_begin >= e.layer_end) continue;  // a stage node
      v1::LayerRange* r = c->add_spans();
      r->set_begin(static_cast<uint32_t>(e.layer_begin));
      r->set_end(static_cast<uint32_t>(e.layer_end));
    }
    Execute(sched::Reply{from, std::move(env)});
  }

  void QueryMetrics(const Origin& from, uint64_t request_id) {
    const auto now = Clock::now();
    const sched::Registry& registry = jobs_.registry();
    const uint64_t q = queries_.Begin(from, request_id, NodeMetrics(*ctx_), jobs_.RouteProblem(now), now);
    for (const sched::ShardEntry& e : registry.Live(now)) {
      if (e.node_id == ctx_->node_id) continue;  // counted above
      queries_.Note(q, e.node_id, "layer_begin", static_cast<double>(e.layer_begin));
      queries_.Note(q, e.node_id, "layer_end", static_cast<double>(e.layer_end));
      for (int s : e.stages)
        queries_.Note(q, e.node_id, s == v1::STAGE_EMBEDDING ? "runs_embedding" : "runs_lm_head", 1);
      if (e.rtt_ms >= 0) queries_.Note(q, e.node_id, "rtt_ms", e.rtt_ms);
      if (e.step_ms >= 0) queries_.Note(q, e.node_id, "step_ms", e.step_ms);
      if (!e.quarantine.empty()) queries_.Note(q, e.node_id, "quarantined", 1);  // spot checks found it wrong
      v1::Envelope env = NewEnvelope(q);
      env.mutable_metrics_query();
      if (sender_.ToNode(e.node_id, e.endpoint, std::move(env)).ok()) queries_.Expect(q, e.node_id);
    }
    ScheduleRetry();
    if (auto reply = queries_.Finish(q)) Execute(std::move(*reply));
  }

  // ------------------------------------------------------------ console

  sched::ConsoleHead ConsoleHeadNow(Clock::time_point now) const {
    sched::ConsoleHead h;
    h.node_id = ctx_->node_id;
    h.endpoint = ctx_->node_endpoint;
    h.model_name = ctx_->model_name;
    h.version = kTroupeVersion;
    h.device = ctx_->lm_head ? ctx_->lm_head->Describe() : "cpu";
    h.n_layers = ctx_->source->config().n_layers;
    h.route_problem = jobs_.RouteProblem(now);
    h.uptime_s = std::chrono::duration<double>(now - started_).count();
    h.unix_ms = static_cast<int64_t>(UnixNow() * 1000);
    h.rss_bytes = ResidentBytes();
    h.runs_embedding = ctx_->config.RunsEmbedding();
    h.runs_lm_head = ctx_->config.RunsLmHead();
    h.tokens_per_s = console_.tokens_per_s();
    return h;
  }

  // The admin console asks for one view (scheduling/console_desk.h).
  void ConsoleAsked(const Origin& from, uint64_t request_id, const v1::ConsoleQuery& q) {
    const auto now = Clock::now();
    Result<sched::Json> view = console_.View(q.view(), q.session_id(), q.seconds(), ConsoleHeadNow(now), jobs_, *book_,
                                             ctx_->timelines.get(), now, UnixNow());
    if (!view.ok()) {
      const bool no_timeline = view.status().code() == StatusCode::kNotFound;
      return Execute(
          sched::Reply{from, ErrorEnvelope(no_timeline ? v1::UNKNOWN_SESSION : v1::BAD_REQUEST, view.status().message(),
                                           ctx_->node_id, no_timeline ? q.session_id() : 0, request_id)});
    }
    v1::Envelope env = NewEnvelope(request_id);
    env.mutable_console_view()->set_json(view->dump(-1, ' ', false, sched::Json::error_handler_t::replace));
    Execute(sched::Reply{from, std::move(env)});
  }

  // Every live node gets a Ping; its Pong gives the round trip routes weigh.
  void PingNodes(Clock::time_point now) {
    if (now - pinged_ < kPingEvery) return;
    pinged_ = now;
    const uint64_t micros =
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count());
    for (const sched::ShardEntry& e : jobs_.registry().Live(now)) {
      if (e.node_id == ctx_->node_id) continue;
      v1::Envelope env = NewEnvelope();
      env.mutable_ping()->set_sent_micros(micros);
      (void)sender_.ToNode(e.node_id, e.endpoint, std::move(env));  // best effort
    }
  }

  void OnTick() {
    const auto now = Clock::now();
    PingNodes(now);
    ctx_->counters.queue_depth = jobs_.queued();  // once a tick: it walks every job
    console_.Sample(now, UnixNow(), jobs_, ctx_->counters.tokens_generated_total.load(), book_->failed());
    RunRecovered(now);
    SubmitHeld(now);
    if (now - expired_ >= kExpireEvery) {
      expired_ = now;
      if (Status st = book_->Expire(UnixNow()); !st.ok()) {
        ctx_->counters.journal_errors_total++;
        Say("cannot drop expired jobs from the journal: " + st.message());
      }
    }
    Execute(jobs_.Tick(now));
    Execute(spot_.Tick(now));
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
    ctx_->counters.reroutes_total = jobs_.reroutes_total();
    ctx_->counters.drains_total = jobs_.drains_total();
    ctx_->counters.kept_sessions = jobs_.kept().size();
    ctx_->counters.prompt_tokens_prefilled_total = jobs_.prefill_counts().prefilled;
    ctx_->counters.prompt_tokens_reused_total = jobs_.prefill_counts().reused;
    ctx_->counters.jobs_live = book_->live();
    ctx_->counters.jobs_active = jobs_.Active();
    ctx_->counters.spot_checks_total = spot_.checks_total();
    ctx_->counters.spot_check_mismatches_total = spot_.mismatches_total();
    ctx_->counters.spot_check_positions_total = spot_.positions_total();
  }
  void Execute(sched::Reply reply) { Do(reply); }

  // To a client — or, for the book's own jobs, to the book, which copies it
  // to the job's watchers.
  void Do(sched::Reply& a) {
    if (a.client.link == kJobBookLink) {
      LogJobEnd(a.envelope);
      return Execute(book_->Output(std::move(a.envelope), UnixNow()));
    }
    Sent(sender_.Reply(a.client, std::move(a.envelope)));
  }

  void Do(sched::ToNode& a) {
    const bool open = a.envelope.has_session_open();
    const bool shadow = spot_.Has(a.session_id);
    if (open && !shadow && !jobs_.Has(a.session_id)) return;  // its job failed earlier in this list
    Status st = sender_.ToNode(a.node_id, a.endpoint, std::move(a.envelope));
    if (!open) return Sent(st);
    ScheduleRetry();
    if (!st.ok()) {
      const std::string text = "cannot reach shard '" + a.node_id + "': " + st.ToString();
      if (shadow) return Execute(spot_.Failed(a.session_id, text));
      Execute(jobs_.SendFailed(a.session_id, v1::UNAVAILABLE, text, Clock::now()));
    }
  }

  // A session starts; a spot check's share of them get a shadow
  // (scheduling/spot_checks.h) once the sampler has it. Beam search and
  // prompt scoring send more than the last row to the LM head: not checked.
  void Do(sched::SessionStart& a) {
    std::optional<sched::ShadowPlan> plan;
    if (spot_.fraction() > 0 && !a.params.beam_search() && a.params.prompt_logprobs < 0) {
      plan = spot_.Plan(a.session_id, a.route, a.max_length, jobs_.registry().Usable(Clock::now()));
    }
    send(ctx_->sampler, std::move(a));
    if (plan) {
      plan->shadow_id = jobs_.NewSessionId();
      Execute(spot_.Open(std::move(*plan), ctx_->fingerprint, Clock::now()));
    }
  }
  void Do(sched::ShadowStart& a) { send(ctx_->sampler, std::move(a)); }
  void Do(sched::ShadowStop& a) { send(ctx_->sampler, a); }

  // The sampler is done with a shadow: its verdict, and the nodes it
  // quarantines — they take no new session, and their jobs go on over
  // other routes.
  void ShadowEnded(const ShadowEnd& e) {
    std::vector<sched::Quarantine> found;
    Execute(spot_.Ended(e, &found));
    for (const sched::Quarantine& q : found) {
      jobs_.registry().SetQuarantined(q.node_id, q.why);
      ctx_->counters.nodes_quarantined++;
      Execute(jobs_.NodeTroubled(q.node_id, "is quarantined: " + q.why, Clock::now()));
    }
  }

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

  void Say(std::string text) { logging::Info(text); }
  // One line per job, when it ends: how, and what it cost.
  void LogJobEnd(const v1::Envelope& env) {
    if (env.has_finish()) {
      const v1::Finish& f = env.finish();
      logging::Info(
          logging::Cat("job ", f.job_id(), " completed (", v1::FinishReason_Name(f.reason()), "): ", f.prompt_tokens(),
                       " prompt token(s), ", f.generated_tokens(), " generated in ", f.total_seconds(), " s (queued ",
                       f.queue_seconds(), " s, ", f.replays(), " replay(s))"),
          {f.job_id(), f.session_id()});
    } else if (env.has_error() && env.error().has_job_id()) {
      const v1::Error& e = env.error();
      logging::Warn(logging::Cat("job ", e.job_id(), " aborted: ", v1::ErrorCode_Name(e.code()), ": ", e.text()),
                    {e.job_id(), e.session_id()});
    }
  }

  void Do(sched::Log& a) {
    logging::Write(a.warn ? logging::Level::kWarn : logging::Level::kInfo, a.text, {a.job_id, a.session_id});
  }

  sched::JobLifecycle jobs_;
  std::unique_ptr<sched::JobBook> book_;
  std::deque<sched::JournaledJob> recovered_;  // from the journal, yet to run
  sched::StartupHold hold_;                    // new jobs before the first route
  sched::SpotChecks spot_;                     // shadows and their verdicts
  Clock::time_point started_;
  Clock::time_point expired_;  // the last Expire
  sched::MetricsQueries queries_;
  sched::ConsoleDesk console_;                                  // lost nodes, metric history, views
  std::map<std::string, std::string> refused_said_;             // node -> the refusal last logged
  std::map<std::string, std::map<int, std::string>> troubles_;  // node -> TroubleSource -> why
  Clock::time_point pinged_;                                    // the last PingNodes round
};

}  // namespace

caf::actor SpawnScheduler(caf::actor_system& system, std::shared_ptr<NodeContext> ctx,
                          std::unique_ptr<scheduling::JobBook> book, std::vector<scheduling::JournaledJob> recovered) {
  return system.spawn<SchedulerActor, caf::lazy_init>(std::move(ctx), std::move(book), std::move(recovered));
}

}  // namespace troupe::actors
