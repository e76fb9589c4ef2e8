// BurstGate: when a stage should compute the steps it holds — at once, or
// after a short wait for the rest of a burst.
//
// A burst is the steps one stage computed in one batch and sends on to the
// same next node (v1::Step burst_id, burst_size): in one StepBurst message
// from another process, one by one from a stage of the same node. Either way
// they reach the stage's mailbox one step at a time, microseconds apart. A
// stage that is idle would compute the first alone and batch the others
// after it, so a batch of 4 sessions leaves as 1 + 3 and, hop after hop,
// the ring's batches fall apart into single rows — each as costly as a
// batch of 4 (decode reads every weight once per batch). The gate keeps a burst together:
//
//   Ready(now) — compute now: some step held is not part of a burst (id 0,
//     or size <= 1), or its burst is complete (every member has arrived), or
//     has waited `patience` since its first member arrived (one went
//     elsewhere or was lost), or has already had members computed (a
//     straggler: the burst was split anyway, by a batch limit or a busy
//     stage).
//   Otherwise wait, at most until WaitUntil().
//
// When a stage computes, it computes everything it holds (Ready looks at any
// step, not all): a burst still arriving then joins the batch with what it
// has, and its stragglers follow without waiting.
//
// Plain data, no clock of its own (callers pass `now`); one stage's own
// (not thread-safe). Bursts are forgotten once every member has been
// computed, or `patience` * 64 after their first arrival.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <vector>

#include "messages/troupe.pb.h"

namespace troupe::scheduling {

class BurstGate {
 public:
  using Clock = std::chrono::steady_clock;

  explicit BurstGate(Clock::duration patience) : patience_(patience) {}

  // A step arrived and is held (burst_id 0: not part of a burst).
  void Arrived(uint64_t burst_id, uint32_t burst_size, Clock::time_point now);
  // A held step was computed, or dropped (refused, its session gone).
  void Left(uint64_t burst_id, Clock::time_point now);

  // Whether the held steps should be computed now (see above). False when
  // none is held.
  bool Ready(Clock::time_point now) const;
  // When the longest wait ends: the earliest first arrival + patience among
  // bursts still waiting; Clock::time_point::max() when none waits.
  Clock::time_point WaitUntil() const;

  size_t held() const { return held_; }
  size_t bursts() const { return bursts_.size(); }  // bursts remembered (for tests)

 private:
  struct Burst {
    uint32_t size = 0;
    uint32_t arrived = 0;  // members that arrived (held or left)
    uint32_t held = 0;     // members held now
    bool started = false;  // a member has been computed
    Clock::time_point first;
  };
  bool Waits(const Burst& b, Clock::time_point now) const {
    return !b.started && b.arrived < b.size && now < b.first + patience_;
  }
  void Forget(Clock::time_point now);

  Clock::duration patience_;
  std::map<uint64_t, Burst> bursts_;
  size_t held_ = 0;
  size_t unbursted_ = 0;  // held steps outside any burst
};

// The sender's half: tags the steps one batch sends on. Those going to the
// same node — their rest_of_route(hop): 0, the next one; the sampler, whose
// steps pass the embedding (which keeps their tags) first, says 1 — form one
// burst, with id `burst_id` (never 0) and their count as its size. A step
// that goes there alone, or has no such hop, is left untagged (any tags it
// brought from the stage before are cleared).
void TagBursts(const std::vector<v1::Step*>& steps, uint64_t burst_id, int hop = 0);
void TagBursts(std::vector<v1::Step>& steps, uint64_t burst_id, int hop = 0);

}  // namespace troupe::scheduling
