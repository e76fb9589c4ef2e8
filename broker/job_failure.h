// JobFailure: what the bridge does when running a job fails — try it again
// later (the entry stays pending, nothing is published) or end it with an
// `error` record in its reply stream and acknowledge it.
//
//   retry          the head's BUSY (its queue is full), and the head not
//                  answering at all (no answer in time, connection refused:
//                  a Status made on this side, without a wire code) — the
//                  job is fine, the cluster is not ready for it yet
//   publish error  everything the head answered with an Error (BAD_REQUEST,
//                  CACHE_FULL, NO_ROUTE, UNAVAILABLE naming a dead node...)
//                  and every other local failure (a refused UTF-8 prompt)
//
// Retries back off: RetryDelayMs(attempt) = 500 ms * 2^attempt, at most 10 s.
// A retry resubmits the same job id, so a job the head did accept before the
// failure is answered from its first token (the skip rule of
// broker/reply_stream.h keeps the reply stream exactly once).
//
// Pure: no sockets.
#pragma once

#include <string>

#include "pipeline/status.h"

namespace troupe::broker {

struct JobFailure {
  bool retry = false;
  std::string code;  // ErrorCode name for the error record ("CACHE_FULL")
  std::string text;  // the message without its leading "CODE: "
};

// Precondition: !status.ok().
JobFailure ClassifyJobFailure(const Status& status);

int RetryDelayMs(int attempt);

}  // namespace troupe::broker
