// WireError: why a message was rejected or could not be built — an ErrorCode
// (sent back to the peer and counted by RejectCounters) and a text naming the
// problem, e.g. "BAD_TENSOR: shape [2, 3] DTYPE_F32 needs 24 bytes, frame has 20".
//
// WireResult<T> holds a T or a WireError, like Result<T> (pipeline/status.h)
// but keeping the wire code. Plain values: nothing here throws or is shared.
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
  // The same problem as a pipeline Status (BAD_TENSOR -> kCorrupt, ...).
  Status ToStatus() const;
  // The Error body to send back; the caller adds session/step/job ids.
  v1::Error ToProto() const;
};

// "BAD_HEADER", or "ERROR_CODE_<n>" for a value outside the enum.
std::string ErrorCodeName(v1::ErrorCode code);

template <class T>
class [[nodiscard]] WireResult {
 public:
  WireResult(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
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
