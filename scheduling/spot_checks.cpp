#include "scheduling/spot_checks.h"

#include <xxhash.h>

#include <limits>
#include <tuple>

#include "scheduling/job_lifecycle.h"
#include "scheduling/session_messages.h"

namespace troupe::scheduling {
namespace {

std::string Layers(int64_t begin, int64_t end) { return std::to_string(begin) + "-" + std::to_string(end); }

// Only the kernels backend is bit-exact whatever the batch; the torch
// backend's results vary with batching by rounding, so its nodes are not
// compared (their heartbeats' device: "kernels (cpu)", "torch (cuda:0, bf16)").
bool Exact(const ShardEntry& e) { return e.details.device.rfind("kernels", 0) == 0; }

}  // namespace

uint64_t HiddenDigest(const float* row, int64_t n) { return XXH64(row, static_cast<size_t>(n) * sizeof(float), 0); }

std::optional<bool> DigestMatch::Add(std::map<int64_t, uint64_t>& mine, std::map<int64_t, uint64_t>& other,
                                     int64_t position, uint64_t digest) {
  if (position < first_) return std::nullopt;
  if (auto it = other.find(position); it != other.end()) {
    const bool same = it->second == digest;
    other.erase(it);
    ++compared_;
    return same;
  }
  mine[position] = digest;
  while (mine.size() > kMaxPending) mine.erase(mine.begin());
  return std::nullopt;
}

SpotChecks::PairKey SpotChecks::Key(const std::string& x, const std::string& y, int64_t begin, int64_t end) {
  return x < y ? PairKey{x, y, begin, end} : PairKey{y, x, begin, end};
}

uint64_t SpotChecks::Compared(const std::string& x, const std::string& y, int64_t begin, int64_t end) const {
  auto it = pairs_.find(Key(x, y, begin, end));
  return it == pairs_.end() ? 0 : it->second.agree + it->second.differ;
}

std::optional<ShadowPlan> SpotChecks::Plan(uint64_t session_id, const std::vector<v1::RouteHop>& route,
                                           int64_t max_length, const std::vector<ShardEntry>& usable) const {
  if (fraction_ <= 0) return std::nullopt;
  const uint64_t hash = Mix64(session_id ^ seed_);
  if (fraction_ < 1 && static_cast<double>(hash >> 11) * 0x1.0p-53 >= fraction_) return std::nullopt;
  // Every (hop, replica) pair the route allows; the least compared wins,
  // ties going round by the session's hash.
  struct Candidate {
    size_t hop;
    const ShardEntry* partner;
  };
  std::vector<Candidate> best;
  uint64_t least = std::numeric_limits<uint64_t>::max();
  for (size_t i = 0; i < route.size(); ++i) {
    const v1::RouteHop& hop = route[i];
    if (hop.stage() != v1::STAGE_SHARD) continue;
    const ShardEntry* checked = nullptr;
    for (const ShardEntry& e : usable) {
      if (e.node_id == hop.node_id()) checked = &e;
    }
    if (!checked || !Exact(*checked)) continue;
    for (const ShardEntry& e : usable) {
      if (!Exact(e) || e.node_id == hop.node_id() || e.layer_begin != hop.layer_begin() ||
          e.layer_end != hop.layer_end() || !e.stages.empty() || odd_.count(e.node_id)) {
        continue;
      }
      const uint64_t n = Compared(hop.node_id(), e.node_id, e.layer_begin, e.layer_end);
      if (n < least) {
        least = n;
        best.clear();
      }
      if (n == least) best.push_back({i, &e});
    }
  }
  if (best.empty()) return std::nullopt;
  const Candidate& pick = best[(hash >> 3) % best.size()];
  ShadowPlan plan;
  plan.session_id = session_id;
  plan.max_length = max_length;
  plan.route = route;
  v1::RouteHop& hop = plan.route[pick.hop];
  plan.checked = hop.node_id();
  plan.partner = pick.partner->node_id;
  plan.layer_begin = hop.layer_begin();
  plan.layer_end = hop.layer_end();
  hop.set_node_id(pick.partner->node_id);
  hop.set_endpoint(pick.partner->endpoint);
  hop.set_public_key(pick.partner->public_key);
  return plan;
}

Actions SpotChecks::Open(ShadowPlan plan, const std::string& fingerprint, Clock::time_point now) {
  Actions out;
  Shadow s{std::move(plan), {}, now};
  for (const v1::RouteHop& hop : s.plan.route) {
    if (hop.stage() != v1::STAGE_SHARD) continue;
    s.waiting.insert(hop.node_id());
    out.push_back(ToNode{hop.node_id(), hop.endpoint(), s.plan.shadow_id,
                         SessionOpenEnvelope(s.plan.shadow_id, s.plan.max_length, fingerprint)});
  }
  out.push_back(Log{"spot check: session " + std::to_string(s.plan.session_id) + " runs a shadow (" +
                        std::to_string(s.plan.shadow_id) + ") with layers " +
                        Layers(s.plan.layer_begin, s.plan.layer_end) + " on '" + s.plan.partner + "' instead of '" +
                        s.plan.checked + "'",
                    0, s.plan.session_id});
  shadows_.emplace(s.plan.shadow_id, std::move(s));
  return out;
}

Actions SpotChecks::Opened(uint64_t shadow_id, const std::string& node_id) {
  Actions out;
  auto it = shadows_.find(shadow_id);
  if (it == shadows_.end() || it->second.waiting.empty()) return out;
  it->second.waiting.erase(node_id);
  if (it->second.waiting.empty()) {
    out.push_back(ShadowStart{it->second.plan.session_id, shadow_id, it->second.plan.route});
  }
  return out;
}

void SpotChecks::Close(const Shadow& s, Actions& out) const {
  for (const v1::RouteHop& hop : s.plan.route) {
    if (hop.stage() != v1::STAGE_SHARD) continue;
    out.push_back(ToNode{hop.node_id(), hop.endpoint(), s.plan.shadow_id, SessionCloseEnvelope(s.plan.shadow_id)});
  }
}

Actions SpotChecks::Failed(uint64_t shadow_id, const std::string& why) {
  Actions out;
  auto it = shadows_.find(shadow_id);
  if (it == shadows_.end()) return out;
  const Shadow s = std::move(it->second);
  shadows_.erase(it);
  Close(s, out);
  out.push_back(ShadowStop{s.plan.session_id});
  out.push_back(
      Log{"spot check of session " + std::to_string(s.plan.session_id) + " given up: " + why, 0, s.plan.session_id});
  return out;
}

Actions SpotChecks::Ended(const ShadowEnd& end, std::vector<Quarantine>* found) {
  Actions out;
  auto it = shadows_.find(end.shadow_id);
  if (it == shadows_.end()) return out;
  const Shadow s = std::move(it->second);
  shadows_.erase(it);
  Close(s, out);
  const ShadowPlan& p = s.plan;
  if (end.compared == 0 && !end.mismatch) return out;  // ended before any position could be compared
  checks_total_++;
  positions_total_ += static_cast<uint64_t>(end.compared);
  if (end.mismatch) {
    mismatches_total_++;
    out.push_back(Log{"spot check: shards '" + p.checked + "' and '" + p.partner + "' computed different hidden " +
                          "states with layers " + Layers(p.layer_begin, p.layer_end) + " for session " +
                          std::to_string(p.session_id) + " at position " + std::to_string(*end.mismatch) +
                          "; one of them is wrong (a third replica of these layers tells which)",
                      0, p.session_id, true});
  }
  for (Quarantine& q : Record(p.checked, p.partner, p.layer_begin, p.layer_end, !end.mismatch)) {
    out.push_back(Log{"spot check: quarantined shard '" + q.node_id + "': " + q.why, 0, p.session_id, true});
    if (found) found->push_back(std::move(q));
  }
  return out;
}

Actions SpotChecks::Tick(Clock::time_point now) {
  Actions out;
  std::vector<uint64_t> late;
  for (const auto& [id, s] : shadows_) {
    if (!s.waiting.empty() && now - s.opened_at > open_timeout_) late.push_back(id);
  }
  for (uint64_t id : late) {
    std::string who;
    for (const std::string& n : shadows_.at(id).waiting) who += (who.empty() ? "'" : ", '") + n + "'";
    Actions a = Failed(id, "no SessionOpened from " + who);
    out.insert(out.end(), std::make_move_iterator(a.begin()), std::make_move_iterator(a.end()));
  }
  return out;
}

std::vector<Quarantine> SpotChecks::Record(const std::string& a, const std::string& b, int64_t begin, int64_t end,
                                           bool agree) {
  PairCount& c = pairs_[Key(a, b, begin, end)];
  (agree ? c.agree : c.differ)++;
  // Odd: a node that differed from two replicas of its span which agreed
  // with each other.
  std::vector<Quarantine> found;
  std::map<std::pair<std::string, std::pair<int64_t, int64_t>>, std::vector<std::string>> differed;
  for (const auto& [k, n] : pairs_) {
    if (n.differ == 0) continue;
    differed[{k.a, {k.begin, k.end}}].push_back(k.b);
    differed[{k.b, {k.begin, k.end}}].push_back(k.a);
  }
  for (const auto& [who, partners] : differed) {
    const std::string& node = who.first;
    if (odd_.count(node)) continue;
    const auto [lb, le] = who.second;
    for (size_t i = 0; i < partners.size(); ++i) {
      for (size_t j = i + 1; j < partners.size(); ++j) {
        auto it = pairs_.find(Key(partners[i], partners[j], lb, le));
        if (it == pairs_.end() || it->second.agree == 0 || odd_.count(node)) continue;
        const std::string why = "its hidden states differed from those of '" + partners[i] + "' and '" + partners[j] +
                                "', which agree (layers " + Layers(lb, le) + ")";
        odd_[node] = why;
        found.push_back({node, why});
      }
    }
  }
  return found;
}

}  // namespace troupe::scheduling
