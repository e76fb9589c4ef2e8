#include "transport/poll_loop.h"

#include <chrono>
#include <future>
#include <limits>
#include <sstream>
#include <vector>

#include "pipeline/thread_name.h"
#include "transport/socket_options.h"

namespace troupe::transport {

using Clock = std::chrono::steady_clock;

// One link as the loop thread sees it.
struct PollLoop::Slot {
  LinkId id = 0;
  std::unique_ptr<Listener> listener;  // exactly one of these two
  std::unique_ptr<Connection> connection;
  zmq::socket_t channel;  // PULL: messages from this link's outboxes
  bool parked = false;    // a message waits for room on the link
  std::string parked_peer;
  Frames parked_frames;

  zmq::socket_t& socket() { return listener ? listener->socket() : connection->socket(); }
  SocketMonitor* monitor() { return listener ? listener->monitor() : connection->monitor(); }
  LinkCounters counters() { return listener ? listener->counters() : connection->counters(); }
  Status Send(const std::string& peer, Frames& frames) {
    return listener ? listener->Send(peer, frames) : connection->Send(frames);
  }
};

// Everything the loop thread owns.
struct PollLoop::State {
  std::map<LinkId, Slot> links;
  bool stop = false;
};

PollLoop::PollLoop(zmq::context_t& context, PollLoopCallbacks callbacks, PollLoopOptions options)
    : context_(context),
      callbacks_(std::move(callbacks)),
      options_(options),
      wake_recv_(context, zmq::socket_type::pair),
      wake_send_(context, zmq::socket_type::pair) {
  static std::atomic<uint64_t> next{0};
  std::ostringstream s;
  s << "inproc://troupe-loop-" << this << "-" << next.fetch_add(1);
  name_ = s.str();
}

Result<std::unique_ptr<PollLoop>> PollLoop::Start(zmq::context_t& context, PollLoopCallbacks callbacks,
                                                  PollLoopOptions options) {
  if (options.tick_ms <= 0 || options.outbox_hwm <= 0 || options.batch <= 0) {
    return Status::InvalidArgument("poll loop: tick_ms, outbox_hwm and batch must be > 0");
  }
  std::unique_ptr<PollLoop> loop(new PollLoop(context, std::move(callbacks), options));
  TROUPE_RETURN_IF_ERROR(SetIntOption(loop->wake_recv_, ZMQ_LINGER, 0, "ZMQ_LINGER"));
  TROUPE_RETURN_IF_ERROR(SetIntOption(loop->wake_send_, ZMQ_LINGER, 0, "ZMQ_LINGER"));
  const std::string wake = loop->name_ + "-wake";
  if (zmq_bind(loop->wake_recv_.handle(), wake.c_str()) != 0 ||
      zmq_connect(loop->wake_send_.handle(), wake.c_str()) != 0) {
    return ZmqError("poll loop: control pipe");
  }
  // Thread start is a full barrier: wake_recv_ belongs to the loop from here.
  loop->thread_ = std::thread([raw = loop.get()] { raw->Run(); });
  return loop;
}

PollLoop::~PollLoop() { Stop(); }

void PollLoop::Stop() {
  if (!Post([](State& s) { s.stop = true; })) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    for (auto& [id, flag] : closed_) flag->store(true);
  }
  if (thread_.joinable()) thread_.join();
}

bool PollLoop::Post(std::function<void(State&)> op) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return false;
  ops_.push_back(std::move(op));
  zmq::message_t wake;
  // A full pipe already holds a wake-up; the loop runs every queued op then.
  (void)zmq_msg_send(wake.handle(), wake_send_.handle(), ZMQ_DONTWAIT);
  return true;
}

std::string PollLoop::ChannelEndpoint(LinkId link) const { return name_ + "-link-" + std::to_string(link); }

std::shared_ptr<std::atomic<bool>> PollLoop::ClosedFlag(LinkId link) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = closed_.find(link);
  return it == closed_.end() ? nullptr : it->second;
}

Result<LinkId> PollLoop::AddListener(std::unique_ptr<Listener> listener) {
  if (!listener) return Status::InvalidArgument("poll loop: null listener");
  return AddLink(std::move(listener), nullptr);
}

Result<LinkId> PollLoop::AddConnection(std::unique_ptr<Connection> connection) {
  if (!connection) return Status::InvalidArgument("poll loop: null connection");
  return AddLink(nullptr, std::move(connection));
}

