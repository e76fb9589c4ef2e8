// Timelines: where each token's time went, per session — the console's
// waterfall. A step collects hop times on its way round the ring
// (v1::Step.times: each stage's queue wait, compute and send, each measured
// on its own node's clock, so no two hosts' clocks are ever compared); the
// sampler adds the round's total as the head saw it, from handing the
// previous token to the embedding to receiving these logits. What the hops
// do not account for is the network (and the sockets' queues):
// network_ms = total_ms - the sum of every hop's own time.
//
// Keeps the last kStepsKept steps of each session, live or ended within
// kEndedKept; at most kSessionsKept sessions (the oldest ended ones go
// first). Thread-safe: the sampler records, the scheduler reads.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace troupe::scheduling {

struct HopTiming {
  std::string node_id;
  int stage = 0;  // v1::Stage
  double queue_ms = 0, compute_ms = 0, send_ms = 0;
  double own_ms() const { return queue_ms + compute_ms + send_ms; }
};

struct StepTiming {
  uint32_t index = 0;           // the step's first position in the session
  uint32_t tokens = 1;          // positions it carried (a prefill carries many)
  double total_ms = -1;         // the round as the head saw it; < 0 when unknown
  std::vector<HopTiming> hops;  // in ring order
  // total_ms minus the hops' own times (never below 0); 0 when total is unknown.
  double network_ms() const;
};

class Timelines {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kStepsKept = 64;
  static constexpr size_t kSessionsKept = 1024;
  static constexpr std::chrono::minutes kEndedKept{10};

  void Record(uint64_t session_id, StepTiming step, Clock::time_point now);
  // The session ended: kept for kEndedKept more, then dropped.
  void End(uint64_t session_id, Clock::time_point now);
  // Its kept steps, oldest first; nullopt for a session never recorded or dropped.
  std::optional<std::vector<StepTiming>> Of(uint64_t session_id) const;

 private:
  struct Kept {
    std::deque<StepTiming> steps;
    std::optional<Clock::time_point> ended;
  };
  void Expire(Clock::time_point now);  // mu_ held
  mutable std::mutex mu_;
  std::map<uint64_t, Kept> sessions_;
};

}  // namespace troupe::scheduling
