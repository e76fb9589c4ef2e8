#include "transport/socket_options.h"

#include <cstring>

namespace troupe::transport {

Status ZmqError(std::string_view what) { return Status::IoError(std::string(what) + ": " + zmq_strerror(zmq_errno())); }

Status SetIntOption(zmq::socket_t& socket, int option, int value, const char* name) {
  if (zmq_setsockopt(socket.handle(), option, &value, sizeof(value)) != 0) {
    return ZmqError(std::string("setting ") + name + " = " + std::to_string(value));
  }
  return Status::Ok();
}

Status SetInt64Option(zmq::socket_t& socket, int option, int64_t value, const char* name) {
  if (zmq_setsockopt(socket.handle(), option, &value, sizeof(value)) != 0) {
    return ZmqError(std::string("setting ") + name + " = " + std::to_string(value));
  }
  return Status::Ok();
}

Status SetStringOption(zmq::socket_t& socket, int option, std::string_view value, const char* name) {
  if (zmq_setsockopt(socket.handle(), option, value.data(), value.size()) != 0) {
    return ZmqError(std::string("setting ") + name);
  }
  return Status::Ok();
}

Result<std::string> LastEndpoint(zmq::socket_t& socket) {
  char buf[1024] = {};
  size_t len = sizeof(buf);
  if (zmq_getsockopt(socket.handle(), ZMQ_LAST_ENDPOINT, buf, &len) != 0) {
    return ZmqError("reading ZMQ_LAST_ENDPOINT");
  }
  return std::string(buf, strnlen(buf, len));
}

}  // namespace troupe::transport
