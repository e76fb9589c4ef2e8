// NodeContext: what every actor of one node shares — its config and
// identity, its links, the read-only model pieces, the handles of its local
// actors, counters for metrics — and DeliverLocal, the one place that decides
// which local actor gets an envelope.
//
// Lifetime: built by Node before any actor or link exists; actor handles are
// set before the first link opens and cleared only after the poll loop has
// stopped, so the bridge reads them without locking. Model pieces are
// immutable and shared read-only (the shard's Decoder is not here: the shard
// actor owns it). Counters are atomics, read from any thread.
#pragma once

#include <caf/actor.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "actors/refusals.h"
#include "cluster/node_config.h"
#include "messages/frames_codec.h"
#include "messages/origin.h"
#include "messages/protocol.h"
#include "messages/reject_counters.h"
#include "pipeline/format/model_source.h"
#include "pipeline/format/weight_digest.h"
#include "pipeline/histogram.h"
#include "pipeline/model/amateur.h"
#include "pipeline/model/embedding.h"
#include "pipeline/model/lm_head.h"
#include "pipeline/text/tokenizer.h"
#include "scheduling/timelines.h"
#include "transport/links.h"

namespace troupe::actors {

struct NodeCounters {
  // Named as in `troupe status` and /metrics (troupe_<name>).
  std::atomic<uint64_t> steps_total{0};             // steps this node's stages ran
  std::atomic<uint64_t> inline_steps_total{0};      // of them, run on the thread that handed them over (InlineStage)
  std::atomic<uint64_t> step_bursts_sent_total{0};  // StepBurst messages sent: a batch's steps for one node in one
  std::atomic<uint64_t> tokens_generated_total{0};  // head: tokens its sampler produced
  std::atomic<uint64_t> batches_total{0};           // shard / LM head batches
  std::atomic<uint64_t> batch_rows_total{0};        // rows over all batches
  std::atomic<uint64_t> max_batch_sessions{0};
  std::atomic<uint64_t> cache_bytes_in_use{0};  // live sessions' caches
  std::atomic<uint64_t> cache_bytes_parked{0};  // parked caches (prefix reuse), evictable
  std::atomic<uint64_t> sessions_open{0};       // shard sessions / scheduler jobs
  std::atomic<uint64_t> sessions_opened_total{0};
  std::atomic<uint64_t> sessions_closed_total{0};
  std::atomic<uint64_t> cache_full_total{0};
  std::atomic<uint64_t> sessions_resumed_total{0};         // sessions replayed on a new route after a node died
  std::atomic<uint64_t> jobs_queued_total{0};              // jobs that had to wait for KV cache
  std::atomic<uint64_t> kept_sessions{0};                  // head: live kept sessions
  std::atomic<uint64_t> sessions_evicted_total{0};         // shard: parked caches evicted to make room
  std::atomic<uint64_t> prefix_positions_copied_total{0};  // shard: cache positions copied for prefix reuse
  std::atomic<uint64_t> prompt_tokens_prefilled_total{0};  // head: prompt tokens sent through the ring
  std::atomic<uint64_t> prompt_tokens_reused_total{0};     // head: prompt tokens a cache held already
  std::atomic<uint64_t> send_errors_total{0};
  std::atomic<uint64_t> beam_reorders_total{0};
  std::atomic<uint64_t> jobs_accepted_total{0};          // head: jobs journaled (a repeated job id not counted)
  std::atomic<uint64_t> jobs_recovered_total{0};         // head: unfinished jobs run again after a restart
  std::atomic<uint64_t> jobs_repeated_total{0};          // head: submits of a job id the head knew (answered as attach)
  std::atomic<uint64_t> jobs_attached_total{0};          // head: JobAttach requests answered
  std::atomic<uint64_t> journal_errors_total{0};         // head: job journal writes or reads that failed
  std::atomic<uint64_t> reroutes_total{0};               // head: jobs moved to another route
  std::atomic<uint64_t> drains_total{0};                 // head: nodes drained
  std::atomic<uint64_t> spot_checks_total{0};            // head: shadows compared (scheduling/spot_checks.h)
  std::atomic<uint64_t> spot_check_mismatches_total{0};  // head: of them, those whose digests differed
  std::atomic<uint64_t> spot_check_positions_total{0};   // head: positions whose digests were compared
  std::atomic<uint64_t> nodes_quarantined{0};            // head: nodes its spot checks quarantined
  std::atomic<uint64_t> queue_depth{0};                  // head: jobs waiting for cache or a route now
  std::atomic<uint64_t> jobs_live{0};                    // head: accepted jobs not ended
  std::atomic<uint64_t> jobs_active{0};                  // head: jobs opening, running or rerouting (not queued)
  // Time in model code (forward, sampling); exported as compute_microseconds_total.
  std::atomic<uint64_t> compute_ns{0};
};

// Bytes of Step messages (header and hidden states) this node sent to each
// node: `troupe status` and /metrics as step_bytes_sent_total{to="NODE"}.
class StepBytes {
 public:
  void Add(const std::string& to, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    bytes_[to] += bytes;
  }
  std::map<std::string, uint64_t> Snapshot() const {
    std::lock_guard<std::mutex> lock(mu_);
    return bytes_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> bytes_;
};

// Adds the time since construction to a counter (model code timing).
class ComputeTimer {
 public:
  explicit ComputeTimer(std::atomic<uint64_t>& into) : into_(into), t0_(std::chrono::steady_clock::now()) {}
  ~ComputeTimer() {
    into_ += static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count());
  }

