// PollLoop: the one thread that owns a process's links and moves their
// messages. Other threads never touch a link's socket; they hand outbound
// messages to the loop through an Outbox and receive inbound ones through a
// callback that runs on the loop thread (the CAF bridge in actors/ turns it
// into actor messages).
//
//   thread X ──Outbox(link 3)──▶ inproc PUSH/PULL ─┐
//   thread Y ──Outbox(link 3)──▶ inproc PUSH/PULL ─┤   loop thread:
//                                                  ├─▶ zmq::poll over links,
//   thread Z ──Outbox(link 7)──▶ inproc PUSH/PULL ─┘   channels, monitors and a
//                                                      control pipe
//
// Backpressure end to end: when a link's socket would block, the loop parks
// that one message and stops reading the link's channel until the link has
// room; the channel's own small HWM then fills and Outbox::Send reports
// would-block to the producing thread. Links do not block each other. Frames
// travel through the inproc channel without a copy.
//
// The loop thread's own messages (what a callback sends: the bridge's
// replies, a step a shard computed right there) skip the channel: an
// Outbound on the loop thread calls SendHere, which first moves whatever the
// link's outboxes already handed over onto the link, so order per sender is
// kept, then sends on the link's socket at once (no second pass of the loop).
//
// Nothing is dropped silently: a message the loop cannot send (unroutable
// peer, oversized frame, socket failure) is reported through on_send_error.
// Messages still queued when a link is removed or the loop stops are dropped
// (linger 0); their zero-copy release functions still run.
//
// Thread-safety: Start, Stop and the destructor from the owning thread (not
// from a callback); AddListener, AddConnection, RemoveLink, OpenOutbox and
// Counters from any thread, any time while running. Callbacks run on the loop
// thread, one at a time, and must not block for long (a blocked callback
// stalls every link). An Outbox is used by one thread at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <zmq.hpp>

#include "pipeline/status.h"
#include "transport/frames.h"
#include "transport/link.h"
#include "transport/monitor.h"

namespace troupe::transport {

using LinkId = uint32_t;

struct PollLoopCallbacks {
  // A message arrived on `link`. For a connection, message.peer is empty.
  std::function<void(LinkId link, Inbound&& message)> on_message;
  // A message handed to an Outbox could not be sent (unroutable, too large,
  // socket failure). `peer` is the addressee (empty for connections).
  std::function<void(LinkId link, const std::string& peer, const Status& error)> on_send_error;
  // Optional: connection events (accepted, handshake refused, disconnected...).
  std::function<void(LinkId link, const LinkEvent& event)> on_event;
  // Optional: runs every PollLoopOptions::tick_ms (heartbeats, timeouts).
  std::function<void()> on_tick;
};

struct PollLoopOptions {
  int tick_ms = 100;
  int outbox_hwm = 16;  // per Outbox, each side of the inproc pipe
  int batch = 64;       // messages taken from one link or channel per turn (fairness)
};

class Outbox;

class PollLoop {
 public:
  // Starts the loop thread. IoError when the control pipe cannot be set up.
  static Result<std::unique_ptr<PollLoop>> Start(zmq::context_t& context, PollLoopCallbacks callbacks,
                                                 PollLoopOptions options = {});
  ~PollLoop();  // Stop()
  PollLoop(const PollLoop&) = delete;
  PollLoop& operator=(const PollLoop&) = delete;

  // Closes every link and joins the thread. Idempotent.
  void Stop();

  // Hands a link to the loop, which owns it from now on; the caller must not
  // touch it again. Returns the id for outboxes and callbacks. Fails
  // (InvalidArgument) after Stop or for a null link.
  Result<LinkId> AddListener(std::unique_ptr<Listener> listener);
  Result<LinkId> AddConnection(std::unique_ptr<Connection> connection);

  // Closes the link on the loop thread; its outboxes then report NotFound.
  // Unknown ids are ignored.
  Status RemoveLink(LinkId link);

