// Actions: what the job life cycle (job_lifecycle.h) decides and the
// scheduler actor carries out — plain data, in the order they are to happen.
//
//   Reply          an envelope (JobStatus, Error, KeptSessionList...) to a client
//   ToNode         an envelope (SessionOpen or SessionClose) to a shard node
//   SessionStart   the head's sampler takes over a freshly opened session
//   SessionMove    the sampler re-keys a session moved to a new route
//   SessionResume  every shard of the moved session's route is open: replay
//   SessionDrop    the sampler forgets a session (cancelled or failed)
//   ShadowStart    the sampler runs a spot check's shadow beside a session
//   ShadowStop     the sampler stops sending to a failed shadow
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

// To the sampler: a session is open on every shard; the sampler owns its
// generation from now on. (The actions below that go to the sampler are sent
// to it as they are, as local CAF messages: actors/local_messages.h.)
struct SessionStart {
  uint64_t session_id = 0;
  uint64_t job_id = 0;
  Origin client;                // where Token and Finish go
  uint64_t request_id = 0;      // the client's JobSubmit request id
  bool stream = true;           // send a Token per token
  std::vector<int32_t> prompt;  // token ids: the whole context before generating
  int64_t cached = 0;           // of them, those already in the shards' caches (a kept session's)
  SamplingParams params;
  int64_t max_length = 0;               // cache positions reserved on every shard
  std::vector<v1::RouteHop> route;      // its hops, embedding first
  Clock::time_point submitted, opened;  // for Finish timings
};

// To the sampler: a node on the session's route is gone; the session goes on
// as `new_id` over `route` (fresh sessions on the shards). The sampler re-keys
// what it holds and sends nothing until SessionResume; logits still in flight
// for `old_id` find no session and are dropped.
struct SessionMove {
  uint64_t old_id = 0;
  uint64_t new_id = 0;
  std::vector<v1::RouteHop> route;
};

// To the sampler: every shard of a moved session's new route is open. The
// sampler replays prompt + tokens so far as one prefill and generation goes
// on where it stopped, with the same tokens: prefill computes bit for bit what
// step-by-step decoding did, and sampling is a pure function of (seed, step).
struct SessionResume {
  uint64_t session_id = 0;
};

// To the sampler: forget a session (cancelled or failed); send nothing more for it.
struct SessionDrop {
  uint64_t session_id = 0;
};

// To the sampler: every shard of a spot check's shadow (spot_checks.h) is
// open; replay session `session_id` into `shadow_id` over `route` and send
// the shadow every step of the session from now on.
struct ShadowStart {
  uint64_t session_id = 0;
  uint64_t shadow_id = 0;
  std::vector<v1::RouteHop> route;
};

// To the sampler: the shadow of session `session_id` failed; send it nothing
// more (and report no ShadowEnd for it).
struct ShadowStop {
  uint64_t session_id = 0;
};

// The prompt from its first position not yet cached (0 unless the job
// continues a kept session); step.rest_of_route is the route, embedding first.
struct Prefill {
  uint64_t session_id = 0;
  v1::Step step;
};

// A line for the node's log (pipeline/log.h), with the job and session it
// is about when there are (0: none).
struct Log {
  std::string text;
  uint64_t job_id = 0, session_id = 0;
  bool warn = false;  // a problem, not only news
};

using Action = std::variant<Reply, ToNode, SessionStart, SessionMove, SessionResume, SessionDrop, Prefill, Log,
                            ShadowStart, ShadowStop>;
using Actions = std::vector<Action>;

// What a JobStatus says of a live job beyond the job book (job_book.h): the
// life cycle's state (JOB_QUEUED or JOB_RUNNING), queue position and session.
struct LiveState {
  v1::JobState state = v1::JOB_RUNNING;
  uint32_t queue_position = 0;
  uint64_t session_id = 0;
};

// A JobStatus envelope answering request `request_id`; `queue_position` (the
// queued jobs ahead of this one) is sent with JOB_QUEUED only.
v1::Envelope JobStatusReply(uint64_t request_id, uint64_t job_id, v1::JobState state, uint64_t session_id,
                            uint32_t queue_position = 0);

}  // namespace troupe::scheduling
