// BrokerBridge: `troupe bridge --from redis://...` — takes jobs from a Redis
// stream through a consumer group, runs them on a head's job endpoint
// (client::JobClient), publishes each job's tokens and final record to its
// reply stream, and acknowledges (XACK) a job entry only after its final
// record is published.
//
// Why Redis Streams: the broker operators run most, a real C client in
// Debian (libhiredis), and consumer groups whose pending entries list is
// exactly "delivered but not acknowledged": a job stays there until the
// bridge acks it, and a bridge that died is replaced by reading it back.
// The formats: broker/redis_url.h (where), broker/job_entry.h (a job),
// broker/reply_stream.h (its answer).
//
//   Run (caller's thread: the reader)           workers x concurrency
//   ─────────────────────────────────           ─────────────────────
//   XGROUP CREATE stream group 0 MKSTREAM       each: one Redis connection,
//   XREADGROUP ... 0   (own pending, at start)  one JobClient (one job at a time)
//   XREADGROUP ... >   (new, BLOCK 500 ms)  ──►  queue ──► parse entry
//   every claim_idle/4:                          read the reply stream's progress
//     XCLAIM own in-flight ids JUSTID            submit (same job id every time)
//       (resets their idle time: a heartbeat;    XADD token... XADD finish|error
//        a Lua script, so that an entry another
//        bridge took meanwhile is not taken back)
//     XAUTOCLAIM entries idle > claim_idle       XACK
//       (a dead bridge's, or one a worker
//        abandoned when Redis failed)
//
// It reads no more entries than it has free workers, so what it holds is
// what it runs.
//
// Guarantees. Every acknowledged entry has exactly one final record in its
// reply stream. A bridge killed anywhere (SIGKILL included) leaves its
// entries pending; the restarted bridge (same consumer name) or, after
// claim_idle, any other bridge of the group runs them again with the same
// job id, and publishes only the reply entries not there yet (the skip rule
// of broker/reply_stream.h): no entry lost, none published twice. The head
// keeps a job whose client left and answers a repeated job id with that
// job's stream from token 0 (its durable queue), so a job is run once; a
// head that no longer knows the job runs it afresh, and since the job
// always carries a seed (broker/job_entry.h) it yields the same tokens.
// A malformed entry gets an `error` record (BAD_REQUEST) and is acked.
// Failures the job may outlive (the head's BUSY, the head not answering) are
// retried with backoff, never acked; every other failure is the job's final
// `error` record (broker/job_failure.h). When Redis fails under a worker, it
// abandons the job unacked; XAUTOCLAIM gives it back after claim_idle.
//
// Stopping: once `stop` is set Run takes no new entries, lets the running
// jobs finish (heartbeating them meanwhile) and returns; entries it had not
// started stay pending for the next bridge.
//
// Thread-safety: Run is called once, from one thread; `stop` may be set from
// any thread.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "broker/bridge_options.h"
#include "pipeline/status.h"

namespace troupe::broker {

class BrokerBridge {
 public:
  explicit BrokerBridge(BridgeOptions options) : options_(std::move(options)) {}

  // Connects to Redis and creates the group when missing — a failure there
  // is returned (kUnavailable: no server; kInternal: the server refused, e.g.
  // a key that is not a stream) — then calls on_ready and consumes until
  // `stop`, returning OK once the running jobs are done. Redis failures later
  // are logged and retried, never returned.
  Status Run(const std::atomic<bool>& stop, const std::function<void()>& on_ready);

  // Jobs running now (for logs at shutdown).
  int running() const { return running_.load(); }

 private:
  BridgeOptions options_;
  std::atomic<int> running_{0};
};

}  // namespace troupe::broker
