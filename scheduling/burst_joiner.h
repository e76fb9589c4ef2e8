// BurstJoiner: when the sampler should hold a session's next step so that it
// leaves together with others bound for the same first shard.
//
// Bursts (burst_gate.h) keep the steps of one batch together from stage to
// stage. They cannot join two groups that run apart: if one session's prefill
// is computed before the others' (their requests reached the head a little
// apart), it leaves the sampler alone, a stage ahead of the rest. Each stage
// computes what it holds when it holds it, so from then on the two groups
// circulate a stage apart, each reading every weight for itself.
//
// The sampler sees every session come back. The joiner tracks, per first
// shard, the sessions whose step is out on the ring (sent, not yet back) and
// how long their last round took:
//
//   Waits(node, since, now) — hold the steps ready for `node` (the first held
//     since `since`) while another session bound there is out and expected
//     back by since + patience: in its first round (a prefill: no round time
//     yet), or sent + its last round time within that bound. Never past
//     since + patience. A session waited for in vain is marked late and not
//     waited for again until it is back, so a long prefill or a lost step
//     costs one patience, not one per step.
//
// When every expected session is back, its step joins the held ones and they
// leave as one burst: the groups merge. With patience 0 nothing is held.
//
// Plain data, no clock of its own (callers pass `now`); one sampler's own
// (not thread-safe).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace troupe::scheduling {

class BurstJoiner {
 public:
  using Clock = std::chrono::steady_clock;

  explicit BurstJoiner(Clock::duration patience) : patience_(patience) {}

  // A step of `session` left for first shard `node` at `now` (a prefill's
  // too: the first round of the session).
  void Sent(uint64_t session, const std::string& node, Clock::time_point now);
  // Its result came back to the sampler.
  void Returned(uint64_t session, Clock::time_point now);
  // The session ended, moved or was dropped.
  void Forget(uint64_t session);

  // Whether steps ready for `node`, held since `since`, should wait for
  // others (see above). Past since + patience it answers false and marks the
  // sessions still out late.
  bool Waits(const std::string& node, Clock::time_point since, Clock::time_point now);

  Clock::duration patience() const { return patience_; }
  size_t out() const;  // sessions whose step is out (for tests)

 private:
  struct Session {
    std::string node;
    Clock::time_point sent;
    Clock::duration round = Clock::duration::zero();  // the last round's time; zero: none yet
    bool out = false;
    bool late = false;
  };
  Clock::duration patience_;
  std::map<uint64_t, Session> sessions_;
};

}  // namespace troupe::scheduling
