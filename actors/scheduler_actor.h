// Scheduler: takes jobs from clients, runs each as one session round the
// ring, and keeps the registry of shard nodes (head).
//
// Protocol:
//   WireMessage{job_submit}        (a prompt, or a chat conversation of
//                                  system/user/assistant turns) tokenize, pick a route, answer JobStatus
//                                  RUNNING, send SessionOpen (max_length =
//                                  prompt + max_tokens) to every shard on it
//   WireMessage{session_opened}    a shard reserved its cache; when all have,
//                                  start the Sampler's session and send the
//                                  prompt to the Embedding (the prefill)
//   WireMessage{error}             a shard refused or failed a session
//                                  (CACHE_FULL, ...): the job fails
//   WireMessage{job_cancel}        cancel the job
//   WireMessage{job_status_query}  answer JobStatus
//   WireMessage{registry_announce} a shard (re)announces its layers and endpoint
//   WireMessage{metrics_snapshot}  a client's query: ask every shard, answer
//                                  one merged snapshot ("<node>/<name>" keys,
//                                  plus "<head>/route_ready" 1|0: can a job be
//                                  routed through every layer now);
//                                  or a shard's answer to such a query
//   SessionDone                    from the Sampler: close the session on every shard
//   SessionFailed                  from any stage: fail the job, close the session
//   PeerGone                       a client left: cancel its jobs
//   NodeDown                       a shard's connection dropped: fail the
//                                  jobs routed through it, unregister it
//   tick_atom                      time out opens and metrics queries
//   retry_atom                     resend what backpressure held back
//
// Session life:
//
//   submitted ──SessionOpen×N──▶ opening ──all SessionOpened──▶ running
//       │                           │ Error / timeout              │ SessionDone / SessionFailed / cancel
//       ▼                           ▼                              ▼
//   Error to client          Error to client, close       Finish (sampler) or Error, SessionClose×N
//
// A failing job gets an explicit Error naming the problem; every other job
// goes on untouched.
#pragma once

#include <caf/fwd.hpp>

#include <memory>

#include "actors/node_context.h"

namespace troupe::actors {

caf::actor SpawnScheduler(caf::actor_system& system, std::shared_ptr<NodeContext> ctx);

}  // namespace troupe::actors
