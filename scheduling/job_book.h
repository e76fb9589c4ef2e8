// JobBook: every job the head has accepted, from its journaling to the end
// of its retention window — its submit, what it produced so far, its final
// record, and who watches it — over the JobJournal (job_journal.h).
//
// The job life cycle (job_lifecycle.h) runs a job; the book is its client.
// Everything the life cycle and the sampler send to a job's client — JobStatus,
// PromptLogprobs, Tokens, the Finish or Error that ends it — comes to the
// book (Output), which keeps the stream, journals the final record, and
// copies each message to every watcher with the watcher's own request id.
//
//   Accept ──▶ live: watchers get JobStatus, the stream as it comes, the end
//                │
//                ▼ Finish or Error (journaled)
//              ended: kept for `retention`; Attach replays stream + end
//                │
//                ▼ Expire
//              forgotten (UNKNOWN_JOB)
//
// Rules:
// * Watchers. The submitter watches from the start; Attach adds a watcher
//   (a repeated submit of the same job id is an Attach from token 0). A
//   watcher gets JobStatus first, then — with `stream` — the PromptLogprobs
//   and every Token from its `from_index` (those produced so far at once),
//   then the final record, after which it is dropped. A client that leaves
//   (Gone) stops watching; the job goes on (at-least-once execution: only
//   JobCancel stops a job).
// * Tokens are kept in index order; one whose index is not the next is
//   dropped (never twice in a stream).
// * Ids. A client's id is the job's (SameJob says whether a repeated submit
//   is the same job); NewId gives the head's own ids, never one the book
//   holds.
// * After a restart, Recover loads the journal: ended jobs within the
//   retention window are back for Attach, unfinished ones are handed back to
//   run again (they are live, with no watchers until someone attaches).
// * Close (the head stops): every watcher of a live job gets UNAVAILABLE
//   (retryable; a durable journal runs the job again after a restart) and
//   nothing more is journaled — the jobs stay unfinished on disk.
//
// Times are unix seconds, passed in. Thread-safety: none (the scheduler
// actor's own).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "messages/origin.h"
#include "messages/troupe.pb.h"
#include "pipeline/status.h"
#include "scheduling/actions.h"
#include "scheduling/job_journal.h"

namespace troupe::scheduling {

struct Watcher {
  Origin origin;
  uint64_t request_id = 0;  // every message it gets carries this id
  bool stream = true;       // PromptLogprobs and Tokens too, not only JobStatus and the end
  uint32_t from_index = 0;  // the first Token it gets
};

struct BookConfig {
  std::string node_id;              // names the head in its errors
  double retention_seconds = 3600;  // how long an ended job stays to attach to
};

class JobBook {
 public:
  JobBook(BookConfig config, std::unique_ptr<JobJournal> journal);

  const JobJournal& journal() const { return *journal_; }

  // Loads the journal; call once, first. Returns the unfinished jobs in the
  // order accepted, to run again; jobs ended past the retention window are
  // dropped from disk.
  Result<std::vector<JournaledJob>> Recover(double now);

  bool Knows(uint64_t job_id) const { return jobs_.count(job_id) != 0; }
  bool Ended(uint64_t job_id) const;
  // Whether `submit` is job `job_id` as journaled (every field the same but
  // `stream`, which is the watcher's choice).
  bool SameJob(uint64_t job_id, const v1::JobSubmit& submit) const;
  // A fresh id for a job whose client named none.
  uint64_t NewId();

  // Journals `submit` as job `job_id`, to run with `seed`; `submitter`
  // watches it. The job is accepted once this returns ok.
  Status Accept(uint64_t job_id, const v1::JobSubmit& submit, uint64_t seed, Watcher submitter, double now);

  // `watcher` watches known job `job_id`: JobStatus (with `live`, the life
  // cycle's view of a live job), the stream from its from_index, and the end
  // when the job has ended (then the watcher is done).
  Actions Attach(uint64_t job_id, Watcher watcher, const std::optional<LiveState>& live);

  // JobStatus of known job `job_id` answering `request_id`.
  v1::Envelope StatusOf(uint64_t job_id, uint64_t request_id, const std::optional<LiveState>& live) const;

  // A message for a job's client (JobStatus, PromptLogprobs, Token, Finish,
  // Error; the job named by its job_id): kept, journaled when final, and
  // copied to the watchers. Messages for unknown or ended jobs are dropped.
  Actions Output(v1::Envelope envelope, double now);

  // `client` left: it watches nothing any more.
  void Gone(const Origin& client);

  // Forgets ended jobs older than the retention window (memory and disk).
  Status Expire(double now);

  // The head stops: UNAVAILABLE to the watchers of every live job.
  Actions Close();

  // A job as the admin console lists it (console_views.h).
  struct Summary {
    uint64_t job_id = 0;
    bool ended = false;
    v1::JobState end_state = v1::JOB_STATE_UNSPECIFIED;  // ended: completed or aborted
    uint32_t tokens = 0;
    int32_t max_tokens = 0;  // 0: the head's default
    int32_t priority = 0;
    double accepted_at = 0, ended_at = 0;  // unix seconds; accepted_at 0 after a restart
  };
  // Every live job, and the `ended` most recently ended ones, newest first.
  std::vector<Summary> Summaries(size_t ended) const;

  // Jobs accepted and not ended.
  size_t live() const { return live_; }
  size_t size() const { return jobs_.size(); }
  uint64_t journal_errors() const { return journal_errors_; }
  uint64_t failed() const { return failed_; }  // jobs ended with an Error (cancelled ones too)

 private:
  struct Entry {
    v1::JobSubmit submit;
    uint64_t seed = 0;
    bool ended = false;
    double ended_at = 0;
    v1::Envelope end;                  // its Finish or Error, once ended
    std::vector<v1::Envelope> stream;  // PromptLogprobs and Tokens, while live
    uint32_t tokens = 0;
    double accepted_at = 0;
    std::vector<Watcher> watchers;
  };

  // `envelope` for `w`: its request id.
  static Reply To(const Watcher& w, v1::Envelope envelope);
  // Whether watcher `w` gets stream message `env`.
  static bool Wants(const Watcher& w, const v1::Envelope& env);
  void End(uint64_t job_id, Entry& e, v1::Envelope end, double now, Actions& out);

  BookConfig config_;
  std::unique_ptr<JobJournal> journal_;
  std::map<uint64_t, Entry> jobs_;
  uint64_t next_id_ = 0;
  size_t live_ = 0;
  bool closing_ = false;
  uint64_t journal_errors_ = 0;
  uint64_t failed_ = 0;
};

}  // namespace troupe::scheduling
