#include "transport/monitor.h"

#include <atomic>
#include <cstring>
#include <sstream>

#include "transport/socket_options.h"

namespace troupe::transport {
namespace {

LinkEventKind KindOf(uint16_t event) {
  switch (event) {
    case ZMQ_EVENT_CONNECTED: return LinkEventKind::kConnected;
    case ZMQ_EVENT_ACCEPTED: return LinkEventKind::kAccepted;
    case ZMQ_EVENT_DISCONNECTED: return LinkEventKind::kDisconnected;
    case ZMQ_EVENT_HANDSHAKE_SUCCEEDED: return LinkEventKind::kHandshakeSucceeded;
    case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH: return LinkEventKind::kHandshakeFailedAuth;
    case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL: return LinkEventKind::kHandshakeFailed;
    default: return LinkEventKind::kOther;
  }
}

// Not ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL: see the header.
constexpr int kWatchedEvents = ZMQ_EVENT_CONNECTED | ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED |
                               ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                               ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL;

}  // namespace

std::string LinkEvent::ToString() const {
  std::ostringstream s;
  switch (kind) {
    case LinkEventKind::kConnected: s << "connected"; break;
    case LinkEventKind::kAccepted: s << "accepted a connection"; break;
    case LinkEventKind::kDisconnected: s << "disconnected"; break;
    case LinkEventKind::kHandshakeSucceeded: s << "handshake succeeded"; break;
    case LinkEventKind::kHandshakeFailedAuth:
      s << "handshake refused by authentication (ZAP status " << value << ")";
      break;
    case LinkEventKind::kHandshakeFailed:
      s << "handshake failed (" << zmq_strerror(static_cast<int>(value)) << ")";
      break;
    case LinkEventKind::kOther: s << "event " << value; break;
  }
  s << " on " << endpoint;
  return s.str();
}

SocketMonitor::SocketMonitor(zmq::context_t& context) : pair_(context, zmq::socket_type::pair) {}

Result<std::unique_ptr<SocketMonitor>> SocketMonitor::Attach(zmq::context_t& context, zmq::socket_t& socket) {
  static std::atomic<uint64_t> next{0};
  std::ostringstream endpoint;
  endpoint << "inproc://troupe-monitor-" << socket.handle() << "-" << next.fetch_add(1);
  std::unique_ptr<SocketMonitor> m(new SocketMonitor(context));
  TROUPE_RETURN_IF_ERROR(SetIntOption(m->pair_, ZMQ_LINGER, 0, "ZMQ_LINGER"));
  if (zmq_socket_monitor(socket.handle(), endpoint.str().c_str(), kWatchedEvents) != 0) {
    return ZmqError("zmq_socket_monitor");
  }
  if (zmq_connect(m->pair_.handle(), endpoint.str().c_str()) != 0) {
    return ZmqError("connecting the socket monitor");
  }
  m->attached_ = true;
  return m;
}

void SocketMonitor::Detach(zmq::socket_t& watched) {
  if (!attached_) return;
  attached_ = false;
  (void)Drain();  // room in the pipe, so an event being written now completes
  // Takes the socket's monitor lock: waits for an event being written, then
  // closes libzmq's end. Fails only for a closed socket (nothing to stop then).
  (void)zmq_socket_monitor(watched.handle(), nullptr, 0);
}

std::vector<LinkEvent> SocketMonitor::Drain() {
  std::vector<LinkEvent> events;
  while (true) {
    zmq::message_t head, address;
    if (zmq_msg_recv(head.handle(), pair_.handle(), ZMQ_DONTWAIT) < 0) break;
    if (!head.more() || zmq_msg_recv(address.handle(), pair_.handle(), 0) < 0) break;
    if (head.size() < 6) continue;
    uint16_t id;
    uint32_t value;
    std::memcpy(&id, head.data(), 2);
    std::memcpy(&value, static_cast<const char*>(head.data()) + 2, 4);
    LinkEvent e{KindOf(id), value, std::string(address.data<char>(), address.size())};
    switch (e.kind) {
      case LinkEventKind::kConnected: ++counters_.connected; break;
      case LinkEventKind::kAccepted: ++counters_.accepted; break;
      case LinkEventKind::kDisconnected: ++counters_.disconnected; break;
      case LinkEventKind::kHandshakeSucceeded: ++counters_.handshakes_succeeded; break;
      case LinkEventKind::kHandshakeFailedAuth: ++counters_.auth_failures; break;
      case LinkEventKind::kHandshakeFailed: ++counters_.handshake_failures; break;
      case LinkEventKind::kOther: break;
    }
    events.push_back(std::move(e));
  }
  return events;
}

}  // namespace troupe::transport
