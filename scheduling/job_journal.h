// JobJournal: the head's durable record of the jobs it accepted — SQLite in
// WAL mode, one file (`job_journal` in the head's config; `cluster up` puts
// it in its --dir). A job is accepted only once Accept has committed its
// JobSubmit (synchronous=FULL: on disk before the acknowledgement, so a
// SIGKILL or a power cut loses no accepted job); Finish commits its final
// record — the stream it produced (PromptLogprobs and Tokens) and its Finish
// or Error — which is kept until Expire drops it (the retention window).
// Finish does not wait for the disk (synchronous=NORMAL: a SIGKILL loses
// nothing, a power cut may lose the last final records, whose jobs then run
// again — at-least-once still holds).
//
// After a restart, Load gives every job back: unfinished ones in the order
// they were accepted (the head runs them again: sampling is a pure function
// of seed and step, and the seed is journaled with the job), finished ones
// with their final envelope (their streams stay on disk until asked for).
//
// One head per journal: Open takes SQLite's exclusive lock and keeps it, so a
// second head on the same file fails at once naming it (the lock dies with
// the process, SIGKILL included). An empty path opens a journal in memory:
// the same behaviour, nothing survives the process (durable() says which).
//
// Failures are Status values naming the file and SQLite's message. Not
// thread-safe: the scheduler actor's own.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "messages/troupe.pb.h"
#include "pipeline/status.h"

struct sqlite3;

namespace troupe::scheduling {

struct JournaledJob {
  uint64_t job_id = 0;
  v1::JobSubmit submit;    // as the client sent it
  uint64_t seed = 0;       // the seed it runs with (the client's, or the one the head chose)
  double accepted_at = 0;  // unix seconds
  bool finished = false;
  double finished_at = 0;
  v1::Envelope final;  // its Finish or Error (finished only)
};

class JobJournal {
 public:
  static Result<std::unique_ptr<JobJournal>> Open(const std::string& path);
  ~JobJournal();
  JobJournal(const JobJournal&) = delete;
  JobJournal& operator=(const JobJournal&) = delete;

  const std::string& path() const { return path_; }
  bool durable() const { return !path_.empty(); }

  // Commits an accepted job. AlreadyExists-like failure (InvalidArgument)
  // when the id is journaled already.
  Status Accept(uint64_t job_id, const v1::JobSubmit& submit, uint64_t seed, double now);
  // Commits job `job_id`'s end: its stream (record.stream) and final record.
  Status Finish(uint64_t job_id, const v1::JobRecord& record, double now);
  // Every journaled job, in the order accepted.
  Result<std::vector<JournaledJob>> Load();
  // A finished job's stream and final record; nullopt when the journal has
  // no finished job `job_id`.
  Result<std::optional<v1::JobRecord>> Record(uint64_t job_id);
  // Drops the finished jobs that ended before `before` (unix seconds);
  // returns how many.
  Result<int> Expire(double before);

 private:
  JobJournal(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  Status Exec(const char* sql);
  Status Error(const std::string& what) const;

  sqlite3* db_;
  std::string path_;
};

}  // namespace troupe::scheduling
