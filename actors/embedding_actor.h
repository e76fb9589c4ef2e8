// Embedding: token ids -> hidden states [tokens, hidden] f32, the first
// stage of the ring (head).
//
// Protocol:
//   StepMessage   token ids of a session's next positions (the prompt from
//                 the scheduler, each sampled token from the sampler) with
//                 the rest of the route: embedded and sent to the first shard
//   flush_atom    embed the steps held behind the burst gate
//   burst_atom    the gate's wait for the rest of a burst ended
//   retry_atom    resend what backpressure held back
//
// A step of a burst (Step.burst_size > 1: the sampler's batch) is held
// until the rest of its burst is here (scheduling/burst_gate.h), so that
// the burst's steps leave for their first shard as one StepBurst message; a
// lone step is embedded and sent at once. A lone step from a local stage's
// actor (the scheduler's prompt, the sampler's next step) is embedded and
// sent on that actor's own thread when this actor is idle
// (NodeContext::inline_embedding, an InlineStage), before the sender goes
// on with the rest of its handler.
//
// A long prompt is sent as chunks of at most kPrefillChunk positions (as the
// single-process engine does); every chunk but the last ends at the last
// shard, since only the last position's logits are needed. Stateless: the
// route travels with each step. Failures (an id outside the vocabulary) go
// to the scheduler as SessionFailed.
#pragma once

#include <caf/fwd.hpp>

#include <cstdint>
#include <memory>

#include "actors/node_context.h"

namespace troupe::actors {

constexpr int64_t kPrefillChunk = 512;

caf::actor SpawnEmbedding(caf::actor_system& system, std::shared_ptr<NodeContext> ctx);

}  // namespace troupe::actors
