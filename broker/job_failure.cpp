#include "broker/job_failure.h"

#include <algorithm>

#include "messages/wire_error.h"

namespace troupe::broker {

JobFailure ClassifyJobFailure(const Status& status) {
  JobFailure out;
  const bool from_head = status.wire_code() != 0;
  const StatusCode code = status.code();
  out.retry = from_head ? status.wire_code() == v1::BUSY
                        : (code == StatusCode::kDeadlineExceeded || code == StatusCode::kUnavailable ||
                           code == StatusCode::kIoError);
  out.code = ErrorCodeName(WireCodeOf(status));
  out.text = status.message();
  const std::string prefix = out.code + ": ";
  if (out.text.compare(0, prefix.size(), prefix) == 0) out.text = out.text.substr(prefix.size());
  return out;
}

int RetryDelayMs(int attempt) {
  const int capped = std::clamp(attempt, 0, 5);
  return std::min(500 << capped, 10000);
}

}  // namespace troupe::broker
