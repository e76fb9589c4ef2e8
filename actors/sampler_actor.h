// Sampler: one Generation per session (head) — turns each step's logits
// into the next token, streams it to the client and closes the loop.
//
// Protocol:
//   SessionStart   from the scheduler: a session begins (its Generation,
//                  client, route and limits)
//   SessionDrop    from the scheduler: forget the session (cancel, failure)
//   StepMessage    logits [1, vocab] of a session's last position: sample;
//                  unless finished, send the token to the embedding (next
//                  step round the ring), then the Token to the client (the
//                  next step is on the critical path, the client is not);
//                  when finished, send the Token, then Finish to the client
//                  and SessionDone to the scheduler. Logits that came in a burst (the LM head's
//                  batch) hold their next steps until the burst's last
//                  member is sampled; they then leave together, one burst
//                  per first shard (burst_atom: burst_wait_ms at most).
//                  A next step also waits, burst_wait_ms at most, while
//                  another session bound for the same first shard is due
//                  back (scheduling/burst_joiner.h): groups that ran apart
//                  leave as one burst
//                  Beam search (SamplingParams.num_beams > 1): logits
//                  [rows, vocab] of every beam row go to the session's
//                  BeamSearch; the next step carries one token per row and
//                  each row's parent (Step.parent_rows); when done, one Token
//                  per returned sequence (Token.beam_sequence, best first),
//                  then Finish
//   SessionResume  replay over a new route: the tokens so far as one
//                  prefill; for beams the prompt, then one step per position
//                  carrying every row's token (each row's whole history)
//   ShadowStart    a spot check (scheduling/spot_checks.h): replay the
//                  session's tokens so far into its shadow over the shadow's
//                  route, then send the shadow a copy of every step
//                  (Step.shadow_of); the LM head's digests of both
//                  (Step.hidden_digest) are compared by position. The first
//                  mismatch, or the session's end (finished, failed, moved,
//                  dropped), sends ShadowEnd to the scheduler and ends it
//   ShadowStop     the shadow failed: send it nothing more
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