Result<LinkId> PollLoop::AddLink(std::unique_ptr<Listener> listener, std::unique_ptr<Connection> connection) {
  LinkId id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return Status::InvalidArgument("poll loop: stopped");
    id = next_id_++;
    closed_[id] = std::make_shared<std::atomic<bool>>(false);
  }
  // std::function needs a copyable op: the link travels in a shared holder.
  // The queue's mutex is the memory barrier ZeroMQ asks for when a socket
  // changes threads.
  auto held = std::make_shared<Slot>();
  held->id = id;
  held->listener = std::move(listener);
  held->connection = std::move(connection);
  const std::string channel = ChannelEndpoint(id);
  const int hwm = options_.outbox_hwm;
  bool posted = Post([this, held, channel, hwm](State& s) {
    Slot& slot = s.links[held->id];
    slot.id = held->id;
    slot.listener = std::move(held->listener);
    slot.connection = std::move(held->connection);
    slot.channel = zmq::socket_t(context_, zmq::socket_type::pull);
    Status st = SetIntOption(slot.channel, ZMQ_LINGER, 0, "ZMQ_LINGER");
    if (st.ok()) st = SetIntOption(slot.channel, ZMQ_RCVHWM, hwm, "ZMQ_RCVHWM");
    if (st.ok() && zmq_bind(slot.channel.handle(), channel.c_str()) != 0) {
      st = ZmqError("poll loop: binding " + channel);
    }
    if (!st.ok()) {
      if (auto flag = ClosedFlag(slot.id)) flag->store(true);
      if (callbacks_.on_send_error) callbacks_.on_send_error(slot.id, "", st);
      s.links.erase(slot.id);
    }
  });
  if (!posted) return Status::InvalidArgument("poll loop: stopped");
  return id;
}

Status PollLoop::RemoveLink(LinkId link) {
  if (auto flag = ClosedFlag(link)) flag->store(true);
  if (!Post([link](State& s) { s.links.erase(link); })) {
    return Status::InvalidArgument("poll loop: stopped");
  }
  return Status::Ok();
}

Result<std::unique_ptr<Outbox>> PollLoop::OpenOutbox(LinkId link) {
  std::shared_ptr<std::atomic<bool>> closed = ClosedFlag(link);
  if (!closed) {
    return Status::InvalidArgument("poll loop: no link " + std::to_string(link));
  }
  if (closed->load()) return Status::NotFound("poll loop: link " + std::to_string(link) + " is closed");
  std::unique_ptr<Outbox> out(new Outbox(context_, link, closed));
  TROUPE_RETURN_IF_ERROR(out->Open(ChannelEndpoint(link), options_.outbox_hwm));
  return out;
}

Result<LinkCounters> PollLoop::Counters(LinkId link, int timeout_ms) {
  auto promise = std::make_shared<std::promise<Result<LinkCounters>>>();
  std::future<Result<LinkCounters>> answer = promise->get_future();
  bool posted = Post([promise, link](State& s) {
    auto it = s.links.find(link);
    if (it == s.links.end()) {
      promise->set_value(Status::NotFound("poll loop: no link " + std::to_string(link)));
    } else {
      promise->set_value(it->second.counters());
    }
  });
  if (!posted) return Status::InvalidArgument("poll loop: stopped");
  if (answer.wait_for(std::chrono::milliseconds(timeout_ms)) != std::future_status::ready) {
    return Status::DeadlineExceeded("poll loop: no answer within " + std::to_string(timeout_ms) + " ms");
  }
  return answer.get();
}

// ------------------------------------------------------------ loop thread

namespace {

// What one poll item stands for.
enum class ItemKind { kWake, kLink, kMonitor, kChannel };

}  // namespace

void PollLoop::Report(LinkId id, const std::string& peer, const Status& st) {
  if (callbacks_.on_send_error) callbacks_.on_send_error(id, peer, st);
}

bool PollLoop::RetryParked(Slot& slot) {
  Status st = slot.Send(slot.parked_peer, slot.parked_frames);
  if (IsWouldBlock(st)) return false;
  if (!st.ok()) Report(slot.id, slot.parked_peer, st);
  slot.parked = false;
  slot.parked_frames.clear();
  return true;
}

