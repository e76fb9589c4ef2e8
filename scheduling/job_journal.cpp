#include "scheduling/job_journal.h"

#include <sqlite3.h>

#include <utility>

namespace troupe::scheduling {
namespace {

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS jobs ("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  job_id INTEGER NOT NULL UNIQUE,"  // the uint64 id's bits as a signed integer
    "  submit BLOB NOT NULL,"            // v1::JobSubmit
    "  seed INTEGER NOT NULL,"
    "  accepted_at REAL NOT NULL,"
    "  finished_at REAL,"  // NULL while it has not ended
    "  final BLOB,"        // v1::Envelope: Finish or Error
    "  stream BLOB)";      // v1::JobRecord with its stream only

// A prepared statement, finalized on every path.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() { return stmt_; }
  void Bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void Bind(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  void Bind(int i, const std::string& blob) {
    sqlite3_bind_blob(stmt_, i, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
  }
  int Step() { return sqlite3_step(stmt_); }
  std::string Blob(int col) {
    const void* p = sqlite3_column_blob(stmt_, col);
    return p ? std::string(static_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_OK;
};

int64_t Signed(uint64_t v) { return static_cast<int64_t>(v); }
uint64_t Unsigned(int64_t v) { return static_cast<uint64_t>(v); }

}  // namespace

Result<std::unique_ptr<JobJournal>> JobJournal::Open(const std::string& path) {
  sqlite3* db = nullptr;
  const std::string where = path.empty() ? ":memory:" : path;
  const int rc = sqlite3_open_v2(where.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return Status::IoError("cannot open the job journal " + where + ": " + msg);
  }
  std::unique_ptr<JobJournal> journal(new JobJournal(db, path));
  // Exclusive locking: one head per journal. The lock is taken by the first
  // write below and held until the process ends.
  TROUPE_RETURN_IF_ERROR(journal->Exec("PRAGMA locking_mode=EXCLUSIVE"));
  if (!path.empty()) TROUPE_RETURN_IF_ERROR(journal->Exec("PRAGMA journal_mode=WAL"));
  TROUPE_RETURN_IF_ERROR(journal->Exec("PRAGMA synchronous=FULL"));
  Status st = journal->Exec(kSchema);
  if (!st.ok()) {
    if (sqlite3_errcode(db) == SQLITE_BUSY || sqlite3_errcode(db) == SQLITE_LOCKED) {
      return Status::Unavailable("the job journal " + where + " is in use by another head");
    }
    return st;
  }
  // Take the write lock now rather than at the first job.
  TROUPE_RETURN_IF_ERROR(journal->Exec("BEGIN IMMEDIATE; COMMIT"));
  return journal;
}

JobJournal::~JobJournal() { sqlite3_close(db_); }

Status JobJournal::Error(const std::string& what) const {
  const std::string where = path_.empty() ? ":memory:" : path_;
  if (sqlite3_errcode(db_) == SQLITE_BUSY) {
    return Status::Unavailable("the job journal " + where + " is in use by another head");
  }
  return Status::IoError("job journal " + where + ": " + what + ": " + sqlite3_errmsg(db_));
}

Status JobJournal::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    if (sqlite3_errcode(db_) == SQLITE_BUSY) return Error(sql);
    return Status::IoError("job journal " + (path_.empty() ? std::string(":memory:") : path_) + ": " + sql + ": " +
                           msg);
  }
  return Status::Ok();
}

Status JobJournal::Accept(uint64_t job_id, const v1::JobSubmit& submit, uint64_t seed, double now) {
  TROUPE_RETURN_IF_ERROR(Exec("PRAGMA synchronous=FULL"));  // on disk before the acknowledgement
  Statement s(db_, "INSERT INTO jobs (job_id, submit, seed, accepted_at) VALUES (?, ?, ?, ?)");
  if (!s.ok()) return Error("prepare accept");
  s.Bind(1, Signed(job_id));
  s.Bind(2, submit.SerializeAsString());
  s.Bind(3, Signed(seed));
  s.Bind(4, now);
  const int rc = s.Step();
  if (rc == SQLITE_CONSTRAINT) {
    return Status::InvalidArgument("job " + std::to_string(job_id) + " is journaled already");
  }
  if (rc != SQLITE_DONE) return Error("accept job " + std::to_string(job_id));
  return Status::Ok();
}

Status JobJournal::Finish(uint64_t job_id, const v1::JobRecord& record, double now) {
  // A final record lost with the OS (not with the process: WAL survives
  // that) only makes the job run again: at-least-once holds without an fsync.
  if (durable()) TROUPE_RETURN_IF_ERROR(Exec("PRAGMA synchronous=NORMAL"));
  v1::JobRecord stream;
  *stream.mutable_stream() = record.stream();
  Statement s(db_, "UPDATE jobs SET finished_at = ?, final = ?, stream = ? WHERE job_id = ?");
  if (!s.ok()) return Error("prepare finish");
  s.Bind(1, now);
  s.Bind(2, record.final().SerializeAsString());
  s.Bind(3, stream.SerializeAsString());
  s.Bind(4, Signed(job_id));
  if (s.Step() != SQLITE_DONE) return Error("finish job " + std::to_string(job_id));
  if (sqlite3_changes(db_) == 0) return Status::NotFound("job " + std::to_string(job_id) + " is not journaled");
  return Status::Ok();
}

Result<std::vector<JournaledJob>> JobJournal::Load() {
  Statement s(db_, "SELECT job_id, submit, seed, accepted_at, finished_at, final FROM jobs ORDER BY seq");
  if (!s.ok()) return Error("prepare load");
  std::vector<JournaledJob> jobs;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    JournaledJob j;
    j.job_id = Unsigned(sqlite3_column_int64(s.get(), 0));
    if (!j.submit.ParseFromString(s.Blob(1))) {
      return Status::Corrupt("job journal " + path_ + ": job " + std::to_string(j.job_id) + "'s submit is unreadable");
    }
    j.seed = Unsigned(sqlite3_column_int64(s.get(), 2));
    j.accepted_at = sqlite3_column_double(s.get(), 3);
    j.finished = sqlite3_column_type(s.get(), 4) != SQLITE_NULL;
    if (j.finished) {
      j.finished_at = sqlite3_column_double(s.get(), 4);
      if (!j.final.ParseFromString(s.Blob(5))) {
        return Status::Corrupt("job journal " + path_ + ": job " + std::to_string(j.job_id) +
                               "'s final record is unreadable");
      }
    }
    jobs.push_back(std::move(j));
  }
  if (rc != SQLITE_DONE) return Error("load");
  return jobs;
}

Result<std::optional<v1::JobRecord>> JobJournal::Record(uint64_t job_id) {
  Statement s(db_, "SELECT final, stream FROM jobs WHERE job_id = ? AND finished_at IS NOT NULL");
  if (!s.ok()) return Error("prepare record");
  s.Bind(1, Signed(job_id));
  const int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<v1::JobRecord>();
  if (rc != SQLITE_ROW) return Error("read job " + std::to_string(job_id));
  v1::JobRecord record;
  if (!record.ParseFromString(s.Blob(1)) || !record.mutable_final()->ParseFromString(s.Blob(0))) {
    return Status::Corrupt("job journal " + path_ + ": job " + std::to_string(job_id) + "'s record is unreadable");
  }
  return std::optional<v1::JobRecord>(std::move(record));
}

Result<int> JobJournal::Expire(double before) {
  Statement s(db_, "DELETE FROM jobs WHERE finished_at IS NOT NULL AND finished_at < ?");
  if (!s.ok()) return Error("prepare expire");
  s.Bind(1, before);
  if (s.Step() != SQLITE_DONE) return Error("expire");
  return sqlite3_changes(db_);
}

}  // namespace troupe::scheduling
