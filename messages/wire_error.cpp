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
    case v1::NON_FINITE:
      status_code = StatusCode::kCorrupt;
      break;
    case v1::UNKNOWN_TYPE:
    case v1::VERSION_MISMATCH:
    case v1::WRONG_MODEL:
      status_code = StatusCode::kUnsupported;
      break;
    case v1::OVERSIZED:
    case v1::CACHE_FULL:
      status_code = StatusCode::kOutOfRange;
      break;
    case v1::BAD_REQUEST:
    case v1::SESSION_EXISTS:
      status_code = StatusCode::kInvalidArgument;
      break;
    case v1::UNKNOWN_SESSION:
    case v1::UNKNOWN_JOB:
    case v1::NO_ROUTE:
      status_code = StatusCode::kNotFound;
      break;
    case v1::TIMEOUT:
    case v1::CANCELLED:
    case v1::UNAVAILABLE:
    case v1::UNAUTHENTICATED:
      status_code = StatusCode::kIoError;
      break;
    default:
      break;
  }
  return Status(status_code, ToString());
}

v1::Error WireError::ToProto() const {
  v1::Error error;
  error.set_code(code);
  error.set_text(text);
  return error;
}

}  // namespace troupe