void PollLoop::PumpChannel(Slot& slot, int limit) {
  for (int n = 0; n < limit && !slot.parked; ++n) {
    Result<Frames> got = ReceiveFrames(slot.channel, "outbox channel");
    if (!got.ok()) return;
    Frames& frames = *got;
    std::string peer(FrameView(frames[0]));
    Frames message;
    message.reserve(frames.size() - 1);
    for (size_t i = 1; i < frames.size(); ++i) message.push_back(std::move(frames[i]));
    if (message.empty()) {
      Report(slot.id, peer, Status::InvalidArgument("outbox: empty message"));
      continue;
    }
    Status st = slot.Send(peer, message);
    if (IsWouldBlock(st)) {
      slot.parked = true;
      slot.parked_peer = std::move(peer);
      slot.parked_frames = std::move(message);
    } else if (!st.ok()) {
      Report(slot.id, peer, st);
    }
  }
}

Status PollLoop::SendHere(LinkId link, const std::string& peer, Frames& frames) {
  auto what = [link] { return "link " + std::to_string(link); };  // made for a refusal only
  if (!OnLoopThread() || state_ == nullptr) {
    return Status::InvalidArgument("poll loop: SendHere on " + what() + " from another thread");
  }
  if (frames.empty()) return Status::InvalidArgument(what() + ": empty message");
  auto it = state_->links.find(link);
  if (it == state_->links.end()) return Status::NotFound(what() + " is closed");
  Slot& slot = it->second;
  // Whatever this link's outboxes handed over goes first, all of it.
  if (slot.channel) PumpChannel(slot, std::numeric_limits<int>::max());
  if (slot.parked) return Status::Unavailable(what() + " is backed up (backpressure); retry later");
  Status st = slot.Send(peer, frames);
  if (IsWouldBlock(st)) {
    slot.parked = true;
    slot.parked_peer = peer;
    slot.parked_frames = std::move(frames);
  } else if (!st.ok()) {
    Report(slot.id, peer, st);
  }
  frames.clear();
  return Status::Ok();
}

void PollLoop::Run() {
  NameThisThread("troupe-loop");
  State state;
  state_ = &state;
  loop_thread_.store(std::this_thread::get_id());
  Clock::time_point next_tick = Clock::now() + std::chrono::milliseconds(options_.tick_ms);
  std::vector<zmq_pollitem_t> items;
  std::vector<std::pair<ItemKind, Slot*>> refs;

  auto receive = [&](Slot& slot) {
    for (int n = 0; n < options_.batch; ++n) {
      Inbound in;
      if (slot.listener) {
        Result<Inbound> got = slot.listener->Receive(0);
        if (!got.ok()) return;
        in = std::move(*got);
      } else {
        Result<Frames> got = slot.connection->Receive(0);
        if (!got.ok()) return;
        in.frames = std::move(*got);
      }
      if (callbacks_.on_message) callbacks_.on_message(slot.id, std::move(in));
    }
  };

  while (!state.stop) {
    items.clear();
    refs.clear();
    items.push_back({wake_recv_.handle(), 0, ZMQ_POLLIN, 0});
    refs.emplace_back(ItemKind::kWake, nullptr);
    bool retry_soon = false;
    for (auto& [id, slot] : state.links) {
      short events = ZMQ_POLLIN;
      if (slot.parked && slot.connection) events |= ZMQ_POLLOUT;
      // A ROUTER is writable when any peer is; retry a parked reply by time.
      if (slot.parked && slot.listener) retry_soon = true;
      items.push_back({slot.socket().handle(), 0, events, 0});
      refs.emplace_back(ItemKind::kLink, &slot);
      if (SocketMonitor* m = slot.monitor()) {
        items.push_back({m->socket().handle(), 0, ZMQ_POLLIN, 0});
        refs.emplace_back(ItemKind::kMonitor, &slot);
      }
      if (!slot.parked && slot.channel) {
        items.push_back({slot.channel.handle(), 0, ZMQ_POLLIN, 0});
        refs.emplace_back(ItemKind::kChannel, &slot);
      }
    }
    auto until_tick = std::chrono::ceil<std::chrono::milliseconds>(next_tick - Clock::now());
    long timeout = std::max<long>(0, until_tick.count());
    if (retry_soon) timeout = std::min<long>(timeout, 1);
    int rc = zmq_poll(items.data(), static_cast<int>(items.size()), timeout);
    if (rc < 0) {
      if (zmq_errno() == EINTR) continue;
      break;  // the context is being terminated
    }
    if (items[0].revents & ZMQ_POLLIN) {
      zmq::message_t drop;
      while (zmq_msg_recv(drop.handle(), wake_recv_.handle(), ZMQ_DONTWAIT) >= 0) {
      }
      std::deque<std::function<void(State&)>> ops;
      {
        std::lock_guard<std::mutex> lock(mu_);
        ops.swap(ops_);
      }
      for (auto& op : ops) op(state);
      continue;  // links may have changed: rebuild the poll set
    }
    for (size_t i = 1; i < items.size(); ++i) {
      Slot& slot = *refs[i].second;
      short revents = items[i].revents;
      switch (refs[i].first) {
        case ItemKind::kLink:
          if (revents & ZMQ_POLLIN) receive(slot);
          if (slot.parked && RetryParked(slot)) PumpChannel(slot, options_.batch);
          break;
        case ItemKind::kMonitor:
          if (revents & ZMQ_POLLIN) {
            for (const LinkEvent& e : slot.monitor()->Drain()) {
              if (callbacks_.on_event) callbacks_.on_event(slot.id, e);
            }
          }
          break;
        case ItemKind::kChannel:
          if (revents & ZMQ_POLLIN) PumpChannel(slot, options_.batch);
          break;
        case ItemKind::kWake: break;
      }
    }
    if (Clock::now() >= next_tick) {
      if (callbacks_.on_tick) callbacks_.on_tick();
      next_tick = Clock::now() + std::chrono::milliseconds(options_.tick_ms);
    }
  }
  // Close every socket on the thread that owns them, then answer ops that
  // arrived meanwhile (they find no links).
  state.links.clear();
  std::deque<std::function<void(State&)>> ops;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ops.swap(ops_);
  }
  for (auto& op : ops) op(state);
  state.links.clear();
  state_ = nullptr;
  loop_thread_.store(std::thread::id());
  wake_recv_.close();
}

