// StartupHold: the new jobs of a head that has just started and knows no
// route yet. A restarted head knows none of its shards until they announce
// themselves (within a second or two); a job refused NO_ROUTE meanwhile
// would be refused for nothing. So until the head has had a route — at
// most `wait` after it started — new submits are held, and released once a
// route exists or the wait is over (then they meet the usual checks, and
// NO_ROUTE names what is missing). Once the head has had a route, a missing
// one is news (a drain, a lost node): nothing is held any more.
//
// Times are passed in; `can_route` is the registry's answer now.
// Thread-safety: none (the scheduler actor's own).
#pragma once

#include <cstdint>
#include <deque>

#include "messages/origin.h"
#include "messages/troupe.pb.h"
#include "scheduling/actions.h"

namespace troupe::scheduling {

struct HeldSubmit {
  Origin client;
  uint64_t request_id = 0;
  v1::JobSubmit submit;
};

class StartupHold {
 public:
  StartupHold(Clock::time_point started, Clock::duration wait) : until_(started + wait) {}

  // Whether a new job should be held now (notes the first route).
  bool Holding(Clock::time_point now, bool can_route) {
    if (over_) return false;
    over_ = can_route || now >= until_;
    return !over_;
  }
  void Hold(HeldSubmit submit) { held_.push_back(std::move(submit)); }
  // The held submits, in order, once holding is over; none while it lasts.
  std::deque<HeldSubmit> Release(Clock::time_point now, bool can_route) {
    std::deque<HeldSubmit> out;
    if (!Holding(now, can_route)) out.swap(held_);
    return out;
  }

 private:
  Clock::time_point until_;
  bool over_ = false;
  std::deque<HeldSubmit> held_;
};

}  // namespace troupe::scheduling