  // A sending end for `link` (InvalidArgument for an id never returned by
  // Add*; NotFound for a removed link).
  Result<std::unique_ptr<Outbox>> OpenOutbox(LinkId link);

  // The link's connection counters, read on the loop thread. NotFound for an
  // unknown link, DeadlineExceeded if the loop does not answer within `timeout_ms`.
  Result<LinkCounters> Counters(LinkId link, int timeout_ms = 5000);

  // True on the loop's own thread (in a callback, or code a callback calls).
  bool OnLoopThread() const { return loop_thread_.load(std::memory_order_relaxed) == std::this_thread::get_id(); }

  // On the loop thread only: sends `frames` to `peer` ("" for a connection)
  // on `link` now, after every message the link's outboxes already handed
  // over. OK when the link took it, or holds it until it has room (as a
  // channel's message is held; frames consumed either way); would-block
  // (kUnavailable) when a message already waits for room — retry later;
  // NotFound for a removed link; InvalidArgument for an empty message or a
  // call from another thread. Errors the socket reports go to on_send_error,
  // as for a message from an outbox.
  Status SendHere(LinkId link, const std::string& peer, Frames& frames);

 private:
  struct Slot;
  struct State;
  PollLoop(zmq::context_t& context, PollLoopCallbacks callbacks, PollLoopOptions options);
  Result<LinkId> AddLink(std::unique_ptr<Listener> listener, std::unique_ptr<Connection> connection);
  // Queues `op` for the loop thread and wakes it. False after Stop.
  bool Post(std::function<void(State&)> op);
  void Run();
  // Loop thread: `peer`'s message failed (on_send_error).
  void Report(LinkId id, const std::string& peer, const Status& st);
  // Loop thread: tries the parked message again; true when the link had room.
  bool RetryParked(Slot& slot);
  // Loop thread: moves up to `limit` messages from the link's outboxes onto
  // it, parking the first that finds no room.
  void PumpChannel(Slot& slot, int limit);
  std::string ChannelEndpoint(LinkId link) const;
  std::shared_ptr<std::atomic<bool>> ClosedFlag(LinkId link);

  zmq::context_t& context_;
  const PollLoopCallbacks callbacks_;
  const PollLoopOptions options_;
  std::string name_;                            // unique prefix of this loop's inproc endpoints
  zmq::socket_t wake_recv_;                     // loop thread
  State* state_ = nullptr;                      // loop thread: Run's own, while it runs
  std::atomic<std::thread::id> loop_thread_{};  // set while Run runs

  std::mutex mu_;  // guards everything below
  zmq::socket_t wake_send_;
  std::deque<std::function<void(State&)>> ops_;
  bool stopped_ = false;
  LinkId next_id_ = 1;
  std::map<LinkId, std::shared_ptr<std::atomic<bool>>> closed_;  // per link, shared with outboxes

  std::thread thread_;
};

class Outbox {
 public:
  ~Outbox() = default;
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  LinkId link() const { return link_; }

  // Hands `frames` to the loop for `peer` (the routing id, for a listener
  // link; empty for a connection). Never waits (every frame goes with
  // ZMQ_DONTWAIT, the PUSH has ZMQ_SNDTIMEO 0), on any thread, the loop's
  // own included. OK (frames consumed);
  // would-block (kUnavailable) when the link is backed up — retry later;
  // NotFound when the link was removed; InvalidArgument for an empty message;
  // IoError when the link closed between two frames (that message is lost).
  // Send errors found later by the loop go to on_send_error.
  Status Send(const std::string& peer, Frames& frames);

 private:
  friend class PollLoop;
  Outbox(zmq::context_t& context, LinkId link, std::shared_ptr<std::atomic<bool>> closed);
  Status Open(const std::string& channel, int hwm);
  zmq::socket_t push_;
  LinkId link_;
  std::shared_ptr<std::atomic<bool>> closed_;
};

}  // namespace troupe::transport
