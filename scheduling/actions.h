// Actions: what the job life cycle (job_lifecycle.h) decides and the
// scheduler actor carries out — plain data, in the order they are to happen.
//
//   Reply          an envelope (JobStatus or Error) to a client
//   ToNode         an envelope (SessionOpen or SessionClose) to a shard node
//   SamplerStart   the head's sampler takes over a freshly opened session
//   SamplerMove    the sampler re-keys a session moved to a new route
//   SamplerResume  every shard of the moved session's route is open: replay
//   SamplerDrop    the sampler forgets a session (cancelled or failed)
//   Prefill        the prompt to the embedding, first hop of the ring
//   Log            one line for the head's log
//
// The executor reports a send that fails for a SessionOpen or a Prefill back
// to the life cycle (JobLifecycle::SendFailed) and skips what is left for a
// session the life cycle no longer knows (JobLifecycle::Has).
//
// Plain values; no sockets, no actors.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "messages/origin.h"
#include "messages/troupe.pb.h"
#include "pipeline/sampling/sampling_params.h"

namespace troupe::scheduling {

using Clock = std::chrono::steady_clock;

struct Reply {
  Origin client;
  v1::Envelope envelope;
};

struct ToNode {
  std::string node_id;
  std::string endpoint;
  uint64_t session_id = 0;  // the session the envelope is about
  v1::Envelope envelope;
};

// Mirrors actors::SessionStart field for field.
struct SamplerStart {
  uint64_t session_id = 0;
  uint64_t job_id = 0;
  Origin client;                // where Token and Finish go
  uint64_t request_id = 0;      // the client's JobSubmit request id
  bool stream = true;           // send a Token per token
  std::vector<int32_t> prompt;  // token ids
  SamplingParams params;
  int64_t max_length = 0;               // cache positions reserved on every shard
  std::vector<v1::RouteHop> route;      // its hops, embedding first
  Clock::time_point submitted, opened;  // for Finish timings
};

struct SamplerMove {
  uint64_t old_id = 0;
  uint64_t new_id = 0;
  std::vector<v1::RouteHop> route;
};

struct SamplerResume {
  uint64_t session_id = 0;
};

struct SamplerDrop {
  uint64_t session_id = 0;
};

// The whole prompt as step 0; step.rest_of_route is the route, embedding first.
struct Prefill {
  uint64_t session_id = 0;
  v1::Step step;
};

struct Log {
  std::string text;
};

using Action = std::variant<Reply, ToNode, SamplerStart, SamplerMove, SamplerResume, SamplerDrop, Prefill, Log>;
using Actions = std::vector<Action>;

// A JobStatus envelope answering request `request_id`; `queue_position` (the
// queued jobs ahead of this one) is sent with JOB_QUEUED only.
v1::Envelope JobStatusReply(uint64_t request_id, uint64_t job_id, v1::JobState state, uint64_t session_id,
                            uint32_t queue_position = 0);

}  // namespace troupe::scheduling
