#include "pipeline/status.h"

namespace troupe {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kCorrupt: return "CORRUPT";
    case StatusCode::kUnsupported: return "UNSUPPORTED";
    case StatusCode::kIoError: return "IO_ERROR";
    case StatusCode::kOutOfRange: return "OUT_OF_RANGE";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::kCancelled: return "CANCELLED";
  }
  return "UNKNOWN";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  // A peer's failure already reads "NO_ROUTE: ...": its code names it better.
  if (wire_code_ != 0) return message_;
  return std::string(status_code_name(code_)) + ": " + message_;
}

}  // namespace troupe
