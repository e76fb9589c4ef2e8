// ServeSteps: the receiving side of the multi-process tests. Takes step
// messages (step_messages.h) from any number of peers, checks that each
// peer's steps arrive in order and intact, and answers each peer's "END"
// with "ACK <steps received from it>".
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "transport/link.h"

namespace troupe::transport::testing {

struct PeerProgress {
  uint64_t steps = 0;  // steps received in order so far
  bool ended = false;  // sent END and was answered
};

struct ServeReport {
  std::map<std::string, PeerProgress> peers;  // every peer that got a message through
  std::vector<std::string> errors;            // order, content or protocol violations
  bool timed_out = false;
};

// Serves until every peer in `until_ended` has sent END, or `timeout_ms` passes.
ServeReport ServeSteps(Listener& listener, const std::set<std::string>& until_ended, size_t payload_bytes,
                       int timeout_ms);

}  // namespace troupe::transport::testing
