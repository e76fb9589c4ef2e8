// The messages the actors of one node send each other (CAF, in-process only;
// between nodes everything is a troupe.v1 Envelope, see messages/troupe.proto).
//
//   bridge ──WireMessage / StepMessage──▶ any actor      (decoded, validated)
//   Scheduler ──SessionStart / SessionDrop / SessionMove / SessionResume──▶ Sampler
//   Scheduler ──ShadowStart / ShadowStop──▶ Sampler (spot checks)
//   Sampler ──SessionDone──▶ Scheduler
//   Sampler ──ShadowEnd──▶ Scheduler (spot checks)
//   Sampler ──JobOutput──▶ Scheduler (what it sends a job's client goes to the job book)
//   any stage ──SessionFailed──▶ Scheduler
//   bridge ──PeerGone / NodeDown / NodeTrouble──▶ Scheduler
//
// Registered once, here: every type is a local-only message type (CAF may
// not serialize it), allowed with CAF_ALLOW_UNSAFE_MESSAGE_TYPE.
#pragma once

#include <ATen/core/Tensor.h>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "messages/frames_codec.h"
#include "messages/origin.h"
#include "messages/troupe.pb.h"
#include "pipeline/sampling/sampling_params.h"
#include "scheduling/actions.h"
#include "scheduling/spot_checks.h"

namespace troupe::actors {

// Scheduler -> Sampler: the life cycle's actions, sent as they are
// (scheduling/actions.h says what each means).
using scheduling::SessionDrop;
using scheduling::SessionMove;
using scheduling::SessionResume;
using scheduling::SessionStart;
using scheduling::ShadowStart;
using scheduling::ShadowStop;
// Sampler -> Scheduler: done with a spot check's shadow (scheduling/spot_checks.h).
using scheduling::ShadowEnd;

using Clock = std::chrono::steady_clock;

// Node -> every actor once all handles are set (actors are spawned lazily).
using start_atom = caf::atom_constant<caf::atom("start")>;
// Timers an actor sends itself.
using flush_atom = caf::atom_constant<caf::atom("flush")>;  // run the batch collected so far
using burst_atom = caf::atom_constant<caf::atom("burst")>;  // a wait for the rest of a burst is over
using tick_atom = caf::atom_constant<caf::atom("tick")>;    // periodic housekeeping
using retry_atom = caf::atom_constant<caf::atom("retry")>;  // resend what backpressure held back
// Node -> the head's scheduler on SIGTERM: take no new job, let the running ones finish.
using closing_atom = caf::atom_constant<caf::atom("closing")>;

// A message from another node, a client, or a local actor standing in for
// one: a decoded, validated envelope (never a Step: see StepMessage).
struct WireMessage {
  Origin from;
  v1::Envelope envelope;
};

// One step of one session for the stage named in step.hop: token ids for the
// embedding (tensor undefined), hidden states [rows, hidden] f32 for a shard
// or the LM head, logits [1, vocab] f32 for the sampler.
struct StepMessage {
  Origin from;
  uint64_t request_id = 0;
  v1::Step step;
  at::Tensor tensor;
  int64_t arrived_ns = 0;  // steady clock, when the node took it in (DeliverLocal): hop timing's start
};

// Sampler -> Scheduler: the session finished (Finish already sent); close it
// everywhere, or keep it as its kept session's, `tokens` (prompt + answer)
// becoming the session's context.
struct SessionDone {
  uint64_t session_id = 0;
  std::vector<int32_t> tokens;
};

// Sampler -> Scheduler: a message for a job's client (Token, PromptLogprobs,
// Finish, Error), sent to Origin{kJobBookLink}: the scheduler's job book keeps
// it and copies it to the job's watchers.
struct JobOutput {
  v1::Envelope envelope;
};

// Any stage -> Scheduler: a session failed here; fail its job and close it.
struct SessionFailed {
  uint64_t session_id = 0;
  v1::Error error;
};

// Bridge -> Scheduler: a message to this client could not be delivered (it left).
struct PeerGone {
  Origin client;
};

// Bridge -> Scheduler: the connection to this node dropped (the process is
// gone, or the network): its sessions fail, it leaves the registry until it
// announces itself again.
struct NodeDown {
  std::string node_id;
};

// Bridge / ZAP handler -> Scheduler: the head cannot use node `node_id`
// now — its link from the head is in trouble (`link`: refused, failing
// handshakes; cleared by an empty text once a handshake succeeds), or the
// head's allowlist refused its key (cleared when the node is heard from).
struct NodeTrouble {
  std::string node_id;
  std::string text;  // empty: the trouble is over
  bool link = true;  // from the head's link to it; false: its key was refused here
};

}  // namespace troupe::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::actors::WireMessage)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::actors::StepMessage)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::scheduling::SessionStart)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::scheduling::SessionDrop)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::scheduling::SessionMove)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::scheduling::SessionResume)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::actors::SessionDone)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::actors::SessionFailed)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::actors::JobOutput)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::actors::PeerGone)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::actors::NodeDown)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::actors::NodeTrouble)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::scheduling::ShadowStart)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::scheduling::ShadowStop)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::scheduling::ShadowEnd)
