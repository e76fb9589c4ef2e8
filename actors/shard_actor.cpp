#include "actors/shard_actor.h"
#include "pipeline/log.h"

#include <iostream>

#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>

#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "actors/stage_actor.h"
#include "messages/envelope_codec.h"
#include "messages/wire_error.h"
#include "pipeline/model/beam_caches.h"
#include "pipeline/model/kv_cache.h"
#include "pipeline/quant/thread_pool.h"
#include "pipeline/sampling/sampling_params.h"

namespace troupe::actors {
namespace {

// Rows of one batch at most: bounds scratch memory; a longer prefill chunk
// still runs, alone.
constexpr int64_t kMaxBatchRows = 1024;
constexpr auto kTick = std::chrono::seconds(1);
// A step runs on the poll loop's thread (InlineStage) only while this
// shard's last one-row step took less: the loop moves every other message of
// the node, and must not stall behind a slow stage.
constexpr int64_t kInlineMaxStepNs = 10'000'000;

struct ShardSession {
  std::unique_ptr<KvCache> cache;
  Origin opener;  // the scheduler: errors about this session go there
  Clock::time_point last_used;
  // Beam search (SessionOpen.rows > 1): the caches of rows 1.. (row 0 is
  // `cache`, which a prefill fills).
  std::vector<std::unique_ptr<KvCache>> beam_rows;
  bool parked = false;   // closed with park: no steps, a prefix others may copy, evictable
  bool stepped = false;  // has run a step (before that, a first step may rewind a copied prefix)
  size_t bytes() const { return cache->bytes() * (1 + beam_rows.size()); }
};

class ShardActor;
using ShardInline = ActorInline<ShardActor>;  // its steps on the poll loop's thread

class ShardActor : public StageActor {
 public:
  ShardActor(caf::actor_config& cfg, std::shared_ptr<NodeContext> ctx, std::shared_ptr<Decoder> decoder,
             std::shared_ptr<ShardInline> here)
      : StageActor(cfg, std::move(ctx)), decoder_(std::move(decoder)), here_(std::move(here)) {}

  const char* name() const override { return "shard"; }

  caf::behavior make_behavior() override {
    {
      std::lock_guard<std::mutex> lock(here_->mu);
      here_->actor = this;
    }
    send(this, tick_atom::value);
    return {
        [this](WireMessage& m) { Locked([&] { OnWire(m); }); },
        [this](StepMessage& m) { Locked([&] { OnStep(m); }); },
        [this](flush_atom) { Locked([&] { RunBatch(); }); },
        [this](burst_atom) { Locked([&] { OnBurst(); }); },
        [this](tick_atom) {
          Locked([&] {
            CloseIdle();
            Announce();
          });
          delayed_send(this, kTick, tick_atom::value);
        },
        StartHandler(),
        [this](retry_atom) { Locked([&] { OnRetry(); }); },
    };
  }

  void on_exit() override {
    std::lock_guard<std::mutex> lock(here_->mu);
    here_->actor = nullptr;
    StageActor::on_exit();
    sessions_.clear();
    pending_.clear();
    ctx_->counters.cache_bytes_in_use = 0;
    ctx_->counters.cache_bytes_parked = 0;
    ctx_->counters.sessions_open = 0;
  }

