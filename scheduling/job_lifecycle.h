// JobLifecycle: every job the head runs, from an admitted JobSubmit to its
// end — which route it takes, when its sessions open and close, when it
// waits for KV cache, how it goes on after a node dies — as plain data and
// decisions. Each input is a method call with the time passed in; each
// returns the Actions (actions.h) the scheduler actor then carries out. No
// clock, no sockets, no actors: the same inputs give the same actions.
//
// A job runs as one session round the ring (embedding, the shards of its
// route, LM head, sampler). When its route changes it goes on as a new
// session (a new id, fresh caches on the new route's shards); the job id
// stays.
//
//             Submit: JobStatus RUNNING, SessionOpen × route
//                │
//                ▼            last SessionOpened: SessionStart, Prefill
//     ┌──────▶ kOpening ──────────────────────────────────────────▶ kRunning
//     │          │                                                  │    ▲
//     │          │ retryable CACHE_FULL:                  node down │    │ last SessionOpened:
//     │          │ SessionClose × route,                  (below)   │    │ SessionResume
//     │          ▼ JOB_QUEUED                                       ▼    │
//     └─────── kQueued ◀────────── retryable CACHE_FULL ────────── kRerouting
//   its turn,    │                                                  ▲
//   no sampler   └──── its turn, sampler copy: SessionMove, ────────┘
//   copy: SessionOpen        SessionOpen × new route
//   × new route
//
//   A node on the route down (kOpening, kRunning or kRerouting): SessionClose
//   × the surviving shards; the job takes a new route as a new session
//   (SessionOpen × new route) — kRerouting with a SessionMove when the sampler
//   holds a copy, else kOpening.
//
//   Any state ──▶ kFinished: the sampler is done, an error, a timeout, cancel,
//   the client gone, no route. An Error to the client (unless done),
//   SessionDrop when the sampler holds a copy, SessionClose × the route; the
//   job is forgotten.
//
// Rules (those of the scheduler before this split; the queue timeout, which
// never fired there, now does):
// * Open timeout: a round of SessionOpen unanswered for `open_timeout` (30 s)
//   fails the job TIMEOUT naming the silent nodes.
// * Bounded queue: with `max_queued` jobs waiting — queued for cache, or
//   opening for the first time — Refusal answers BUSY (retryable, with the
//   queue depth and a retry hint) for a new job, which the head then does
//   not accept. An accepted job is never refused for want of room in the
//   queue: it keeps its turn past the bound.
// * Queue: a retryable CACHE_FULL while opening (or rerouting) closes this
//   round's sessions and queues the job; another shard's CACHE_FULL of the same
//   round and late SessionOpened for it are ignored. Queued jobs get their next
//   try by priority (higher first), then oldest first, one try at a time, on
//   every close and tick; each try asks the registry for a route (replicas
//   take turns). A job queued longer
//   than `queue_timeout` (10 min) fails CACHE_FULL; meanwhile its client gets
//   JOB_QUEUED at least every `queue_notice` (10 s), with its queue position
//   (the queued jobs whose turn comes before its own: 0 = next).
// * Closing (the head's SIGTERM): BeginClosing stops intake — Refusal answers
//   UNAVAILABLE to every new job — and no queued job gets another try; the
//   jobs that hold a route (Active) run to their end. The queued ones stay in
//   the head's journal and run when it starts again.
// * Node down: jobs whose route has the node (queued ones excepted: they hold
//   nothing) go on over a route without it; a job that holds a sampler copy
//   moves it (SessionMove) and resumes it once every new shard is open
//   (SessionResume). Without a route the job fails UNAVAILABLE naming the
//   node; after `max_reroutes` (4) route changes the next one fails it too.
//   Nodes from the config (fixed) are never removed, so their loss reroutes
//   nothing; a learned node leaves the registry until it announces again.
// * Ids: session ids count up from `first_session_id` (random in the head, so
//   a restarted head does not reuse ids its shards may still hold); job ids
//   are given (the head's job book, job_book.h, chooses them). A job without a
//   seed gets Mix64(its first session id) (the head's jobs always have one:
//   the book journals it). A session reserves
//   min(max_positions, prompt + max_tokens) cache positions.
//
// * Drain: a node leaving on purpose (Drain) takes no new session; each job
//   through it goes on over a route without it as after a node loss — its
//   session on the draining node is closed too, the sampler replays the
//   tokens so far — when another route exists now, else finishes where it
//   is; parked caches and idle kept sessions on it are closed. The node
//   leaves (its link goes down) once its sessions are gone: then NodeDown.
//
// Kept sessions (kept_sessions.h): a job with `keep` opens a named session
// like any job and, when it ends well, leaves its shard session open and its
// tokens (prompt + answer) in the session's context instead of closing. A job
// that continues the session appends its prompt to that context: while the
// session is bound it runs on the same shard session at once (no
// SessionOpen; kRunning; the prefill starts at the first uncached position),
// else it opens a fresh one and prefills the whole context. Either way the
// sampler holds the whole context, so a reroute replays it exactly as it
// replays a single job. A job in a session that fails (or is cancelled)
// leaves the context as it was before the job and the session unbound (its
// shard sessions closed: what the failed job left in them is not the
// context). One job at a time per session (SESSION_BUSY); a context that
// would not leave room for one new token is refused (SESSION_FULL). A session
// idle for `kept_ttl` expires; ClosedKept closes one at once (cancelling its
// job). A node lost closes what bound sessions held on the survivors and
// unbinds them.
//
// Prefix reuse (reusable_caches.h): a job that ends well parks its shard
// session instead of closing it (SessionClose with park) and its tokens go
// into the book of reusable caches. A job that opens fresh shard sessions
// and whose prompt starts with at least `min_reuse` tokens of a parked cache
// takes that cache's route (while its nodes are up) and asks each shard to
// copy those positions (SessionOpen copy_from/copy_length; at most all but
// the prompt's last token, which must run to give logits). It reuses what
// every shard copied (the least SessionOpened.copied) and prefills the rest.
// A parked cache a shard evicted, or that failed, is forgotten, its other
// shards told to close it. A rerouted or queued job opens without reuse.
//
// Thread-safety: none (the scheduler actor's own). The registry is owned here.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "messages/origin.h"
#include "messages/troupe.pb.h"
#include "pipeline/sampling/sampling_params.h"
#include "scheduling/actions.h"
#include "scheduling/admission.h"
#include "scheduling/kept_sessions.h"
#include "scheduling/registry.h"
#include "scheduling/reusable_caches.h"

