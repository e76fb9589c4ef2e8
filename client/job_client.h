// JobClient: the client side of a head's job endpoint — what `troupe submit`,
// `troupe status` and `cluster up`'s readiness probe use. A DEALER (random
// routing id) to the head's job ROUTER: plain on loopback, CURVE when a server
// key is given (with the client's own key file, or a fresh key pair that the
// head's allowlist must then know).
//
// Timeouts keep a dead cluster from hanging the caller: the first answer must
// come within `first_reply_ms`, and later messages of a running job no more
// than `idle_ms` apart.
//
// A head that restarts (crashed, or stopped saying UNAVAILABLE retryable: the
// job is in its journal) loses no job: the socket monitor sees the link drop
// and come back, and the client follows its job again — an accepted job by
// JobAttach from its next token (tokens it has already are skipped), a submit
// not yet answered by sending it again when it names a job id (the head
// answers a known id as an attach: the job never runs twice); without one it
// fails UNAVAILABLE saying why. At most 8 times per job; after a retryable
// UNAVAILABLE it waits 60 s at most for the head to come back.
//
// Failures: an Error from the head comes back as a Status (StatusFromError,
// messages/wire_error.h) that carries the head's ErrorCode (WireCodeOf
// reads it back) and whose message is the error's code name and text
// ("CACHE_FULL: shard 'shard-1' ..."); no answer in time as kDeadlineExceeded
// naming the endpoint; a wait its caller gave up as kCancelled.
// Thread-safety: one thread at a time.
// Dropping a client mid-job does not end its job (the head keeps it and its
// answer for Attach); Cancel or CancelJob does.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "messages/troupe.pb.h"
#include "pipeline/status.h"

namespace troupe::client {

struct JobClientOptions {
  std::string endpoint;         // the head's job endpoint, "tcp://127.0.0.1:5600"
  std::string server_key;       // Z85, or a node.pub file holding it: use CURVE with this server key
  std::string client_key_file;  // node.key of this client (CURVE); empty = a fresh pair
  int first_reply_ms = 10000;
  int idle_ms = 120000;
};

class JobClient {
 public:
  static Result<std::unique_ptr<JobClient>> Connect(const JobClientOptions& options);
  ~JobClient();
  JobClient(const JobClient&) = delete;
  JobClient& operator=(const JobClient&) = delete;

  // Submits `job` and waits for its end, calling on_token for every Token
  // and on_queued (when given) for every JOB_QUEUED notice while the job
  // waits for KV cache. Returns the Finish record.
  Result<v1::Finish> Run(const v1::JobSubmit& job, const std::function<void(const v1::Token&)>& on_token,
                         const std::function<void(const v1::JobStatus&)>& on_queued = nullptr);

  // The merged metrics of the cluster ("<node>/<name>" keys).
  Result<v1::MetricsSnapshot> Metrics();

  // One admin-console view of the cluster as JSON (v1::ConsoleQuery: view,
  // session_id for "timeline", seconds for "history"); the head's errors as
  // a Status carrying them (UNKNOWN_SESSION, BAD_REQUEST).
  Result<std::string> Console(const std::string& view, uint64_t session_id = 0, double seconds = 0);

  // The head's live kept sessions.
  Result<v1::KeptSessionList> KeptSessions();
  // Closes kept session `name` (cancelling its running job); UNKNOWN_SESSION
  // (as a Status carrying it) when there is no such live session.
  Status CloseKeptSession(const std::string& name);

  // Re-attaches to job `job_id` (running, queued, or ended within the head's
  // retention window; after a head restart too) and follows it as Run does:
  // every Token from `from_index` on — those generated so far at once — then
  // its Finish. UNKNOWN_JOB when the head does not know the job.
  Result<v1::Finish> Attach(uint64_t job_id, uint32_t from_index, const std::function<void(const v1::Token&)>& on_token,
                            const std::function<void(const v1::JobStatus&)>& on_queued = nullptr);
  // Job `job_id`'s JobStatus: state, queue position, tokens so far, and how
  // it ended. UNKNOWN_JOB as above.
  Result<v1::JobStatus> JobStatusOf(uint64_t job_id);
  // Cancels job `job_id` (any client's) and returns its JobStatus after: JOB_ABORTED, or how it
  // had ended already. UNKNOWN_JOB as above.
  Result<v1::JobStatus> CancelJob(uint64_t job_id);
  // Drains shard node `node_id` (NodeDrain): no new session goes to it, its
  // running jobs move to other nodes or finish there, then it leaves, within
  // `timeout_seconds` (0: the node's own drain_timeout_seconds). BAD_REQUEST
  // for the head or a node the head does not know.
  Result<v1::NodeDrainStatus> DrainNode(const std::string& node_id, double timeout_seconds = 0);

  // The same job step by step (the HTTP front end, which must know whether a
  // job was accepted before it answers, and must stop a job whose client
  // left). One job at a time per client.
  //
  // Submit sends `job` and waits for the head's first answer: the job id
  // once accepted, else the refusal (as Run reports errors).
  Result<uint64_t> Submit(const v1::JobSubmit& job);
  // As Submit, for JobAttach: follows job `job_id` from token `from_index`.
  Result<uint64_t> Follow(uint64_t job_id, uint32_t from_index);
  // The next Token of the submitted job (token set), a JOB_QUEUED notice
  // (queued set: it waits for KV cache, queued.queue_position jobs ahead), the
  // prompt's logprobs (prompt_logprobs set; SamplingParams.prompt_logprobs), or
  // its Finish (finish set; the job is over). Waits like Run; `cancelled`, when given, is asked
  // every 100 ms meanwhile, and when it says true the job is cancelled
  // (Cancel) and Next fails with kCancelled ("CANCELLED: job N was cancelled
  // by its client").
  struct Event {
    bool has_token = false;
    v1::Token token;
    bool has_finish = false;
    v1::Finish finish;
    bool has_queued = false;
    v1::JobStatus queued;
    bool has_prompt_logprobs = false;  // before the first token, when the job asked for them
    v1::PromptLogprobs prompt_logprobs;
  };
  Result<Event> Next(const std::function<bool()>& cancelled = nullptr);
  // Sends JobCancel for the submitted job and waits briefly (1 s) for the
  // head to confirm, so that its sessions are closed and their caches
  // freed. No-op when no job is running.
  void Cancel();

  struct Impl;

 private:
  explicit JobClient(std::unique_ptr<Impl> impl);
  // Follows the submitted or attached job to its Finish (as Run).
  Result<v1::Finish> ToTheEnd(const std::function<void(const v1::Token&)>& on_token,
                              const std::function<void(const v1::JobStatus&)>& on_queued);
  std::unique_ptr<Impl> impl_;
};

}  // namespace troupe::client