// ------------------------------------------------------------------ Outbox

Outbox::Outbox(zmq::context_t& context, LinkId link, std::shared_ptr<std::atomic<bool>> closed)
    : push_(context, zmq::socket_type::push), link_(link), closed_(std::move(closed)) {}

Status Outbox::Open(const std::string& channel, int hwm) {
  TROUPE_RETURN_IF_ERROR(SetIntOption(push_, ZMQ_LINGER, 0, "ZMQ_LINGER"));
  TROUPE_RETURN_IF_ERROR(SetIntOption(push_, ZMQ_SNDHWM, hwm, "ZMQ_SNDHWM"));
  // Belt and braces: a send that would block fails at once, DONTWAIT or not.
  TROUPE_RETURN_IF_ERROR(SetIntOption(push_, ZMQ_SNDTIMEO, 0, "ZMQ_SNDTIMEO"));
  if (zmq_connect(push_.handle(), channel.c_str()) != 0) return ZmqError("outbox: connecting");
  return Status::Ok();
}

Status Outbox::Send(const std::string& peer, Frames& frames) {
  const std::string what = "outbox of link " + std::to_string(link_);
  if (closed_->load()) return Status::NotFound(what + ": the link is closed");
  if (frames.empty()) return Status::InvalidArgument(what + ": empty message");
  zmq::message_t head(peer.data(), peer.size());
  if (zmq_msg_send(head.handle(), push_.handle(), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
    if (zmq_errno() == EAGAIN) {
      return Status::Unavailable(what + ": the link is backed up (backpressure); retry later");
    }
    return ZmqError(what + ": send");
  }
  // Never a blocking send, on any thread (the loop thread sends through
  // outboxes too): once the first part is in, ZeroMQ takes the rest unless
  // the channel went away meanwhile — then the message is lost and said so.
  for (size_t i = 0; i < frames.size(); ++i) {
    int flags = ZMQ_DONTWAIT | (i + 1 < frames.size() ? ZMQ_SNDMORE : 0);
    if (zmq_msg_send(frames[i].handle(), push_.handle(), flags) < 0) {
      return ZmqError(what + ": send of frame " + std::to_string(i) + " (the link closed mid-message; dropped)");
    }
  }
  frames.clear();
  return Status::Ok();
}

}  // namespace troupe::transport
