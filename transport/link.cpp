#include "transport/link.h"

#include "transport/socket_options.h"

namespace troupe::transport {
namespace {

// Waits for a message to receive. Nothing within `timeout_ms` is the answer a
// receive without waiting gives when nothing is queued: would-block.
Status AwaitMessage(zmq::socket_t& socket, int timeout_ms) {
  if (timeout_ms == 0) return Status::Ok();
  Status st = WaitReadable(socket, timeout_ms);
  if (st.code() == StatusCode::kDeadlineExceeded) return Status::Unavailable(st.message());
  return st;
}

// The options both ends share. Called before bind/connect.
Status ApplyLinkOptions(zmq::socket_t& s, const LinkOptions& o) {
  TROUPE_RETURN_IF_ERROR(ValidateLinkOptions(o));
  TROUPE_RETURN_IF_ERROR(SetIntOption(s, ZMQ_LINGER, 0, "ZMQ_LINGER"));
  TROUPE_RETURN_IF_ERROR(SetIntOption(s, ZMQ_SNDHWM, o.send_hwm, "ZMQ_SNDHWM"));
  TROUPE_RETURN_IF_ERROR(SetIntOption(s, ZMQ_RCVHWM, o.receive_hwm, "ZMQ_RCVHWM"));
  TROUPE_RETURN_IF_ERROR(SetInt64Option(s, ZMQ_MAXMSGSIZE, o.max_message_size, "ZMQ_MAXMSGSIZE"));
  TROUPE_RETURN_IF_ERROR(SetIntOption(s, ZMQ_HANDSHAKE_IVL, o.handshake_timeout_ms, "ZMQ_HANDSHAKE_IVL"));
  if (o.kernel_buffer_bytes > 0) {
    TROUPE_RETURN_IF_ERROR(SetIntOption(s, ZMQ_SNDBUF, o.kernel_buffer_bytes, "ZMQ_SNDBUF"));
    TROUPE_RETURN_IF_ERROR(SetIntOption(s, ZMQ_RCVBUF, o.kernel_buffer_bytes, "ZMQ_RCVBUF"));
  }
  TROUPE_RETURN_IF_ERROR(SetIntOption(s, ZMQ_TCP_KEEPALIVE, 1, "ZMQ_TCP_KEEPALIVE"));
  if (o.tcp_keepalive_idle_s > 0) {
    TROUPE_RETURN_IF_ERROR(SetIntOption(s, ZMQ_TCP_KEEPALIVE_IDLE, o.tcp_keepalive_idle_s, "ZMQ_TCP_KEEPALIVE_IDLE"));
  }
  if (o.heartbeat_interval_ms > 0) {
    TROUPE_RETURN_IF_ERROR(SetIntOption(s, ZMQ_HEARTBEAT_IVL, o.heartbeat_interval_ms, "ZMQ_HEARTBEAT_IVL"));
    TROUPE_RETURN_IF_ERROR(SetIntOption(s, ZMQ_HEARTBEAT_TIMEOUT, o.heartbeat_timeout_ms, "ZMQ_HEARTBEAT_TIMEOUT"));
  }
  return Status::Ok();
}

// Frames larger than our own limit would get the connection dropped by a
// peer configured alike: refuse them here with a clear error instead.
Status CheckFrameSizes(const Frames& frames, const LinkOptions& o, const std::string& what) {
  for (size_t i = 0; i < frames.size(); ++i) {
    if (static_cast<int64_t>(frames[i].size()) > o.max_message_size) {
      return Status::InvalidArgument(what + ": frame " + std::to_string(i) + " is " + std::to_string(frames[i].size()) +
                                     " bytes, over max_message_size " + std::to_string(o.max_message_size));
    }
  }
  return Status::Ok();
}

// Closes a monitored socket in the only safe order: no more events, then
// the socket, then the monitor's reader (monitor.h).
void CloseMonitored(zmq::socket_t& socket, std::unique_ptr<SocketMonitor>& monitor) {
  if (monitor && socket) monitor->Detach(socket);
  socket.close();
  monitor.reset();
}

Result<std::unique_ptr<SocketMonitor>> MaybeMonitor(zmq::context_t& context, zmq::socket_t& s, const LinkOptions& o) {
  if (!o.monitor) return std::unique_ptr<SocketMonitor>();
  return SocketMonitor::Attach(context, s);
}

}  // namespace

Status ValidateLinkOptions(const LinkOptions& o) {
  auto positive = [](int64_t v, const char* name) {
    return v > 0
               ? Status::Ok()
               : Status::InvalidArgument(std::string("link option ") + name + " must be > 0, got " + std::to_string(v));
  };
  TROUPE_RETURN_IF_ERROR(positive(o.send_hwm, "send_hwm"));
  TROUPE_RETURN_IF_ERROR(positive(o.receive_hwm, "receive_hwm"));
  TROUPE_RETURN_IF_ERROR(positive(o.max_message_size, "max_message_size"));
  TROUPE_RETURN_IF_ERROR(positive(o.handshake_timeout_ms, "handshake_timeout_ms"));
  TROUPE_RETURN_IF_ERROR(positive(o.reconnect_interval_ms, "reconnect_interval_ms"));
  if (o.reconnect_interval_max_ms < o.reconnect_interval_ms) {
    return Status::InvalidArgument(
        "link option reconnect_interval_max_ms must be >= "
        "reconnect_interval_ms");
  }
  if (o.kernel_buffer_bytes < 0 || o.heartbeat_interval_ms < 0 || o.tcp_keepalive_idle_s < 0) {
    return Status::InvalidArgument(
        "link options kernel_buffer_bytes, heartbeat_interval_ms and "
        "tcp_keepalive_idle_s must be >= 0");
  }
  if (o.heartbeat_interval_ms > 0 && o.heartbeat_timeout_ms <= o.heartbeat_interval_ms) {
    return Status::InvalidArgument(
        "link option heartbeat_timeout_ms must exceed "
        "heartbeat_interval_ms");
  }
  return Status::Ok();
}

// ---------------------------------------------------------------- Listener

Listener::Listener(zmq::context_t& context, const LinkOptions& options)
    : socket_(context, zmq::socket_type::router), options_(options) {}

Listener::~Listener() { CloseMonitored(socket_, monitor_); }

Result<std::unique_ptr<Listener>> Listener::Bind(zmq::context_t& context, const std::string& endpoint,
                                                 const SecurityConfig& security, const LinkOptions& options) {
  TROUPE_RETURN_IF_ERROR(CheckBindAllowed(endpoint, security));
  std::unique_ptr<Listener> l(new Listener(context, options));
  zmq::socket_t& s = l->socket_;
  TROUPE_RETURN_IF_ERROR(ApplyLinkOptions(s, options));
  TROUPE_RETURN_IF_ERROR(SetIntOption(s, ZMQ_ROUTER_MANDATORY, 1, "ZMQ_ROUTER_MANDATORY"));
  TROUPE_RETURN_IF_ERROR(SetIntOption(s, ZMQ_ROUTER_HANDOVER, 1, "ZMQ_ROUTER_HANDOVER"));
  TROUPE_RETURN_IF_ERROR(ApplyServerSecurity(s, security));
  TROUPE_ASSIGN_OR_RETURN(l->monitor_, MaybeMonitor(context, s, options));
  if (zmq_bind(s.handle(), endpoint.c_str()) != 0) return ZmqError("binding " + endpoint);
  TROUPE_ASSIGN_OR_RETURN(l->endpoint_, LastEndpoint(s));
  return l;
}

Status Listener::Send(const std::string& peer, Frames& frames) {
  TROUPE_RETURN_IF_ERROR(CheckFrameSizes(frames, options_, "listener " + endpoint_));
  return SendFrames(socket_, &peer, frames, "listener " + endpoint_);
}

Result<Inbound> Listener::Receive(int timeout_ms) {
  TROUPE_RETURN_IF_ERROR(AwaitMessage(socket_, timeout_ms));
  TROUPE_ASSIGN_OR_RETURN(Frames frames, ReceiveFrames(socket_, "listener " + endpoint_));
  // A ROUTER prefixes the sender's routing id; a DEALER sends at least one frame.
  if (frames.size() < 2) return Status::Corrupt("listener " + endpoint_ + ": empty message");
  Inbound in;
  in.peer.assign(frames[0].data<char>(), frames[0].size());
  if (const char* user = zmq_msg_gets(frames[1].handle(), "User-Id")) in.user_id = user;
  in.frames.reserve(frames.size() - 1);
  for (size_t i = 1; i < frames.size(); ++i) in.frames.push_back(std::move(frames[i]));
  return in;
}

LinkCounters Listener::counters() {
  if (!monitor_) return {};
  monitor_->Drain();
  return monitor_->counters();
}

std::vector<LinkEvent> Listener::DrainEvents() { return monitor_ ? monitor_->Drain() : std::vector<LinkEvent>{}; }

// -------------------------------------------------------------- Connection

Connection::Connection(zmq::context_t& context, const LinkOptions& options)
    : socket_(context, zmq::socket_type::dealer), options_(options) {}

Connection::~Connection() { CloseMonitored(socket_, monitor_); }

Result<std::unique_ptr<Connection>> Connection::Connect(zmq::context_t& context, const std::string& endpoint,
                                                        const std::string& node_id, const SecurityConfig& security,
                                                        const std::string& server_public_key,
                                                        const LinkOptions& options) {
  if (node_id.empty() || node_id.size() > 255 || node_id[0] == '\0') {
    return Status::InvalidArgument("node id '" + node_id + "': must be 1..255 bytes and not start with a zero byte");
  }
  std::unique_ptr<Connection> c(new Connection(context, options));
  zmq::socket_t& s = c->socket_;
  TROUPE_RETURN_IF_ERROR(ApplyLinkOptions(s, options));
  TROUPE_RETURN_IF_ERROR(SetStringOption(s, ZMQ_ROUTING_ID, node_id, "ZMQ_ROUTING_ID"));
  TROUPE_RETURN_IF_ERROR(SetIntOption(s, ZMQ_RECONNECT_IVL, options.reconnect_interval_ms, "ZMQ_RECONNECT_IVL"));
  TROUPE_RETURN_IF_ERROR(
      SetIntOption(s, ZMQ_RECONNECT_IVL_MAX, options.reconnect_interval_max_ms, "ZMQ_RECONNECT_IVL_MAX"));
  TROUPE_RETURN_IF_ERROR(ApplyClientSecurity(s, security, server_public_key));
  TROUPE_ASSIGN_OR_RETURN(c->monitor_, MaybeMonitor(context, s, options));
  if (zmq_connect(s.handle(), endpoint.c_str()) != 0) return ZmqError("connecting to " + endpoint);
  c->endpoint_ = endpoint;
  c->node_id_ = node_id;
  return c;
}

Status Connection::Send(Frames& frames) {
  TROUPE_RETURN_IF_ERROR(CheckFrameSizes(frames, options_, "connection to " + endpoint_));
  return SendFrames(socket_, nullptr, frames, "connection to " + endpoint_);
}

Result<Frames> Connection::Receive(int timeout_ms) {
  TROUPE_RETURN_IF_ERROR(AwaitMessage(socket_, timeout_ms));
  return ReceiveFrames(socket_, "connection to " + endpoint_);
}

Status Connection::WaitWritable(int timeout_ms) {
  zmq_pollitem_t item{socket_.handle(), 0, ZMQ_POLLOUT, 0};
  while (true) {
    int rc = zmq_poll(&item, 1, timeout_ms);
    if (rc > 0) return Status::Ok();
    if (rc == 0) {
      return Status::DeadlineExceeded("connection to " + endpoint_ + ": still at its high-water mark after " +
                                      std::to_string(timeout_ms) + " ms");
    }
    if (zmq_errno() != EINTR) return ZmqError("poll");
  }
}

LinkCounters Connection::counters() {
  if (!monitor_) return {};
  monitor_->Drain();
  return monitor_->counters();
}

std::vector<LinkEvent> Connection::DrainEvents() { return monitor_ ? monitor_->Drain() : std::vector<LinkEvent>{}; }

}  // namespace troupe::transport
