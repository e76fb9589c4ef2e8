// StageActor: what every actor of a node shares — its NodeContext, its
// Sender, and the retry timer that resends messages backpressure held back.
// Internal to actors/*.cpp (includes CAF).
//
// A subclass adds StartHandler() and RetryHandler() to its behavior, calls Sent(status) after
// sending (to count failures and arm the timer) and releases its sender in
// on_exit (StageActor::on_exit does it). A stage that batches steps holds
// them behind its `gate_` (scheduling/burst_gate.h) and tags the steps each
// batch sends on with NewBurstId(). A stage whose code another thread may
// run under the actor's own lock (the shard's inline steps) sets off_actor_
// meanwhile: a retry is then asked for by message, not by timer.
#pragma once

#include <caf/all.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <random>

#include "actors/hop_timing.h"
#include "actors/local_messages.h"
#include "actors/node_context.h"
#include "actors/sender.h"
#include "messages/envelope_codec.h"
#include "scheduling/burst_gate.h"

namespace troupe::actors {

// The InlineStage (node_context.h) of a stage actor `A` whose steps another
// thread may run: A::RunHere(m), called holding `mu`, runs `m` (true) or
// leaves it to the actor (false). Every handler of A runs holding `mu`; the
// other thread only ever try-locks it, so it never waits for the actor, and
// the actor's state has one owner at a time. A sets `actor` in
// make_behavior and clears it in on_exit, both under `mu`.
template <typename A>
struct ActorInline : InlineStage {
  std::mutex mu;
  A* actor = nullptr;
  bool TryRun(StepMessage& m) override {
    std::unique_lock<std::mutex> lock(mu, std::try_to_lock);
    return lock.owns_lock() && actor != nullptr && actor->RunHere(m);
  }
};

class StageActor : public caf::event_based_actor {
 public:
  StageActor(caf::actor_config& cfg, std::shared_ptr<NodeContext> ctx)
      : caf::event_based_actor(cfg), ctx_(std::move(ctx)), sender_(ctx_), gate_(BurstWait(*ctx_)) {
    // Local sends run the next stage on this worker once the handler
    // returns; not while the poll loop's thread runs the handler's code.
    sender_.SetHere([this] { return off_actor_ ? nullptr : context(); });
  }

  void on_exit() override { sender_.Close(); }

 protected:
  // The node's start signal: its only effect is that make_behavior has run.
  static auto StartHandler() {
    return [](start_atom) {};
  }

  auto RetryHandler() {
    return [this](retry_atom) { OnRetry(); };
  }
  void OnRetry() {
    retry_scheduled_ = false;
    sender_.Retry();
    ScheduleRetry();
  }

  // Counts a failed send; arms the retry timer when messages wait.
  void Sent(const Status& st) {
    if (!st.ok()) ctx_->counters.send_errors_total++;
    ScheduleRetry();
  }

  void ScheduleRetry() {
    if (retry_scheduled_ || !sender_.HasQueued()) return;
    retry_scheduled_ = true;
    if (off_actor_) {  // not on the actor's own thread: no timer of its own, a message
      caf::anon_send(caf::actor_cast<caf::actor>(this), retry_atom::value);
      return;
    }
    delayed_send(this, std::chrono::milliseconds(1), retry_atom::value);
  }

  // A session failed on this node: tell the local scheduler, or answer
  // `from` with an Error when the scheduler lives elsewhere.
  void ReportFailure(uint64_t session_id, v1::ErrorCode code, const std::string& text, const Origin& from,
                     uint64_t request_id = 0) {
    if (ctx_->scheduler) {
      SessionFailed f;
      f.session_id = session_id;
      f.error = ErrorEnvelope(code, text, ctx_->node_id, session_id).error();
      // Off the actor's thread, send() would queue on the actor's last
      // worker without waking it.
      if (off_actor_) return caf::anon_send(ctx_->scheduler, std::move(f));
      send(ctx_->scheduler, std::move(f));
      return;
    }
    Sent(sender_.Reply(from, ErrorEnvelope(code, text, ctx_->node_id, session_id, request_id)));
  }

  // The node's burst_wait_ms: how long a stage waits for the rest of a burst.
  static Clock::duration BurstWait(const NodeContext& ctx) {
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double, std::milli>(ctx.config.burst_wait_ms));
  }

  // A fresh burst id (never 0) for the steps one batch sends on. Random: a
  // receiver tells bursts apart by id alone, whichever stage sent them.
  uint64_t NewBurstId() { return burst_ids_() | 1; }

  // Batching stages hold the steps they take in behind gate_: Hold() each
  // one, Release() each one computed or dropped, ScheduleFlush() after
  // either. flush_atom then comes when the held steps should be computed —
  // at once, or when the gate stops waiting for the rest of a burst
  // (BurstHandler() in the behavior) — once until the flush handler calls
  // FlushStarted().
  void Hold(const v1::Step& s) { gate_.Arrived(s.burst_id(), s.burst_size(), Clock::now()); }
  void Release(const v1::Step& s) { gate_.Left(s.burst_id(), Clock::now()); }
  void ScheduleFlush() {
    if (flush_scheduled_ || gate_.held() == 0) return;
    const auto now = Clock::now();
    if (gate_.Ready(now)) {
      flush_scheduled_ = true;
      send(this, flush_atom::value);
    } else if (!wait_scheduled_) {
      wait_scheduled_ = true;
      delayed_send(this, gate_.WaitUntil() - now, burst_atom::value);
    }
  }
  void FlushStarted() { flush_scheduled_ = false; }
  auto BurstHandler() {
    return [this](burst_atom) { OnBurst(); };
  }
  void OnBurst() {
    wait_scheduled_ = false;
    ScheduleFlush();
  }

  std::shared_ptr<NodeContext> ctx_;
  Sender sender_;
  scheduling::BurstGate gate_;
  // True while another thread runs this actor's code under the actor's own
  // lock (an InlineStage's step, RunHere): Sent and ScheduleRetry then ask
  // for a retry by message instead of a timer, and local sends and failure
  // reports go by anon_send.
  bool off_actor_ = false;
  // Sets off_actor_ for its scope (RunHere's).
  class OffActor {
   public:
    explicit OffActor(StageActor& a) : a_(a) { a_.off_actor_ = true; }
    ~OffActor() { a_.off_actor_ = false; }
    OffActor(const OffActor&) = delete;
    OffActor& operator=(const OffActor&) = delete;

   private:
    StageActor& a_;
  };

 private:
  bool retry_scheduled_ = false;
  bool flush_scheduled_ = false, wait_scheduled_ = false;
  std::mt19937_64 burst_ids_{std::random_device{}()};
};

}  // namespace troupe::actors
