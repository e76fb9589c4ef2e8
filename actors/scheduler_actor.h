// Scheduler: the head's actor for jobs, sessions and the registry of shard
// nodes. It decodes what arrives, hands it to the job life cycle
// (scheduling/job_lifecycle.h: the states, the queue, rerouting, timeouts)
// or to admission and the metrics fan-out (scheduling/admission.h,
// scheduling/metrics_query.h), and sends what they decide. It decides
// nothing itself beyond the model fingerprint check of an announce.
//
// Protocol:
//   WireMessage{job_submit}        a job id the job book knows: the same job
//                                  is answered as job_attach from token 0,
//                                  another is BAD_REQUEST. Else admit
//                                  (sampling params, prompt or chat turns,
//                                  tokenize, context length; BAD_REQUEST
//                                  otherwise), check room and route (BUSY,
//                                  NO_ROUTE), journal it with its seed (the
//                                  client's or a random one; UNAVAILABLE when
//                                  the journal fails) — now it is accepted —
//                                  answer JobStatus RUNNING, send SessionOpen
//                                  (max_length = min(context, prompt +
//                                  max_tokens)) to every shard on the route
//                                  In the head's first 5 s, until it has had
//                                  a route, a job that finds none waits
//                                  (ticks) for the shards to announce instead
//                                  of NO_ROUTE: a restarted head knows none
//                                  at first
//   WireMessage{session_opened}    a shard reserved its cache; when all have,
//                                  start the Sampler's session and send the
//                                  prompt to the Embedding (the prefill) — or,
//                                  for a rerouted job, SessionResume
//   WireMessage{error}             a shard refused or failed a session: a
//                                  retryable CACHE_FULL before the job runs
//                                  queues it (JobStatus QUEUED to the client,
//                                  the round's sessions closed, retried oldest
//                                  first as cache frees; CACHE_FULL after
//                                  10 min); any other error fails the job
//   WireMessage{job_cancel}        the job's watchers get CANCELLED, the
//                                  canceller its JobStatus (or UNKNOWN_JOB)
//   WireMessage{job_status_query}  JobStatus: QUEUED (position), RUNNING,
//                                  COMPLETED or ABORTED, tokens so far (or
//                                  UNKNOWN_JOB past the retention window)
//   WireMessage{job_attach}        JobStatus, the job's stream from a token
//                                  index, its end (scheduling/job_book.h)
//   WireMessage{registry_announce} a shard (re)announces its layers and
//                                  endpoint (WRONG_MODEL for another model)
//   WireMessage{heartbeat}         a known shard is alive
//   WireMessage{metrics_query}     a client's query: ask every live shard
//                                  (MetricsQuery), answer one merged
//                                  MetricsSnapshot ("<node>/<name>" keys,
//                                  "<head>/route_ready" 1|0, and
//                                  "<node>/unreachable" 1 for a node silent for
//                                  2 s)
//   WireMessage{metrics_snapshot}  a shard's answer to such a query
//   SessionDone                    from the Sampler: close the session everywhere
//   SessionFailed                  from any stage: as WireMessage{error}
//   JobOutput                      from the Sampler: a job's Token,
//                                  PromptLogprobs, Finish or Error, to the book
//   PeerGone                       a client left: it watches nothing more (its
//                                  jobs go on; JobCancel stops a job)
//   NodeDown                       a shard's connection dropped: a learned node
//                                  leaves the registry and every job routed
//                                  through it goes on over another route (the
//                                  sampler replays what it generated); without
//                                  one, or after 4 route changes, the job fails
//                                  UNAVAILABLE. Config nodes stay registered.
//   tick_atom (200 ms)             jobs recovered from the journal run once a
//                                  route exists (30 s at most), ended jobs
//                                  past the retention window are dropped
//                                  (every 10 s), heartbeat expiry (as NodeDown), open
//                                  timeout (30 s: TIMEOUT naming the silent
//                                  shards), queue notices and timeout, the next
//                                  queued job's try, metrics query deadlines
//   closing_atom                   the head's SIGTERM: new jobs are refused
//                                  UNAVAILABLE ("the head is shutting down"),
//                                  queued and recovered jobs get no turn (they
//                                  wait in the journal); the running ones go
//                                  on (NodeCounters::jobs_active counts them)
//   retry_atom                     resend what backpressure held back
//
// A SessionOpen or prefill that cannot be sent fails its job (UNAVAILABLE,
// INTERNAL). A failing job gets an explicit Error naming the problem; every
// other job goes on untouched. Every job the head runs has the job book
// (Origin{kJobBookLink}) as its client. When the head stops, every watcher
// gets UNAVAILABLE; the jobs stay unfinished in the journal and run again
// when the head restarts.
#pragma once

#include <caf/fwd.hpp>

#include <memory>
#include <vector>

#include "actors/node_context.h"
#include "scheduling/job_book.h"

namespace troupe::actors {

// `book` holds the journal, recovered already; `recovered` are its
// unfinished jobs, to run again.
caf::actor SpawnScheduler(caf::actor_system& system, std::shared_ptr<NodeContext> ctx,
                          std::unique_ptr<scheduling::JobBook> book, std::vector<scheduling::JournaledJob> recovered);

}  // namespace troupe::actors