  // ShardInline::TryRun, with here_->mu held, on the loop's thread: the one
  // live session's one-row step, when nothing else waits to be computed, the
  // stage is quick and the session is ready for exactly this step. Anything
  // else — a batch forming, a burst, beams, a prefill, a step to refuse —
  // is the actor's (false).
  bool RunHere(StepMessage& m) {
    const v1::Step& s = m.step;
    if (!pending_.empty() || gate_.held() > 0 || last_row_step_ns_ >= kInlineMaxStepNs) return false;
    // Another live session's steps would queue behind this one in the socket
    // and then run one by one, where the actor batches what arrives meanwhile.
    if (sessions_.size() - parked_sessions_ != 1) return false;
    if (s.token_count() != 1 || s.burst_size() > 1 || s.parent_rows_size() > 0 || Misfit(m)) return false;
    auto it = sessions_.find(s.session_id());
    if (!it->second.stepped) return false;  // a first step may rewind a copied prefix: the actor's
    KvCache& cache = *it->second.cache;
    if (s.first_position() != cache.length() || !cache.Check(1).ok()) return false;
    ThreadPool::Global().Prewake();  // the pool's workers wake while the first layer's norm runs
    const OffActor off_actor(*this);
    it->second.last_used = Clock::now();
    std::vector<StepMessage> batch;
    batch.push_back(std::move(m));
    Run(batch, {SessionRows{&cache, 1}}, 1);
    ThreadPool::Global().Park();  // nothing to compute until the next step arrives
    ctx_->counters.inline_steps_total++;
    return true;
  }

 private:
  template <typename F>
  void Locked(F&& f) {
    std::lock_guard<std::mutex> lock(here_->mu);
    f();
  }

  // ------------------------------------------------------------ sessions

  void OnWire(WireMessage& m) {
    v1::Envelope& env = m.envelope;
    switch (env.body_case()) {
      case v1::Envelope::kSessionOpen: return Open(m.from, env);
      case v1::Envelope::kNodeDrain:
        if (env.node_drain().timeout_seconds() > 0) ctx_->drain_timeout_seconds = env.node_drain().timeout_seconds();
        return BeginDrain("the head asked");
      case v1::Envelope::kSessionClose:
        if (env.session_close().park()) return Park(env.session_close().session_id());
        return Close(env.session_close().session_id());
      case v1::Envelope::kMetricsQuery: {
        v1::Envelope reply = NewEnvelope(env.request_id());
        *reply.mutable_metrics_snapshot() = NodeMetrics(*ctx_);
        return Sent(sender_.Reply(m.from, std::move(reply)));
      }
      default: break;
    }
  }

