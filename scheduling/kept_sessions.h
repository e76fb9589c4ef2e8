// KeptSessions: the head's book of kept sessions — conversations a client
// keeps open across jobs (`troupe submit --session NAME --keep`, then
// `--session NAME`), the way Petals' inference sessions are kept. Plain data;
// JobLifecycle (job_lifecycle.h) makes the decisions and owns this book.
//
// A kept session holds its context — every token of the conversation so far,
// prompts and answers — on the head, so that nothing depends on a shard
// surviving. While it is *bound*, the shards of `route` hold the KV cache of
// its first `cached` context tokens under shard session `session_id`; a job
// in it then prefills only what follows. Unbound (after a failed job, a node
// lost, or a shard that closed the cache), the next job opens a fresh shard
// session and prefills the whole context: the same tokens, only slower.
//
// Names are the client's (1..128 bytes of printable ASCII). A name that ended
// (expired or closed) is remembered, so that its next use says why it is
// gone; the last `kTombstones` such names are kept.
//
// Thread-safety: none (the scheduler actor's own).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "messages/troupe.pb.h"
#include "pipeline/status.h"
#include "scheduling/actions.h"

namespace troupe::scheduling {

struct KeptSession {
  std::string name;
  std::vector<int32_t> context;  // every token of the conversation so far
  int64_t max_length = 0;        // positions reserved on every shard of its route
  // Bound: the shards of `route` hold the cache of context[0, cached) as
  // shard session `session_id`. Unbound: session_id == 0, cached == 0.
  uint64_t session_id = 0;
  std::vector<v1::RouteHop> route;
  int64_t cached = 0;
  uint64_t running_job = 0;  // the job running in it, 0 when idle
  uint32_t jobs = 0;         // jobs that ended in it
  Clock::time_point last_used;

  bool bound() const { return session_id != 0; }
  void Unbind() {
    session_id = 0;
    route.clear();
    cached = 0;
  }
};

class KeptSessions {
 public:
  static constexpr size_t kTombstones = 4096;
  static constexpr size_t kMaxNameBytes = 128;

  // InvalidArgument naming the problem for an empty, long or non-printable name.
  static Status CheckName(const std::string& name);

  KeptSession* Find(const std::string& name);
  const KeptSession* Find(const std::string& name) const;
  // The kept session bound to shard session `session_id`, or nullptr.
  KeptSession* BoundTo(uint64_t session_id);

  KeptSession& Add(KeptSession session);
  // Forgets `name`, remembering `why` ("expired after 300 s idle", "was closed").
  void Remove(const std::string& name, const std::string& why);  // `name` may be the removed session's own
  // Why a name is not live: "no kept session 'x'", or "kept session 'x' was closed".
  std::string WhyGone(const std::string& name) const;

  std::map<std::string, KeptSession>& all() { return sessions_; }
  const std::map<std::string, KeptSession>& all() const { return sessions_; }
  size_t size() const { return sessions_.size(); }

 private:
  std::map<std::string, KeptSession> sessions_;
  std::map<std::string, std::string> gone_;  // name -> why
  std::deque<std::string> gone_order_;       // oldest first, bounds gone_
};

}  // namespace troupe::scheduling