namespace troupe::scheduling {

enum class JobState {
  kOpening,    // SessionOpen sent to the route's shards; the sampler holds nothing
  kRunning,    // every shard open; the sampler owns the generation
  kQueued,     // refused for want of cache: no session open anywhere, waits its turn
  kRerouting,  // on a new route; the sampler holds the generation so far, to replay
  kFinished,   // done, failed or cancelled: the job is forgotten at once
};

const char* JobStateName(JobState state);

// SplitMix64's finalizer: the seed of a job that did not set one.
uint64_t Mix64(uint64_t x);

struct LifecycleConfig {
  std::string node_id;        // the head: embedding, LM head and sampler
  std::string node_endpoint;  // where the head's stages listen
  std::string fingerprint;    // of the model, sent with every SessionOpen
  int64_t n_layers = 0;
  int64_t max_positions = 0;
  uint64_t first_session_id = 0;  // the first session is first_session_id + 1
  std::chrono::milliseconds open_timeout = std::chrono::seconds(30);
  int max_reroutes = 4;
  std::chrono::milliseconds queue_timeout = std::chrono::minutes(10);
  std::chrono::milliseconds queue_notice = std::chrono::seconds(10);
  std::chrono::milliseconds kept_ttl = std::chrono::minutes(5);  // idle kept sessions expire
  int64_t kept_max_length = 2048;                                // a kept session's positions when its job names none
  bool prefix_reuse = true;                                      // park finished jobs' caches and copy shared prefixes
  double int8_link_rtt_ms = 0;  // > 0: int8 hidden states over links slower than this (RouteThrough)
  // Whether the head runs the embedding and the LM head itself; a stage it
  // does not run goes to a stage node (Registry::StageNode) on each route.
  bool local_embedding = true, local_lm_head = true;
  int64_t min_reuse = 16;                                          // the shortest shared prefix worth a copy
  size_t max_parked = 256;                                         // parked caches the head keeps track of
  size_t max_queued = 1024;                                        // jobs waiting for cache at most; past that, BUSY
  std::chrono::milliseconds busy_retry = std::chrono::seconds(5);  // BUSY's retry hint
};

// What draining a node did to the jobs through it.
struct DrainCounts {
  uint32_t moved = 0;    // gone on over a route without it
  uint32_t staying = 0;  // finishing on it: no other route serves their layers now
};
// "node 'shard-1' is draining: 2 job(s) moved to other nodes, 0 finishing on it".
std::string DrainText(const std::string& node_id, const DrainCounts& counts);

// What the head counts of prompts: tokens prefilled vs reused from a cache.
struct PrefillCounts {
  uint64_t prefilled = 0;  // prompt tokens sent through the ring
  uint64_t reused = 0;     // prompt tokens a kept session's cache already held
};

class JobLifecycle {
 public:
  JobLifecycle(LifecycleConfig config, Registry registry);