  void Open(const Origin& from, const v1::Envelope& env) {
    const v1::SessionOpen& o = env.session_open();
    const uint64_t id = o.session_id();
    auto refuse = [&](v1::ErrorCode code, const std::string& text, bool retryable = false) {
      if (code == v1::CACHE_FULL && !ctx_->draining) ctx_->counters.cache_full_total++;
      v1::Envelope error = ErrorEnvelope(code, text, ctx_->node_id, id, env.request_id());
      error.mutable_error()->set_retryable(retryable);
      Sent(sender_.Reply(from, std::move(error)));
    };
    if (!o.model_fingerprint().empty() && o.model_fingerprint() != ctx_->fingerprint) {
      return refuse(v1::WRONG_MODEL, "shard '" + ctx_->node_id + "' serves model " + ctx_->fingerprint +
                                         ", the session wants " + o.model_fingerprint());
    }
    if (id == 0) return refuse(v1::BAD_REQUEST, "session id 0 is not a session");
    if (ctx_->draining) {  // retryable CACHE_FULL: the head queues the job and routes it without this node
      return refuse(v1::CACHE_FULL, "shard '" + ctx_->node_id + "' is draining: it takes no new session",
                    /*retryable=*/true);
    }
    DropOrphans(id >> 32);
    if (sessions_.count(id)) return refuse(v1::SESSION_EXISTS, "session " + std::to_string(id) + " is already open");
    const int64_t max_positions = decoder_->config().max_positions;
    if (o.max_length() == 0 || o.max_length() > max_positions) {
      return refuse(v1::BAD_REQUEST, "max_length " + std::to_string(o.max_length()) + " is not in [1, " +
                                         std::to_string(max_positions) + "]");
    }
    const uint32_t n_rows = std::max<uint32_t>(1, o.rows());
    if (n_rows > static_cast<uint32_t>(SamplingParams::kMaxBeams)) {
      return refuse(v1::BAD_REQUEST, "SessionOpen.rows = " + std::to_string(n_rows) + ": at most " +
                                         std::to_string(SamplingParams::kMaxBeams) + " beam rows");
    }
    const size_t bytes = decoder_->cache_shape().BytesFor(o.max_length()) * n_rows;
    const uint64_t budget = ctx_->config.cache_budget_bytes;
    if (in_use_ + bytes > budget && bytes <= budget) EvictParked(bytes, o.copy_from());
    if (in_use_ + bytes > budget) {
      return refuse(v1::CACHE_FULL,
                    "shard '" + ctx_->node_id + "' (layers " + std::to_string(decoder_->begin_layer()) + "-" +
                        std::to_string(decoder_->end_layer()) + "): a session of " + std::to_string(o.max_length()) +
                        " tokens needs " + std::to_string(bytes) + " bytes of KV cache; " +
                        std::to_string(budget - std::min<uint64_t>(budget, in_use_)) + " of the " +
                        std::to_string(budget) + "-byte cache budget are free",
                    /*retryable=*/bytes <= budget);
    }
    ShardSession session{nullptr, from, Clock::now(), {}};
    for (uint32_t row = 0; row < n_rows; ++row) {
      Result<std::unique_ptr<KvCache>> cache = Status::Internal("not created");
      try {
        cache = KvCache::Create(decoder_->cache_shape(), o.max_length());
      } catch (const std::exception& e) {
        return refuse(v1::CACHE_FULL, "shard '" + ctx_->node_id + "' could not allocate its KV cache: " + e.what());
      }
      if (!cache.ok()) return refuse(WireCodeOf(cache.status()), cache.status().ToString());
      (row == 0 ? session.cache : session.beam_rows.emplace_back()) = std::move(*cache);
    }
    // Prefix reuse: start from another session's positions when this shard still holds them.
    uint32_t copied = 0;
    auto source = o.copy_length() > 0 ? sessions_.find(o.copy_from()) : sessions_.end();
    if (n_rows == 1 && source != sessions_.end() &&
        session.cache->CopyPrefix(*source->second.cache, o.copy_length()).ok()) {
      copied = o.copy_length();
      source->second.last_used = Clock::now();
      ctx_->counters.prefix_positions_copied_total += copied;
    }
    in_use_ += session.bytes();
    sessions_[id] = std::move(session);
    PublishGauges();
    ctx_->counters.sessions_opened_total++;
    v1::Envelope reply = NewEnvelope(env.request_id());
    v1::SessionOpened* opened = reply.mutable_session_opened();
    opened->set_session_id(id);
    opened->set_node_id(ctx_->node_id);
    opened->set_copied(copied);
    Sent(sender_.Reply(from, std::move(reply)));
  }

  // Session ids carry their head's incarnation in their high 32 bits (random
  // at each head start). A session of a new incarnation means the head that
  // opened the others is gone (killed and started again): their caches are
  // orphans that no step will ever reach — the new head runs their jobs again
  // from its journal — so they are closed now rather than at the idle timeout.
  void DropOrphans(uint64_t incarnation) {
    if (incarnation == incarnation_) return;
    const bool first = incarnation_ == kNoIncarnation;
    incarnation_ = incarnation;
    if (first) return;
    std::vector<uint64_t> orphans;
    for (const auto& [sid, session] : sessions_) {
      if (sid >> 32 != incarnation) orphans.push_back(sid);
    }
    for (uint64_t sid : orphans) Close(sid);
    if (!orphans.empty()) {
      logging::Info(
          logging::Cat("a new head opens sessions; closed ", orphans.size(), " session(s) of the one before it"));
    }
  }

  // Evicts parked caches, least recently used first, until `bytes` more fit
  // the budget; `keep` (the prefix a new session wants) goes last. Each
  // eviction is reported to the session's opener (CANCELLED).
  void EvictParked(size_t bytes, uint64_t keep) {
    const uint64_t budget = ctx_->config.cache_budget_bytes;
    while (in_use_ + bytes > budget) {
      auto victim = sessions_.end();
      for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
        if (!it->second.parked) continue;
        if (victim == sessions_.end()) {
          victim = it;
          continue;
        }
        const bool it_kept = it->first == keep, victim_kept = victim->first == keep;
        if ((victim_kept && !it_kept) || (it_kept == victim_kept && it->second.last_used < victim->second.last_used)) {
          victim = it;
        }
      }
      if (victim == sessions_.end()) return;
      const uint64_t id = victim->first;
      Fail(id, v1::CANCELLED,
           "shard '" + ctx_->node_id + "' evicted the parked cache of session " + std::to_string(id) + " to make room");
      ctx_->counters.sessions_evicted_total++;
      Close(id);
    }
  }

