// Spot checks: the head catches a shard whose hidden states are wrong — a
// faulty or lying node, not only a dead one — by having a second replica of
// its span compute the same steps and comparing.
//
// Why a shadow session: a step's output depends on the session's whole KV
// history, so a replica can only check a span if it has run the same
// session. A checked session (a `fraction` of new sessions, picked by a hash
// of the id) gets a shadow: the same route with one span on another replica
// of the same layers (Plan), opened on its shards like any session. The
// sampler replays the checked session's tokens so far into the shadow as one
// prefill and then sends the shadow every step it sends the checked session
// (Step.shadow_of). The LM head, on the head, digests the last row of the
// final hidden states it receives for both (HiddenDigest, Step.hidden_digest)
// and the sampler compares them position by position (DigestMatch). Every
// other hop of the two routes is the same node given the same input, so a
// mismatch says: one of the two replicas of the swapped span is wrong. Both
// digests come from what the head itself received; no shard reports on
// itself. Honest replicas never disagree: the kernels are deterministic and
// batch-invariant, and a prefill computes bit for bit what decoding did (the
// same fact failover by replay rests on).
//
// Verdicts: which of the two is wrong needs a third opinion. A node is
// quarantined when it disagreed with two replicas of its span that agreed
// with each other (a majority of three). A mismatch short of that — two
// replicas only, or the third not compared yet — is logged and counted but
// quarantines nobody; Plan pairs a route's node with the replica it has been
// compared with least, so the third opinion comes soon. A quarantined node
// takes no new session and its jobs go on over other routes (the scheduler
// does both); it stays quarantined until the head restarts.
//
// A shadow's life (the scheduler carries out the Actions):
//   Open        SessionOpen × the shadow route's shards
//   Opened      the last one open: ShadowStart to the sampler
//   Failed      a shard refused or failed it: SessionClose × its shards,
//               ShadowStop to the sampler (the session goes on unchecked)
//   Ended       the sampler is done with it (the checked session finished,
//               moved or failed, or a mismatch was found): SessionClose ×
//               its shards; the verdict is recorded
//   Tick        shadows not open after `open_timeout` fail
// Only nodes on the kernels backend are compared (their heartbeats say so):
// the torch backend is exact only up to rounding that varies with batching.
//
// Costs: a checked session runs twice on every span of its route (a shadow
// uses the same nodes but one), so the fraction is what the check costs.
//
// Plain data; no sockets, no actors. Thread-safety: none.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "messages/troupe.pb.h"
#include "scheduling/actions.h"
#include "scheduling/registry.h"

namespace troupe::scheduling {

// XXH64 of one row of f32 hidden states (its bytes): Step.hidden_digest.
uint64_t HiddenDigest(const float* row, int64_t n);

// The sampler's comparison of one checked session with its shadow: the LM
// head's digests of both, by position. Positions before `first` (the last
// one the shadow's replay covers) are not compared; at most kMaxPending
// digests wait for their other half (the oldest go first).
class DigestMatch {
 public:
  static constexpr size_t kMaxPending = 256;
  explicit DigestMatch(int64_t first) : first_(first) {}
  // nullopt until both digests of `position` are in; then whether they are equal.
  std::optional<bool> Checked(int64_t position, uint64_t digest) { return Add(checked_, shadow_, position, digest); }
  std::optional<bool> Shadow(int64_t position, uint64_t digest) { return Add(shadow_, checked_, position, digest); }
  int64_t compared() const { return compared_; }
  int64_t first() const { return first_; }

