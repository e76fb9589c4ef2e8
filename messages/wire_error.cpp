#include "messages/wire_error.h"

namespace troupe {

std::string ErrorCodeName(v1::ErrorCode code) {
  if (!v1::ErrorCode_IsValid(code)) return "ERROR_CODE_" + std::to_string(static_cast<int>(code));
  return v1::ErrorCode_Name(code);
}

std::string WireError::ToString() const { return ErrorCodeName(code) + ": " + text; }

Status WireError::ToStatus() const {
  StatusCode status_code = StatusCode::kInternal;
  switch (code) {
    case v1::BAD_HEADER:
    case v1::BAD_FRAMES:
    case v1::BAD_TENSOR:
    case v1::NON_FINITE: status_code = StatusCode::kCorrupt; break;
    case v1::UNKNOWN_TYPE:
    case v1::VERSION_MISMATCH:
    case v1::WRONG_MODEL: status_code = StatusCode::kUnsupported; break;
    case v1::OVERSIZED: status_code = StatusCode::kOutOfRange; break;
    case v1::CACHE_FULL: status_code = StatusCode::kResourceExhausted; break;
    case v1::BAD_REQUEST:
    case v1::SESSION_EXISTS: status_code = StatusCode::kInvalidArgument; break;
    case v1::UNKNOWN_SESSION:
    case v1::UNKNOWN_JOB:
    case v1::NO_ROUTE: status_code = StatusCode::kNotFound; break;
    case v1::TIMEOUT: status_code = StatusCode::kDeadlineExceeded; break;
    case v1::CANCELLED: status_code = StatusCode::kCancelled; break;
    case v1::UNAVAILABLE:
    case v1::SESSION_BUSY:
    case v1::BUSY: status_code = StatusCode::kUnavailable; break;
    case v1::SESSION_FULL: status_code = StatusCode::kResourceExhausted; break;
    case v1::UNAUTHENTICATED: status_code = StatusCode::kIoError; break;
    default: break;
  }
  return Status(status_code, ToString(), static_cast<int>(code));
}

Status StatusFromError(const v1::Error& error) { return WireError{error.code(), error.text()}.ToStatus(); }

v1::ErrorCode WireCodeOf(const Status& status) {
  const int carried = status.wire_code();
  if (carried != v1::ERROR_CODE_UNSPECIFIED && v1::ErrorCode_IsValid(carried)) {
    return static_cast<v1::ErrorCode>(carried);
  }
  switch (status.code()) {
    case StatusCode::kResourceExhausted: return v1::CACHE_FULL;
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange: return v1::BAD_REQUEST;
    case StatusCode::kDeadlineExceeded: return v1::TIMEOUT;
    case StatusCode::kCancelled: return v1::CANCELLED;
    case StatusCode::kUnavailable: return v1::UNAVAILABLE;
    default: return v1::INTERNAL;
  }
}

v1::Error WireError::ToProto() const {
  v1::Error error;
  error.set_code(code);
  error.set_text(text);
  return error;
}

}  // namespace troupe
