// Sampler: one Generation per session (head) — turns each step's logits
// into the next token, streams it to the client and closes the loop.
//
// Protocol:
//   SessionStart   from the scheduler: a session begins (its Generation,
//                  client, route and limits)
//   SessionDrop    from the scheduler: forget the session (cancel, failure)
//   StepMessage    logits [1, vocab] of a session's last position: sample;
//                  send Token to the client; unless finished, send the token
//                  to the embedding (next step round the ring); when
//                  finished, send Finish to the client and SessionDone to the
//                  scheduler
//   tick_atom      fail sessions without progress for step_timeout_seconds
//   retry_atom     resend what backpressure held back
//
// Finish carries the counts and timings the client prints (the summary line
// of `troupe generate`): prompt/generated tokens, decode steps, prefill
// (first_token_seconds) and decode seconds.
#pragma once

#include <caf/fwd.hpp>

#include <memory>

#include "actors/node_context.h"

namespace troupe::actors {

caf::actor SpawnSampler(caf::actor_system& system, std::shared_ptr<NodeContext> ctx);

}  // namespace troupe::actors