  // The session ends, but its cache stays for others to copy from, until evicted.
  // The node is leaving (the head's NodeDrain; RunNode sets the flag itself
  // on SIGTERM): no new session, and parked caches go at once — only the
  // running sessions keep it here.
  void BeginDrain(const std::string& why) {
    if (ctx_->config.head) return;  // a head is stopped, not drained
    if (!ctx_->draining.exchange(true)) {
      logging::Info(logging::Cat("draining (", why, "): ", ctx_->counters.sessions_open,
                                 " running session(s) to move or finish"));
    }
    std::vector<uint64_t> parked;
    for (const auto& [id, s] : sessions_) {
      if (s.parked) parked.push_back(id);
    }
    for (uint64_t id : parked) {
      Fail(id, v1::CANCELLED, "shard '" + ctx_->node_id + "' is draining: parked cache dropped");
      Close(id);
    }
    Announce();  // says draining at once
  }

  void Park(uint64_t id) {
    if (ctx_->draining) return Close(id);  // nothing stays for later jobs
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second.parked) return;
    it->second.parked = true;
    it->second.last_used = Clock::now();
    parked_ += it->second.bytes();
    ++parked_sessions_;
    PublishGauges();
  }

  void Close(uint64_t id) {
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    in_use_ -= it->second.bytes();
    if (it->second.parked) {
      parked_ -= it->second.bytes();
      --parked_sessions_;
    }
    sessions_.erase(it);
    ctx_->counters.sessions_closed_total++;
    PublishGauges();
  }

  void CloseIdle() {
    const auto now = Clock::now();
    const auto idle = std::chrono::duration<double>(ctx_->config.idle_timeout_seconds);
    std::vector<uint64_t> expired;
    for (const auto& [id, s] : sessions_) {
      if (now - s.last_used > idle) expired.push_back(id);
    }
    for (uint64_t id : expired) {
      Fail(id, v1::TIMEOUT,
           "shard '" + ctx_->node_id + "' closed session " + std::to_string(id) + " after " +
               std::to_string(ctx_->config.idle_timeout_seconds) + " s without steps");
      Close(id);
    }
  }

  // In use: the caches of live sessions; parked ones are counted apart
  // (both count against the budget).
  void PublishGauges() {
    ctx_->counters.cache_bytes_in_use = in_use_ - parked_;
    ctx_->counters.cache_bytes_parked = parked_;
    ctx_->counters.sessions_open = sessions_.size() - parked_sessions_;
  }

  // Tells the head this shard exists (and refreshes its registry entry).
  void Announce() {
    const std::string& head = ctx_->config.head_id;
    if (head.empty() || head == ctx_->node_id) return;
    const cluster::PeerConfig* peer = ctx_->config.FindPeer(head);
    if (!peer || peer->endpoint.empty()) return;
    v1::Envelope env = NodeAnnounce(*ctx_);
    v1::RegistryAnnounce* a = env.mutable_registry_announce();
    v1::LayerRange* r = a->add_layers();
    r->set_begin(static_cast<uint32_t>(decoder_->begin_layer()));
    r->set_end(static_cast<uint32_t>(decoder_->end_layer()));
    if (ctx_->digests) a->set_layers_digest(ctx_->digests->Span(decoder_->begin_layer(), decoder_->end_layer()));
    (void)sender_.ToNode(head, peer->endpoint, std::move(env));  // best effort; repeated every tick
    ScheduleRetry();
  }

  // --------------------------------------------------------------- steps

