// JobRunner: one worker of the bridge — runs job entries one at a time, each
// to its acknowledgement (broker/broker_bridge.h draws where it sits).
//
// For an entry: read the job's progress back from its reply stream (what a
// previous delivery published), answer a malformed entry with BAD_REQUEST,
// else submit the job (its job id is the same on every delivery) and publish
// the tokens and the final record the progress does not hold yet, then XACK.
// A final record already in the reply stream means only the ack was lost:
// it acks and publishes nothing. A reply key Redis refuses (not a stream)
// gets the BAD_REQUEST in the default reply stream instead.
//
// Owns one Redis connection and one JobClient (created lazily, dropped after
// a failure so the next job starts on a fresh connection).
// Thread-safety: one thread.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "broker/bridge_options.h"
#include "broker/job_entry.h"
#include "broker/redis_connection.h"
#include "broker/reply_stream.h"
#include "broker/stream_entry.h"

namespace troupe::broker {

class JobRunner {
 public:
  // `stop` ends retry waits (the entry is then left pending).
  JobRunner(const BridgeOptions& options, const std::atomic<bool>& stop) : options_(options), stop_(stop) {}

  // Runs `entry` until it is acknowledged, or left pending (stop during a
  // retry wait, or Redis failing: logged). Never throws.
  void Handle(const StreamEntry& entry);

 private:
  // The job's progress from its last entry in `reply` (scanning back past
  // other jobs' entries when the stream is shared).
  Result<ReplyProgress> LoadProgress(const std::string& reply, const std::string& entry_id);
  Status Publish(const std::string& reply, const EntryFields& fields);
  Status Ack(const std::string& entry_id);
  // One submission of the job: OK once its final record is published. A
  // failure to publish sets *redis_failed; any other failure is the job's.
  Status RunOnce(const JobEntry& job, ReplyProgress* progress, bool* redis_failed);
  Result<RedisReply> Redis(const std::vector<std::string>& argv);

  const BridgeOptions& options_;
  const std::atomic<bool>& stop_;
  std::unique_ptr<RedisConnection> redis_;
  std::unique_ptr<client::JobClient> client_;
};

}  // namespace troupe::broker