  Registry& registry() { return registry_; }
  // A fresh session id for a session outside any job (a spot check's shadow:
  // spot_checks.h); it carries this head's incarnation like every other.
  uint64_t NewSessionId() { return ++next_session_; }
  const Registry& registry() const { return registry_; }

  // ----------------------------------------------------------- inputs

  // Why a new job cannot be accepted now: UNAVAILABLE (closing), BUSY (the
  // queue holds `max_queued` jobs) or NO_ROUTE (no live node serves some
  // layer); nullopt when it can. The error names no job or session.
  std::optional<v1::Error> Refusal(Clock::time_point now);

  // The head is shutting down (see "Closing" above). For good: there is no
  // way back but a restart.
  void BeginClosing() { closing_ = true; }

  // An admitted job (`job_id` free): NO_ROUTE to the client when the
  // registry has none; else JobStatus RUNNING and SessionOpen to every shard
  // (kOpening).
  Actions Submit(uint64_t job_id, const Origin& client, uint64_t request_id, AdmittedJob job, Clock::time_point now);

  // A shard reserved its cache, having copied `copied` positions of the
  // prefix asked for. The last of the round starts the job (SessionStart +
  // Prefill) or resumes it (SessionResume) -> kRunning. Unknown sessions and
  // answers to a queued job's round are ignored.
  Actions Opened(uint64_t session_id, const std::string& node_id, int64_t copied, Clock::time_point now);

  // A shard or stage refused or failed the session: a retryable CACHE_FULL
  // before kRunning queues the job, anything else fails it. Unknown sessions
  // are ignored.
  Actions Failed(uint64_t session_id, const v1::Error& error, Clock::time_point now);

  // The executor could not send a SessionOpen or the Prefill of `session_id`:
  // the job fails with `code` and `text`, reported by the head.
  Actions SendFailed(uint64_t session_id, v1::ErrorCode code, const std::string& text, Clock::time_point now);

  // The sampler finished the session (Finish already sent); `tokens` are its
  // prompt and answer. Closes it (a kept session's job: keeps it, `tokens`
  // becoming the session's context) -> kFinished.
  Actions Done(uint64_t session_id, std::vector<int32_t> tokens, Clock::time_point now);

  // A client closes kept session `name`: KeptSessionClosed to `from` (its
  // running job ends CANCELLED), or UNKNOWN_SESSION saying why not.
  Actions CloseKept(const Origin& from, uint64_t request_id, const std::string& name, Clock::time_point now);

  // KeptSessionList of the live kept sessions to `from`.
  Actions ListKept(const Origin& from, uint64_t request_id, Clock::time_point now) const;

