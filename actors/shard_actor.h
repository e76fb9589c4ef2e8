// Shard: decoder layers [begin, end) of the model and one KvCache per session.
//
// Protocol (what the actor accepts):
//   WireMessage{session_open}     reserve a KvCache of max_length positions
//                                 against the cache budget; answer
//                                 SessionOpened, or Error CACHE_FULL /
//                                 SESSION_EXISTS / WRONG_MODEL / BAD_REQUEST
//                                 (a session of a new head incarnation — the
//                                 high 32 bits of its id — first closes every
//                                 session of the old one: orphans)
//   WireMessage{session_close}    free the session's cache (unknown: ignored)
//   WireMessage{metrics_query}    answer this node's MetricsSnapshot
//   StepMessage                   hidden states [token_count, hidden] of one
//                                 session's next positions: queued for the
//                                 next batch
//   flush_atom                    run the steps queued so far as one batch
//   burst_atom                    a wait for the rest of a burst is over
//   tick_atom                     close idle sessions; announce to the head
//   retry_atom                    resend what backpressure held back
//
// Batching: a step is queued and, if none is pending, a flush is sent to self;
// it lands behind every message already in the mailbox, so all steps that
// arrived meanwhile form one batch — one Decoder::Forward over all their rows
// (at most one step per session; later ones wait for the next batch). While
// only part of a burst is queued (Step.burst_id: the steps one batch of the
// previous stage sent here), the flush waits for the rest, burst_wait_ms at
// most (scheduling/burst_gate.h). Each output goes straight to the next hop
// named in the step, those to one node tagged as one burst (the last shard
// sends only the last row to the LM head; a step whose route ends here — a
// prefill chunk that needs no logits — stops here).
//
// Inline steps: SpawnShard also sets NodeContext::inline_shard. Through it
// the poll loop runs a one-row step of a lone session itself, when the actor
// is idle, nothing is queued, the step is in no burst, the session is ready
// for exactly that position and the shard's last one-row step took under
// 10 ms — the same Forward and sends as a batch of one, without a CAF
// worker's wake-up. Every handler holds the lock the loop tries; anything
// the loop cannot take at once goes to the actor as above.
//
// Failures are values: a bad step gets an Error to the session's opener (the
// scheduler) whose code is WireCodeOf the failure (messages/wire_error.h: a
// cache without room CACHE_FULL, a bad batch BAD_REQUEST, an exception from
// libtorch, caught here, INTERNAL), and the node goes on serving every other
// session.
#pragma once

#include <caf/fwd.hpp>

#include <memory>

#include "actors/node_context.h"
#include "pipeline/model/decoder.h"

namespace troupe::actors {

caf::actor SpawnShard(caf::actor_system& system, std::shared_ptr<NodeContext> ctx, std::shared_ptr<Decoder> decoder);

}  // namespace troupe::actors
