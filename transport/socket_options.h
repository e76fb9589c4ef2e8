// Small helpers over the raw ZeroMQ socket API that turn errno into Status,
// so the rest of transport/ reads as a chain of `if (!s.ok())`.
//
// Thread-safety: each call touches only the socket it is given.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <zmq.hpp>

#include "pipeline/status.h"

namespace troupe::transport {

// IoError "<what>: <zmq_strerror(errno)>" for the current zmq_errno().
Status ZmqError(std::string_view what);

// zmq_setsockopt with an int, int64 or byte-string value; `name` names the
// option in the error message ("ZMQ_SNDHWM").
Status SetIntOption(zmq::socket_t& socket, int option, int value, const char* name);
Status SetInt64Option(zmq::socket_t& socket, int option, int64_t value, const char* name);
Status SetStringOption(zmq::socket_t& socket, int option, std::string_view value, const char* name);

// ZMQ_LAST_ENDPOINT: the endpoint the socket really bound ("tcp://127.0.0.1:41234"
// after binding "tcp://127.0.0.1:*").
Result<std::string> LastEndpoint(zmq::socket_t& socket);

}  // namespace troupe::transport
