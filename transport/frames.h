// Frames: one ZeroMQ multipart message, and the status conventions of sending
// and receiving one.
//
// A Troupe message is a header frame (Protobuf, from messages/) and, for
// tensors, one raw frame sent without copying. transport/ does not look
// inside frames; it moves them.
//
// Status codes used by every send/receive in transport/ (pipeline/status.h):
//   kUnavailable would block: the peer's queue is at its high-water mark
//                (backpressure), or nothing arrived (yet) to receive. The
//                frames were not sent and are left intact: retry later.
//   kNotFound    unroutable: no connected peer has that routing id
//                (ROUTER_MANDATORY); nothing was queued.
//   kInvalidArgument  an empty message, an empty routing id, a frame larger
//                than the link's max_message_size.
//   kIoError     the socket failed (e.g. its context was terminated).
// IsWouldBlock / IsUnroutable name the first two.
//
// Ownership: zmq::message_t owns its bytes or, for zero-copy frames, calls
// the given release function once ZeroMQ no longer needs them — on any
// thread, possibly after the sending socket is gone. Received frames are
// 8-byte aligned at best.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <zmq.hpp>

#include "pipeline/status.h"

namespace troupe::transport {

using Frames = std::vector<zmq::message_t>;

bool IsWouldBlock(const Status& status);
bool IsUnroutable(const Status& status);

// A frame holding a copy of `bytes`.
zmq::message_t CopyFrame(std::string_view bytes);
inline zmq::message_t CopyFrame(const void* data, size_t size) {
  return CopyFrame(std::string_view(static_cast<const char*>(data), size));
}

// A frame over `data` without copying. `release(data, hint)` runs exactly once
// when ZeroMQ is done with the bytes, on whatever thread that happens.
zmq::message_t ZeroCopyFrame(void* data, size_t size, zmq_free_fn* release, void* hint);

// A frame over `data` without copying that keeps `owner` (the tensor, the
// buffer...) alive until ZeroMQ is done with the bytes.
zmq::message_t SharedFrame(std::shared_ptr<const void> owner, const void* data, size_t size);

// The frame's bytes as a string_view (valid while the frame lives).
inline std::string_view FrameView(const zmq::message_t& frame) {
  return std::string_view(frame.data<char>(), frame.size());
}

// Low-level, used by the links: sends every frame of `frames` with
// ZMQ_DONTWAIT, prefixed by a `routing_id` frame when that is non-null.
// Codes as above; on would-block/unroutable nothing was taken from `frames`.
// On success the frames are left empty (moved into ZeroMQ). `what` names the
// link in messages.
Status SendFrames(zmq::socket_t& socket, const std::string* routing_id, Frames& frames, std::string_view what);

// Receives one whole multipart message without waiting; kUnavailable
// (would-block) when none is queued.
Result<Frames> ReceiveFrames(zmq::socket_t& socket, std::string_view what);

// Waits up to `timeout_ms` (-1: forever, 0: not at all) for `socket` to be
// readable. OK when it is, kDeadlineExceeded when the wait runs out, kIoError
// on failure. (A link's Receive turns the timeout into would-block.)
Status WaitReadable(zmq::socket_t& socket, int timeout_ms);

}  // namespace troupe::transport