 private:
  std::optional<bool> Add(std::map<int64_t, uint64_t>& mine, std::map<int64_t, uint64_t>& other, int64_t position,
                          uint64_t digest);
  int64_t first_;
  int64_t compared_ = 0;
  std::map<int64_t, uint64_t> checked_, shadow_;
};

// One shadow session: which span of which session it checks, and where.
struct ShadowPlan {
  uint64_t session_id = 0;          // the checked session
  uint64_t shadow_id = 0;           // set by the caller (a fresh session id)
  int64_t max_length = 0;           // cache positions, as the checked session's
  std::vector<v1::RouteHop> route;  // the checked route with one span's hop on `partner`
  std::string checked;              // that span's node on the checked route
  std::string partner;              // the replica that runs it in the shadow
  int64_t layer_begin = 0, layer_end = 0;
};

// From the sampler: it is done with a shadow.
struct ShadowEnd {
  uint64_t session_id = 0;
  uint64_t shadow_id = 0;
  int64_t compared = 0;             // positions whose digests were compared
  std::optional<int64_t> mismatch;  // the first position whose digests differed
};

// A node found wrong by its replicas.
struct Quarantine {
  std::string node_id;
  std::string why;  // "its hidden states differed from those of 'a' and 'b', which agree (layers 10-20)"
};

class SpotChecks {
 public:
  // `fraction` of sessions checked (0: none, 1: every one); `seed` varies
  // which.
  SpotChecks(double fraction, uint64_t seed, std::chrono::milliseconds open_timeout = std::chrono::seconds(30))
      : fraction_(fraction), seed_(seed), open_timeout_(open_timeout) {}

  double fraction() const { return fraction_; }
  // Whether session `session_id` (over `route`, `max_length` positions) is
  // checked, and how: the shard hop of `route` and the replica among
  // `usable` (live nodes that can take a session) with the same layers
  // whose pair was compared least (ties: the session id picks); both on
  // the kernels backend. nullopt when not picked, or when no span of the
  // route has such a replica.
  std::optional<ShadowPlan> Plan(uint64_t session_id, const std::vector<v1::RouteHop>& route, int64_t max_length,
                                 const std::vector<ShardEntry>& usable) const;

  bool Has(uint64_t shadow_id) const { return shadows_.count(shadow_id) > 0; }
  size_t size() const { return shadows_.size(); }
  Actions Open(ShadowPlan plan, const std::string& fingerprint, Clock::time_point now);
  Actions Opened(uint64_t shadow_id, const std::string& node_id);
  Actions Failed(uint64_t shadow_id, const std::string& why);
  // `found`: the nodes this verdict quarantines.
  Actions Ended(const ShadowEnd& end, std::vector<Quarantine>* found);
  Actions Tick(Clock::time_point now);

  // Records one comparison of `a` and `b` on layers [begin, end); the nodes
  // it quarantines (each once).
  std::vector<Quarantine> Record(const std::string& a, const std::string& b, int64_t begin, int64_t end, bool agree);
  bool Quarantined(const std::string& node_id) const { return odd_.count(node_id) > 0; }
  // Why `node_id` is quarantined ("" when it is not). The verdict outlives
  // the node's registry entry: a node that leaves (or goes silent past the
  // registry's ttl) and comes back is quarantined again (the scheduler asks
  // here on every announce).
  std::string Why(const std::string& node_id) const {
    auto it = odd_.find(node_id);
    return it == odd_.end() ? "" : it->second;
  }

  uint64_t checks_total() const { return checks_total_; }          // shadows that compared at least one position
  uint64_t mismatches_total() const { return mismatches_total_; }  // shadows whose digests differed
  uint64_t positions_total() const { return positions_total_; }    // positions compared, all shadows

 private:
  struct Shadow {
    ShadowPlan plan;
    std::set<std::string> waiting;  // shards whose SessionOpened has not come
    Clock::time_point opened_at;
  };
  struct PairKey {
    std::string a, b;  // a < b
    int64_t begin = 0, end = 0;
    bool operator<(const PairKey& o) const { return std::tie(begin, end, a, b) < std::tie(o.begin, o.end, o.a, o.b); }
  };
  struct PairCount {
    uint64_t agree = 0, differ = 0;
  };
  static PairKey Key(const std::string& x, const std::string& y, int64_t begin, int64_t end);
  uint64_t Compared(const std::string& x, const std::string& y, int64_t begin, int64_t end) const;
  void Close(const Shadow& s, Actions& out) const;

  double fraction_;
  uint64_t seed_;
  std::chrono::milliseconds open_timeout_;
  std::map<uint64_t, Shadow> shadows_;  // by shadow id
  std::map<PairKey, PairCount> pairs_;
  std::map<std::string, std::string> odd_;  // quarantined: node -> why
  uint64_t checks_total_ = 0, mismatches_total_ = 0, positions_total_ = 0;
};

}  // namespace troupe::scheduling