 private:
  std::atomic<uint64_t>& into_;
  std::chrono::steady_clock::time_point t0_;
};

// This build's version (CMake's project version).
extern const char* const kTroupeVersion;

// What every announce of this node says, shard or stage node: its id, where
// its steps go, its model, key, incarnation and whether it drains. A shard
// adds its layers (and their digest), a stage node the stages it serves.
// Defined after NodeContext.
struct NodeContext;
v1::Envelope NodeAnnounce(const NodeContext& ctx);

struct StepMessage;  // actors/local_messages.h

// A stage that can run a step on the thread that hands it over instead of
// on its actor's. The shard's: on the poll loop that received the step,
// which saves two thread hand-offs a hop (the actor's worker waking for the
// step, and the loop waking for what the stage sends on). The embedding's:
// on the worker of the local stage that sends it the step (the sampler's
// next step, the scheduler's prompt), so that the step leaves before the
// sender's own remaining work (the sampler's token to its client) and no
// other worker wakes for it. TryRun takes `m` only when it can run it at once
// and alone — a quick stage, no batch forming, the session ready for
// exactly this step — and then has done all the actor would have
// (computed, sent on, counted); otherwise it returns false, `m` untouched,
// and the step goes to the actor as usual. It never waits for the actor:
// when the actor is busy, that is a false. Called by DeliverLocal only:
// the shard's with `on_loop`, the embedding's with `here`.
class InlineStage {
 public:
  virtual ~InlineStage() = default;
  virtual bool TryRun(StepMessage& m) = 0;
};

// Resident memory of this process (/proc/self/statm); 0 when unreadable.
uint64_t ResidentBytes();

// A stage's step times and batch sizes on this node (/metrics histograms
// step_queue_ms, step_compute_ms, batch_sessions, labelled by stage).
struct StageHistograms {
  Histogram queue_ms{Histogram::MillisecondBounds()};
  Histogram compute_ms{Histogram::MillisecondBounds()};
  Histogram batch_sessions{Histogram::PowersOfTwo(8)};
};

struct NodeContext {
  cluster::NodeConfig config;
  std::string node_id;
  std::string node_endpoint;  // advertised node listener address
  std::string job_endpoint;   // head: bound job endpoint address
  std::string fingerprint;    // of the model
  uint64_t incarnation = 0;   // random at each start (RegistryAnnounce.incarnation)
  std::string device_text;    // where its layers (or stages) run, as Describe() says
  std::string model_name;     // its file or folder name, for messages
  std::string public_key;     // this node's CURVE public key (Z85); empty when plain
  // pipeline/format/weight_digest.h: a head's of every layer, a shard's of
  // its span (its announce carries them; the head compares).
  std::shared_ptr<const LayerDigests> digests;

