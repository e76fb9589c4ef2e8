// Outbound: how one sender (an actor, or the bridge itself) hands messages to
// the PollLoop — one Outbox per link, opened on first use, and a
// queue per link for messages the loop could not take yet (backpressure), so
// nothing is dropped and order per link is kept. On the loop's own thread a
// message goes onto the link at once (PollLoop::SendHere), after what the
// outboxes handed over.
//
// The owner calls Retry() while HasQueued() (an actor does it from a timer);
// Send never blocks.
//
// Thread-safety: none — it belongs to one actor (CAF runs an actor on one
// thread at a time) or to the loop thread. Close() before the ZeroMQ context
// goes away: it closes the outbox sockets.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "pipeline/status.h"
#include "transport/poll_loop.h"

namespace troupe::transport {

class Outbound {
 public:
  explicit Outbound(PollLoop* loop) : loop_(loop) {}

  // Hands `frames` for `peer` (listener links; "" for connections) to the
  // loop, or queues them behind earlier messages for the same link. Fails
  // only when the link is gone or the message is unusable.
  Status Send(LinkId link, const std::string& peer, Frames frames);

  bool HasQueued() const { return queued_ > 0; }
  // Sends what the loop can take now, in order; messages to removed links are
  // dropped (their count is returned through `dropped` when not null).
  void Retry(size_t* dropped = nullptr);
  // Closes every outbox and forgets queued messages.
  void Close();

 private:
  Result<Outbox*> BoxFor(LinkId link);
  PollLoop* loop_;
  std::map<LinkId, std::unique_ptr<Outbox>> boxes_;
  std::map<LinkId, std::deque<std::pair<std::string, Frames>>> waiting_;
  size_t queued_ = 0;
};

}  // namespace troupe::transport
