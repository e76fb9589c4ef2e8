#include "transport/frames.h"

#include <cerrno>

#include "transport/socket_options.h"

namespace troupe::transport {
namespace {

void ReleaseShared(void* /*data*/, void* hint) { delete static_cast<std::shared_ptr<const void>*>(hint); }

}  // namespace

bool IsWouldBlock(const Status& status) { return status.code() == StatusCode::kUnavailable; }
bool IsUnroutable(const Status& status) { return status.code() == StatusCode::kNotFound; }

zmq::message_t CopyFrame(std::string_view bytes) { return zmq::message_t(bytes.data(), bytes.size()); }

zmq::message_t ZeroCopyFrame(void* data, size_t size, zmq_free_fn* release, void* hint) {
  return zmq::message_t(data, size, release, hint);
}

zmq::message_t SharedFrame(std::shared_ptr<const void> owner, const void* data, size_t size) {
  auto* keep = new std::shared_ptr<const void>(std::move(owner));
  // ZeroMQ never writes through an outgoing frame's data pointer.
  return zmq::message_t(const_cast<void*>(data), size, &ReleaseShared, keep);
}

Status SendFrames(zmq::socket_t& socket, const std::string* routing_id, Frames& frames, std::string_view what) {
  if (frames.empty()) return Status::InvalidArgument(std::string(what) + ": empty message");
  if (routing_id != nullptr) {
    if (routing_id->empty()) return Status::InvalidArgument(std::string(what) + ": empty peer id");
    zmq::message_t id(routing_id->data(), routing_id->size());
    if (zmq_msg_send(id.handle(), socket.handle(), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
      int err = zmq_errno();
      if (err == EAGAIN) {
        return Status::Unavailable(std::string(what) + ": peer '" + *routing_id +
                                   "' is at its high-water mark (backpressure); retry later");
      }
      if (err == EHOSTUNREACH) {
        return Status::NotFound(std::string(what) + ": peer '" + *routing_id + "' is not connected (unroutable)");
      }
      return ZmqError(std::string(what) + ": send");
    }
  }
  for (size_t i = 0; i < frames.size(); ++i) {
    int flags = ZMQ_DONTWAIT | (i + 1 < frames.size() ? ZMQ_SNDMORE : 0);
    if (zmq_msg_send(frames[i].handle(), socket.handle(), flags) >= 0) continue;
    int err = zmq_errno();
    if (i == 0 && routing_id == nullptr && err == EAGAIN) {
      return Status::Unavailable(std::string(what) +
                                 ": send queue is at its high-water mark (backpressure); retry later");
    }
    // After the first part ZeroMQ accepts the rest of a message (HWM counts
    // whole messages), so this is a broken socket, not backpressure.
    return ZmqError(std::string(what) + ": send of frame " + std::to_string(i));
  }
  frames.clear();
  return Status::Ok();
}

Result<Frames> ReceiveFrames(zmq::socket_t& socket, std::string_view what) {
  Frames frames;
  bool more = true;
  while (more) {
    zmq::message_t part;
    int flags = frames.empty() ? ZMQ_DONTWAIT : 0;  // later parts are already here
    if (zmq_msg_recv(part.handle(), socket.handle(), flags) < 0) {
      if (frames.empty() && zmq_errno() == EAGAIN) {
        return Status::Unavailable(std::string(what) + ": nothing to receive");
      }
      return ZmqError(std::string(what) + ": receive");
    }
    more = part.more();
    frames.push_back(std::move(part));
  }
  return frames;
}

Status WaitReadable(zmq::socket_t& socket, int timeout_ms) {
  zmq_pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
  while (true) {
    int rc = zmq_poll(&item, 1, timeout_ms);
    if (rc > 0) return Status::Ok();
    if (rc == 0) {
      return Status::DeadlineExceeded("nothing received within " + std::to_string(timeout_ms) + " ms");
    }
    if (zmq_errno() != EINTR) return ZmqError("poll");
  }
}

}  // namespace troupe::transport