  transport::PollLoop* loop = nullptr;
  transport::Links* links = nullptr;
  DecodeLimits limits;
  RejectCounters rejects;
  Refusals refusals;  // handshakes and announces refused (actors/refusals.h)
  // Leaving: set by SIGTERM on a shard (RunNode) or the head's NodeDrain
  // (the shard actor); heartbeats and announces say so, SessionOpen is refused.
  mutable std::atomic<bool> draining{false};     // a stage node's is set on its I/O thread (DeliverLocal)
  std::atomic<double> drain_timeout_seconds{0};  // the head's NodeDrain's bound; 0 = the config's
  NodeCounters counters;
  StepBytes step_bytes;
  mutable std::array<StageHistograms, 6> stages;  // by v1::Stage (hop_timing.h, the batching stages)
  // Head: the sessions' per-hop timelines (the sampler records, the
  // scheduler's console views read; scheduling/timelines.h).
  std::shared_ptr<scheduling::Timelines> timelines;

  std::shared_ptr<const ModelSource> source;
  std::shared_ptr<const Tokenizer> tokenizer;  // head
  std::shared_ptr<const Embedding> embedding;  // head
  std::shared_ptr<const LmHead> lm_head;       // head
  // Head with config.amateur_model: contrastive decoding's amateur. Its
  // sessions (and so its Decoder) are driven by the sampler actor alone.
  std::shared_ptr<const AmateurModel> amateur;

  caf::actor scheduler, embedding_stage, shard, lm_head_stage, sampler;
  // The shard's steps on the loop thread (set with `shard`, before links open).
  std::shared_ptr<InlineStage> inline_shard;
  // The embedding's lone steps on the thread of the local stage that sends
  // them (the sampler's or the scheduler's worker; set with `embedding_stage`).
  std::shared_ptr<InlineStage> inline_embedding;

  // The local actor for `stage`, or an invalid handle when this node does not host it.
  caf::actor StageActor(v1::Stage stage) const;
  void ClearActors();
};

// This node's MetricsSnapshot: node_id, time, the counters above (gauges for
// cache_bytes_in_use, cache_bytes_parked, cache_budget_bytes, sessions_open, kept_sessions,
// burst_wait_ms), the reject
// counters, and the refusals (handshakes, announces, links in trouble; actors/refusals.h).
v1::MetricsSnapshot NodeMetrics(const NodeContext& ctx);

// Hands a decoded message from `from` to the local actor it is for: a Step
// to the stage in step.hop, session open/close and metrics queries to the
// shard, everything about jobs, sessions and the registry to the scheduler.
// Returns the Error to send back when no local actor takes it (this node
// does not host that stage, or the body is not one nodes accept), or the
// Pong that answers a Ping; `job_link` restricts a client to job bodies.
// `on_loop`: the caller is the poll loop's thread (the bridge), so a shard
// step may run right here (InlineStage) instead of on the shard actor.
// `here`: the CAF worker running the calling actor's handler (an actor's
// Sender), or null. The local actor then runs on that worker once the
// handler returns, as CAF's own send schedules it, instead of waking
// another worker (anon_send): the LM head -> sampler -> embedding chain of
// a head stays on one thread, each stage starting as the one before ends.
std::optional<v1::Envelope> DeliverLocal(const NodeContext& ctx, const Origin& from, Received message, bool job_link,
                                         bool on_loop = false, caf::execution_unit* here = nullptr);

}  // namespace troupe::actors
