// WireError: why a message was rejected or could not be built — an ErrorCode
// (sent back to the peer and counted by RejectCounters) and a text naming the
// problem, e.g. "BAD_TENSOR: shape [2, 3] DTYPE_F32 needs 24 bytes, frame has 20".
//
// WireResult<T> holds a T or a WireError, like Result<T> (pipeline/status.h)
// but keeping the wire code. Plain values: nothing here throws or is shared.
//
// Between the two vocabularies: a Status made from a wire error carries the
// peer's ErrorCode unchanged (Status::wire_code()), so it goes on to the
// client, the CLI and the HTTP API as the peer said it; a Status made here is
// reported under the ErrorCode its StatusCode maps to (WireCodeOf).
//
//   ErrorCode                                  StatusCode (ToStatus)
//   BAD_HEADER BAD_FRAMES BAD_TENSOR NON_FINITE kCorrupt
//   UNKNOWN_TYPE VERSION_MISMATCH WRONG_MODEL   kUnsupported
//   OVERSIZED                                   kOutOfRange
//   CACHE_FULL                                  kResourceExhausted
//   BAD_REQUEST SESSION_EXISTS                  kInvalidArgument
//   UNKNOWN_SESSION UNKNOWN_JOB NO_ROUTE        kNotFound
//   TIMEOUT                                     kDeadlineExceeded
//   CANCELLED                                   kCancelled
//   UNAVAILABLE                                 kUnavailable
//   UNAUTHENTICATED                             kIoError
//   INTERNAL, unknown values                    kInternal
//
//   StatusCode (WireCodeOf, nothing carried)    ErrorCode
//   kResourceExhausted                          CACHE_FULL
//   kInvalidArgument, kOutOfRange               BAD_REQUEST
//   kDeadlineExceeded                           TIMEOUT
//   kCancelled                                  CANCELLED
//   kUnavailable                                UNAVAILABLE
//   anything else                               INTERNAL
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

#include "messages/troupe.pb.h"
#include "pipeline/status.h"

namespace troupe {

struct WireError {
  v1::ErrorCode code = v1::INTERNAL;
  std::string text;

  // "BAD_HEADER: header frame is not an Envelope (17 bytes)".
  std::string ToString() const;
  // The same problem as a pipeline Status: the code as in the table above,
  // the message ToString(), and `code` carried as the Status's wire_code().
  Status ToStatus() const;
  // The Error body to send back; the caller adds session/step/job ids.
  v1::Error ToProto() const;
};

// "BAD_HEADER", or "ERROR_CODE_<n>" for a value outside the enum.
std::string ErrorCodeName(v1::ErrorCode code);

// A peer's Error as a Status: WireError{code, text}.ToStatus(), so the
// message reads "CACHE_FULL: shard 'shard-1' ..." and wire_code() is the
// peer's code.
Status StatusFromError(const v1::Error& error);

// The ErrorCode to report `status` under: the peer's code when it carries a
// known one, else the one its StatusCode maps to (table above). Precondition:
// !status.ok() (an ok Status gives INTERNAL).
v1::ErrorCode WireCodeOf(const Status& status);

template <class T>
class [[nodiscard]] WireResult {
 public:
  WireResult(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  WireResult(WireError error) : v_(std::move(error)) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  // Precondition: !ok().
  const WireError& error() const { return std::get<WireError>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, WireError> v_;
};

}  // namespace troupe
