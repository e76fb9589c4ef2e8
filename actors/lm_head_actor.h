// LmHead: final norm + output projection, the last model stage (head).
//
// Protocol:
//   StepMessage   hidden states of a session's step (the last shard sends
//                 only the last row): queued for the next batch
//   flush_atom    one LmHead::Forward over the last row of every queued step;
//                 each session's logits [1, vocab] go to the next hop (the
//                 sampler), tagged as one burst
//   burst_atom    a wait for the rest of a burst is over
//   retry_atom    resend what backpressure held back
//
// Every step it hands on carries Step.hidden_digest: the digest of the last
// row it received (scheduling::HiddenDigest). A spot check's shadow step
// (Step.shadow_of) gets only that: no logits, no batch, no tensor.
//
// Batching as in the shard: a flush sent to self lands behind the steps that
// arrived meanwhile, and waits for the rest of a burst. Failures go to the
// scheduler as SessionFailed.
#pragma once

#include <caf/fwd.hpp>

#include <memory>

#include "actors/node_context.h"

namespace troupe::actors {

caf::actor SpawnLmHead(caf::actor_system& system, std::shared_ptr<NodeContext> ctx);

}  // namespace troupe::actors