  // A client cancels job `job_id`: CANCELLED to the job's client, or
  // UNKNOWN_JOB to `from` when there is no such job.
  Actions Cancel(const Origin& from, uint64_t request_id, uint64_t job_id, Clock::time_point now);

  // Node `node_id` is gone (`how`: "disconnected", "stopped answering ...").
  Actions NodeDown(const std::string& node_id, const std::string& how, Clock::time_point now);

  // Node `node_id` is alive but cannot be used (`how`, e.g. its link is
  // refused), or a node before it on routes cannot reach it: it stays
  // registered (the registry keeps it out of new routes while its trouble
  // lasts: SetTrouble / SetUnreachable first) and every job through it goes
  // on over another route, as for NodeDown, or fails UNAVAILABLE naming `how`.
  Actions NodeTroubled(const std::string& node_id, const std::string& how, Clock::time_point now);

  // Node `node_id` is leaving (an operator's drain, or its own SIGTERM): see
  // "Drain" above. `counts` (may be null) gets the jobs moved and staying.
  // A node the registry does not know is left alone (counts zero).
  Actions Drain(const std::string& node_id, Clock::time_point now, DrainCounts* counts);

  // Housekeeping, every tick: nodes silent past the registry's ttl go down;
  // JOB_QUEUED notices; open and queue timeouts; the oldest queued job's try.
  Actions Tick(Clock::time_point now);

  // The head stops: UNAVAILABLE to every job's client; every job is forgotten.
  Actions Shutdown();

  // ---------------------------------------------------------- queries

  // Whether a new session would find a route now (no replica's turn taken):
  // shards for every layer and a node for each stage the head does not run;
  // and why not ("" when it would).
  bool CanRoute(Clock::time_point now) const;
  std::string RouteProblem(Clock::time_point now) const;

  bool Has(uint64_t session_id) const { return jobs_.count(session_id) != 0; }
  // The job's state; nullopt for a job never seen or already finished.
  std::optional<JobState> StateOf(uint64_t job_id) const;
  // The job's current session id, 0 for none.
  uint64_t SessionOf(uint64_t job_id) const;
  // JOB_QUEUED (with its queue position) while kQueued, else JOB_RUNNING, and
  // its session; nullopt for a job it does not run.
  std::optional<LiveState> Live(uint64_t job_id) const;
  // Every job it runs or queues, for the admin console (console_views.h).
  struct JobView {
    uint64_t job_id = 0, session_id = 0;
    LiveState live;
    std::vector<std::string> route;  // node ids, embedding first
    int32_t priority = 0;
    int32_t max_tokens = 0;
    size_t prompt_tokens = 0;
    Clock::time_point submitted;
  };
  std::vector<JobView> Views() const;
  size_t size() const { return jobs_.size(); }
  // Jobs that ever had to wait for cache.
  uint64_t jobs_queued_total() const { return jobs_queued_total_; }
  // Jobs moved to another route (a node died, failed, drained) and drains asked.
  uint64_t reroutes_total() const { return reroutes_total_; }
  uint64_t drains_total() const { return drains_total_; }
  // Jobs waiting for cache (or a route) now.
  size_t queued() const;
  // Jobs that are not queued: opening, running or moving to another route.
  size_t Active() const;
  bool closing() const { return closing_; }
  const KeptSessions& kept() const { return kept_; }
  const PrefillCounts& prefill_counts() const { return prefill_; }
  const ReusableCaches& reusable() const { return reusable_; }

 private:
  struct Job {
    uint64_t job_id = 0;
    uint64_t session_id = 0;
    uint64_t request_id = 0;
    Origin client;
    bool stream = true;
    std::vector<int32_t> prompt;
    SamplingParams params;
    int64_t max_length = 0;
    std::vector<v1::RouteHop> route;  // its hops, embedding first
    std::set<std::string> waiting;    // shards yet to confirm this round's SessionOpen
    JobState state = JobState::kOpening;
    bool sampler_holds = false;  // the sampler has the generation (started once)
    int reroutes = 0;
    Clock::time_point submitted;
    Clock::time_point attempt;                      // when this round of SessionOpen began
    std::optional<Clock::time_point> queued_since;  // first refusal for want of cache
    std::optional<Clock::time_point> noticed;       // last JOB_QUEUED sent
    std::string kept;                               // the kept session it runs in, empty for none
    int64_t cached = 0;                             // prompt positions its shard session holds already
    uint64_t copy_from = 0;                         // prefix reuse: the parked session its shards copy from
    int32_t priority = 0;                           // higher goes first in the queue
  };

