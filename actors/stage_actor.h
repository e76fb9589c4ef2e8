// StageActor: what every actor of a node shares — its NodeContext, its
// Sender, and the retry timer that resends messages backpressure held back.
// Internal to actors/*.cpp (includes CAF).
//
// A subclass adds StartHandler() and RetryHandler() to its behavior, calls Sent(status) after
// sending (to count failures and arm the timer) and releases its sender in
// on_exit (StageActor::on_exit does it).
#pragma once

#include <caf/all.hpp>

#include <chrono>
#include <memory>

#include "actors/hop_timing.h"
#include "actors/local_messages.h"
#include "actors/node_context.h"
#include "actors/sender.h"
#include "messages/envelope_codec.h"

namespace troupe::actors {

class StageActor : public caf::event_based_actor {
 public:
  StageActor(caf::actor_config& cfg, std::shared_ptr<NodeContext> ctx)
      : caf::event_based_actor(cfg), ctx_(ctx), sender_(ctx) {}

  void on_exit() override { sender_.Close(); }

 protected:
  // The node's start signal: its only effect is that make_behavior has run.
  static auto StartHandler() {
    return [](start_atom) {};
  }

  auto RetryHandler() {
    return [this](retry_atom) {
      retry_scheduled_ = false;
      sender_.Retry();
      ScheduleRetry();
    };
  }

  // Counts a failed send; arms the retry timer when messages wait.
  void Sent(const Status& st) {
    if (!st.ok()) ctx_->counters.send_errors_total++;
    ScheduleRetry();
  }

  void ScheduleRetry() {
    if (retry_scheduled_ || !sender_.HasQueued()) return;
    retry_scheduled_ = true;
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
      send(ctx_->scheduler, std::move(f));
      return;
    }
    Sent(sender_.Reply(from, ErrorEnvelope(code, text, ctx_->node_id, session_id, request_id)));
  }

  std::shared_ptr<NodeContext> ctx_;
  Sender sender_;

 private:
  bool retry_scheduled_ = false;
};

}  // namespace troupe::actors