  // What is wrong with a step before it can queue (its layers, its hidden
  // states, its session), as the Error it gets; nothing when it may queue.
  std::optional<std::pair<v1::ErrorCode, std::string>> Misfit(const StepMessage& m) const {
    const v1::Step& s = m.step;
    const int64_t hidden = decoder_->config().hidden;
    if (s.hop().layer_begin() != decoder_->begin_layer() || s.hop().layer_end() != decoder_->end_layer()) {
      return std::make_pair(v1::BAD_REQUEST, "step for layers " + std::to_string(s.hop().layer_begin()) + "-" +
                                                 std::to_string(s.hop().layer_end()) + " reached shard '" +
                                                 ctx_->node_id + "' (layers " +
                                                 std::to_string(decoder_->begin_layer()) + "-" +
                                                 std::to_string(decoder_->end_layer()) + ")");
    }
    if (!m.tensor.defined() || m.tensor.dim() != 2 || m.tensor.size(0) != s.token_count() ||
        m.tensor.size(1) != hidden || m.tensor.scalar_type() != at::kFloat || !m.tensor.is_contiguous()) {
      return std::make_pair(v1::BAD_TENSOR, "step of session " + std::to_string(s.session_id()) +
                                                " needs hidden states [" + std::to_string(s.token_count()) + ", " +
                                                std::to_string(hidden) + "] f32");
    }
    auto session = sessions_.find(s.session_id());
    if (session == sessions_.end() || session->second.parked) {
      return std::make_pair(v1::UNKNOWN_SESSION,
                            "shard '" + ctx_->node_id + "' has no session " + std::to_string(s.session_id()));
    }
    return std::nullopt;
  }

  void OnStep(StepMessage& m) {
    if (auto misfit = Misfit(m)) return Refuse(m, misfit->first, misfit->second);
    Hold(m.step);
    pending_.push_back(std::move(m));
    ScheduleFlush();
  }

  // An error about a step: to the session's opener when known, else back to the sender.
  void Refuse(const StepMessage& m, v1::ErrorCode code, const std::string& text) {
    const uint64_t id = m.step.session_id();
    auto it = sessions_.find(id);
    const Origin& to = it != sessions_.end() ? it->second.opener : m.from;
    Sent(sender_.Reply(to, ErrorEnvelope(code, text, ctx_->node_id, id, m.request_id)));
  }

  void Fail(uint64_t id, v1::ErrorCode code, const std::string& text) {
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    Sent(sender_.Reply(it->second.opener, ErrorEnvelope(code, text, ctx_->node_id, id)));
  }

  void RunBatch() {
    FlushStarted();
    std::vector<StepMessage> batch;
    std::vector<SessionRows> rows;
    std::set<uint64_t> in_batch;
    std::deque<StepMessage> later;
    int64_t n_rows = 0;
    while (!pending_.empty()) {
      StepMessage m = std::move(pending_.front());
      pending_.pop_front();
      const uint64_t id = m.step.session_id();
      const int64_t t = m.step.token_count();
      const int max_sessions = ctx_->config.max_batch_sessions;
      if (in_batch.count(id) || (!batch.empty() && n_rows + t > kMaxBatchRows) ||
          (max_sessions > 0 && static_cast<int>(batch.size()) >= max_sessions)) {
        later.push_back(std::move(m));
        continue;
      }
      Release(m.step);  // computed now, or refused below
      auto it = sessions_.find(id);
      if (it == sessions_.end() || it->second.parked) {  // closed while the step waited
        Refuse(m, v1::UNKNOWN_SESSION, "shard '" + ctx_->node_id + "' has no session " + std::to_string(id));
        continue;
      }
      if (m.step.parent_rows_size() > 0) {  // beam search: every row, reordered first
        if (Status st = AddBeamRows(it->second, m.step, &rows); !st.ok()) {
          Refuse(m, WireCodeOf(st), "shard '" + ctx_->node_id + "': " + st.message());
          continue;
        }
        it->second.last_used = Clock::now();
        in_batch.insert(id);
        n_rows += t;
        batch.push_back(std::move(m));
        continue;
      }
      KvCache& cache = *it->second.cache;
      // A copied prefix longer than what the scheduler reuses (another shard
      // of the route copied less): the first step rewinds to where it starts.
      if (!it->second.stepped && m.step.first_position() < cache.length()) cache.Truncate(m.step.first_position());
      if (m.step.first_position() != cache.length()) {
        Refuse(m, v1::BAD_REQUEST,
               "step of session " + std::to_string(id) + " starts at position " +
                   std::to_string(m.step.first_position()) + ", shard '" + ctx_->node_id + "' expects " +
                   std::to_string(cache.length()));
        continue;
      }
      if (Status room = cache.Check(t); !room.ok()) {
        Refuse(m, v1::CACHE_FULL, "shard '" + ctx_->node_id + "': " + room.message());
        continue;
      }
      it->second.last_used = Clock::now();
      it->second.stepped = true;
      in_batch.insert(id);
      rows.push_back(SessionRows{&cache, t});
      n_rows += t;
      batch.push_back(std::move(m));
    }
    pending_ = std::move(later);
    if (!batch.empty()) Run(batch, rows, n_rows);
    if (pending_.empty()) ThreadPool::Global().Park();  // nothing to compute until the next step arrives
    ScheduleFlush();
  }