  // A route for a new session: shards for every layer, and stage nodes for
  // the stages the head does not run; NotFound naming what is missing.
  Result<std::vector<v1::RouteHop>> NewRoute(Clock::time_point now);
  void OpenOnShards(Job& job, Clock::time_point now, Actions& out);
  // Starts `job` (just opened, or continuing a bound kept session): SessionStart, Prefill.
  void Start(Job& job, Clock::time_point now, Actions& out);
  // A job in kept session `admitted.session`: refused, or the Job to run.
  std::optional<Job> InKeptSession(Job job, const AdmittedJob& admitted, Clock::time_point now, Actions& out);
  // Prefix reuse for a job about to open fresh shard sessions: takes the
  // route of the parked cache sharing the longest prefix. False when none fits.
  bool ReusePrefix(Job& job, Clock::time_point now);
  // SessionClose to the shards of `route` (but `skip`) for session `session_id`.
  void CloseRoute(uint64_t session_id, const std::vector<v1::RouteHop>& route, Actions& out,
                  const std::string& skip = "") const;
  // Closes the shard session of kept session `s` on its route (but `skip`) and unbinds it.
  void UnbindKept(KeptSession& s, Actions& out, const std::string& skip = "");
  void CloseOnShards(const Job& job, Actions& out, const std::string& skip = "") const;
  void Fail(uint64_t session_id, const v1::Error& error, Clock::time_point now, Actions& out);
  void End(uint64_t session_id, const v1::Error& error, Clock::time_point now, Actions& out);
  void Close(uint64_t session_id, Clock::time_point now, Actions& out);
  uint32_t QueuePosition(const Job& job) const;
  // Whether queued job `a` gets its turn before queued job `b`.
  static bool Before(const Job& a, const Job& b);
  void Enqueue(Job& job, const v1::Error& why, Clock::time_point now, Actions& out);
  // Jobs waiting now: queued for cache, or opening for the first time.
  size_t QueueDepth() const;
  // BUSY: the queue holds max_queued jobs already.
  v1::Error Busy() const;
  void NoticeQueued(Job& job, Clock::time_point now, Actions& out);
  void DispatchQueued(Clock::time_point now, Actions& out);
  void Dispatch(uint64_t session_id, v1::ErrorCode code, const std::string& why, Clock::time_point now, Actions& out);
  // `node` (gone, or alive but leaving: `alive`, whose session is closed too) on
  // the session's route: the job goes on over another route.
  void Reroute(uint64_t session_id, const std::string& node, const std::string& how, Clock::time_point now,
               Actions& out, bool alive = false);
  void Down(const std::string& node_id, const std::string& how, Clock::time_point now, Actions& out);
  // Every job, parked cache and kept session through `node_id` leaves it.
  void RerouteThrough(const std::string& node_id, const std::string& how, Clock::time_point now, Actions& out);
  v1::Error HeadError(v1::ErrorCode code, const std::string& text, uint64_t session_id) const;
  // The answer to a cancel or status query naming a job the head does not hold.
  Reply UnknownJob(const Origin& to, uint64_t request_id, uint64_t job_id) const;

  LifecycleConfig config_;
  Registry registry_;
  std::map<uint64_t, Job> jobs_;               // by session id
  std::map<uint64_t, uint64_t> job_sessions_;  // job id -> session id
  uint64_t next_session_ = 0;
  uint64_t jobs_queued_total_ = 0;
  uint64_t reroutes_total_ = 0, drains_total_ = 0;
  bool closing_ = false;
  KeptSessions kept_;
  ReusableCaches reusable_;
  PrefillCounts prefill_;
};

}  // namespace troupe::scheduling
