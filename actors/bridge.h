// Bridge: the node's PollLoop callbacks — the one thread that owns every
// socket of the process turns inbound frames into CAF messages for local
// actors, and reports what could not be sent.
//
//   link ──frames──▶ DecodeFrames (messages/ checks, reject counters)
//                      ├─ rejected ─▶ Error reply to the sender (counted)
//                      └─ ok ──▶ DeliverLocal ─▶ caf::anon_send(actor, ...)
//                                     └─ a shard's lone one-row step: run
//                                        right here (InlineStage)
//   a StepBurst goes to DeliverLocal step by step, in order, each as if it
//   had come alone (a refused one answered on its own).
//
// Outbound messages do not pass through here: actors hand them to the loop
// through their own Outboxes (actors/sender.h). The bridge's own replies
// (rejections, heartbeats, pongs) go through a transport::Outbound owned by
// the loop thread; none of them ever blocks it, and a failed one is counted
// (send_errors_total) and logged at most once a second.
//
// Connection events feed the node's Links (one link per node, trouble:
// transport/links.h); a head's scheduler hears NodeTrouble when a link falls
// into trouble or leaves it, and NodeDown only when a link that was up goes
// down. Heartbeats (and pongs, in node_context.cpp) carry the links in trouble.
//
// Thread-safety: the callbacks run on the loop thread only. The Bridge must
// outlive the PollLoop that calls it (Node stops the loop first).
#pragma once

#include <chrono>
#include <memory>

#include "actors/node_context.h"
#include "transport/outbound.h"
#include "transport/poll_loop.h"

namespace troupe::actors {

class Bridge {
 public:
  explicit Bridge(std::shared_ptr<NodeContext> ctx);

  // Callbacks bound to this bridge, for PollLoop::Start.
  transport::PollLoopCallbacks Callbacks();

 private:
  void OnMessage(transport::LinkId link, transport::Inbound&& message);
  void OnSendError(transport::LinkId link, const std::string& peer, const Status& error);
  void OnEvent(transport::LinkId link, const transport::LinkEvent& event);
  void OnTick();
  // A shard tells its head it is alive every second from this thread, not
  // from its actor: a long batch delays the actor's announces, but only a
  // stopped, hung or cut-off process stops these. A drain that begins is
  // said at once (within a tick, PollLoopOptions::tick_ms).
  void Heartbeat();
  void Answer(const Origin& to, v1::Envelope envelope);

  v1::Envelope StageAnnounce() const;
  std::shared_ptr<NodeContext> ctx_;
  std::unique_ptr<transport::Outbound> replies_;  // created on the loop thread
  std::chrono::steady_clock::time_point next_heartbeat_;
  bool said_draining_ = false;  // what the last heartbeat said
  std::chrono::steady_clock::time_point next_send_error_log_;
  // Compute per step, smoothed over heartbeats (what Heartbeat.step_ms says).
  uint64_t last_compute_ns_ = 0, last_batches_ = 0;
  double step_ms_ = 0;
};

}  // namespace troupe::actors