  // A beam step (Step.parent_rows): reorders the session's row caches by
  // parent, checks each row continues at first_position with room for one
  // more, and appends one SessionRows per row to `rows`.
  Status AddBeamRows(ShardSession& s, const v1::Step& step, std::vector<SessionRows>* rows) {
    const size_t n = 1 + s.beam_rows.size();
    if (static_cast<size_t>(step.parent_rows_size()) != n || step.token_count() != n) {
      return Status::InvalidArgument("beam step of session " + std::to_string(step.session_id()) + " has " +
                                     std::to_string(step.parent_rows_size()) + " parent rows and " +
                                     std::to_string(step.token_count()) + " tokens; the session has " +
                                     std::to_string(n) + " rows");
    }
    std::vector<std::unique_ptr<KvCache>> all;
    all.push_back(std::move(s.cache));
    for (auto& c : s.beam_rows) all.push_back(std::move(c));
    std::vector<int32_t> parents(step.parent_rows().begin(), step.parent_rows().end());
    Result<int64_t> copies = ReorderBeamCaches(parents, &all);
    s.cache = std::move(all[0]);
    for (size_t i = 1; i < n; ++i) s.beam_rows[i - 1] = std::move(all[i]);
    if (!copies.ok()) return copies.status();
    ctx_->counters.beam_reorders_total += static_cast<uint64_t>(*copies);
    for (size_t i = 0; i < n; ++i) {
      KvCache& cache = i == 0 ? *s.cache : *s.beam_rows[i - 1];
      if (step.first_position() != cache.length()) {
        return Status::InvalidArgument("beam step of session " + std::to_string(step.session_id()) +
                                       " starts at position " + std::to_string(step.first_position()) + ", row " +
                                       std::to_string(i) + " is at " + std::to_string(cache.length()));
      }
      TROUPE_RETURN_IF_ERROR(cache.Check(1));
    }
    for (size_t i = 0; i < n; ++i) rows->push_back(SessionRows{i == 0 ? s.cache.get() : s.beam_rows[i - 1].get(), 1});
    return Status::Ok();
  }

  void Run(std::vector<StepMessage>& batch, const std::vector<SessionRows>& rows, int64_t n_rows) {
    at::Tensor hidden;
    Status st;
    int64_t compute_begin = 0;
    try {
      if (batch.size() == 1) {
        hidden = batch[0].tensor;
      } else {
        std::vector<at::Tensor> parts;
        parts.reserve(batch.size());
        for (const StepMessage& m : batch) parts.push_back(m.tensor);
        hidden = at::cat(parts, 0);
      }
      compute_begin = SteadyNs();
      ComputeTimer timer(ctx_->counters.compute_ns);
      st = decoder_->Forward(hidden, rows);
      if (n_rows == 1) last_row_step_ns_ = SteadyNs() - compute_begin;
    } catch (const std::exception& e) {
      st = Status::Internal(std::string("shard forward: ") + e.what());
    }
    if (!st.ok()) {
      for (const StepMessage& m : batch) {
        Refuse(m, WireCodeOf(st), "shard '" + ctx_->node_id + "': " + st.ToString());
      }
      return;
    }
    const int64_t compute_end = SteadyNs();
#ifdef TROUPE_TEST_FAULTS
    // Node config test_fault: corrupt_output — a shard that lies (its caches
    // stay right; what it sends on is 1% off), for the spot-check tests.
    if (ctx_->config.test_fault == "corrupt_output") hidden = hidden.mul(1.01);
#endif
    ctx_->stages[v1::STAGE_SHARD].batch_sessions.Observe(static_cast<double>(batch.size()));
    ctx_->counters.steps_total += batch.size();
    ctx_->counters.batches_total++;
    ctx_->counters.batch_rows_total += n_rows;
    if (batch.size() > ctx_->counters.max_batch_sessions) ctx_->counters.max_batch_sessions = batch.size();
    std::vector<v1::Step> nexts;
    std::vector<at::Tensor> outs;
    int64_t r0 = 0;
    for (StepMessage& m : batch) {
      const int64_t t = m.step.token_count();
      at::Tensor out = batch.size() == 1 ? hidden : hidden.slice(0, r0, r0 + t);
      r0 += t;
      v1::Step next = std::move(m.step);
      if (next.rest_of_route_size() == 0) continue;  // the route ends here (a prefill chunk)
      if (next.rest_of_route(0).stage() == v1::STAGE_LM_HEAD && t > 1 && next.parent_rows_size() == 0 &&
          !next.all_logits()) {
        out = out.slice(0, t - 1, t);  // the LM head reads the last position only
        next.set_first_position(next.first_position() + static_cast<uint32_t>(t - 1));
        next.set_token_count(1);
      }
      next.clear_hop();
      next.clear_tensor();
      StampHop(next, next, *ctx_, v1::STAGE_SHARD, m.arrived_ns, compute_begin, compute_end);
      nexts.push_back(std::move(next));
      outs.push_back(std::move(out));
    }
    scheduling::TagBursts(nexts, NewBurstId());
    std::vector<uint64_t> ids;
    ids.reserve(nexts.size());
    for (const v1::Step& next : nexts) ids.push_back(next.session_id());
    std::vector<Status> sent;
    try {
      sent = sender_.ForwardSteps(std::move(nexts), std::move(outs));
    } catch (const std::exception& e) {
      sent.assign(ids.size(), Status::Internal(e.what()));
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      if (!sent[i].ok()) {
        Fail(ids[i], v1::UNAVAILABLE, "shard '" + ctx_->node_id + "' cannot forward: " + sent[i].ToString());
      }
    }
    ScheduleRetry();
  }

  std::shared_ptr<Decoder> decoder_;
  std::shared_ptr<ShardInline> here_;
  // The last one-row step's compute; until one ran, too long to run inline.
  int64_t last_row_step_ns_ = std::numeric_limits<int64_t>::max();
  std::map<uint64_t, ShardSession> sessions_;
  uint64_t in_use_ = 0;  // bytes of all sessions' caches, parked ones included
  uint64_t parked_ = 0;  // bytes of parked caches
  size_t parked_sessions_ = 0;
  static constexpr uint64_t kNoIncarnation = ~uint64_t{0};
  uint64_t incarnation_ = kNoIncarnation;  // of the head whose sessions this shard holds
  std::deque<StepMessage> pending_;        // held behind gate_
};

}  // namespace

caf::actor SpawnShard(caf::actor_system& system, std::shared_ptr<NodeContext> ctx, std::shared_ptr<Decoder> decoder) {
  auto here = std::make_shared<ShardInline>();
  ctx->inline_shard = here;
  return system.spawn<ShardActor, caf::lazy_init>(std::move(ctx), std::move(decoder), std::move(here));
}

}  // namespace troupe::actors
