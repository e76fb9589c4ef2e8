#include "pipeline/sampling/candidate_filters.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace troupe {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kMaxFloat = std::numeric_limits<float>::max();

// RanksBefore as a function object, so the std algorithms inline it.
constexpr auto kByRank = [](const Candidate& a, const Candidate& b) { return RanksBefore(a, b); };

// Index of the first candidate in rank order; the list must not be empty.
size_t FirstInRank(const std::vector<Candidate>& cands) {
  size_t best = 0;
  for (size_t i = 1; i < cands.size(); ++i) {
    if (RanksBefore(cands[i], cands[best])) best = i;
  }
  return best;
}

float MaxLogit(const std::vector<Candidate>& cands) {
  float m = kNegInf;
  for (const Candidate& c : cands) m = std::max(m, c.logit);
  return m;
}

// Keeps candidates with logit - max_logit >= log_ratio - slack, in their
// order; if none qualifies keeps only the first in rank order.
void KeepAboveLogRatio(double log_ratio, float max_logit, std::vector<Candidate>* cands) {
  const Candidate first = (*cands)[FirstInRank(*cands)];
  const double cut = log_ratio - kThresholdSlack;
  auto end = std::remove_if(cands->begin(), cands->end(),
                            [&](const Candidate& c) { return !(static_cast<double>(c.logit) - max_logit >= cut); });
  cands->resize(static_cast<size_t>(end - cands->begin()));
  if (cands->empty()) cands->push_back(first);  // capacity is there: no allocation
}

}  // namespace

void Softmax(std::vector<Candidate>* cands) {
  const float m = MaxLogit(*cands);
  if (cands->empty() || m == kNegInf) return;
  double sum = 0.0;
  for (Candidate& c : *cands) {
    c.p = std::exp(c.logit - m);
    sum += c.p;
  }
  const double inv = 1.0 / sum;
  for (Candidate& c : *cands) c.p = static_cast<float>(c.p * inv);
}

void RecentDistinctIds(const std::vector<int32_t>& history, int32_t last_n, std::vector<int32_t>* ids) {
  const size_t n = history.size();
  const size_t window = last_n < 0 ? n : std::min(n, static_cast<size_t>(last_n));
  ids->assign(history.end() - static_cast<std::ptrdiff_t>(window), history.end());
  std::sort(ids->begin(), ids->end());
  ids->erase(std::unique(ids->begin(), ids->end()), ids->end());
}

void ApplyRepetitionPenalty(const std::vector<int32_t>& ids, float penalty, std::vector<Candidate>* by_id) {
  if (penalty == 1.0f) return;
  const int64_t vocab = static_cast<int64_t>(by_id->size());
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab) continue;
    float& logit = (*by_id)[static_cast<size_t>(id)].logit;
    if (!std::isfinite(logit)) continue;  // -inf stays impossible
    const float penalized = logit > 0.0f ? logit / penalty : logit * penalty;
    logit = std::clamp(penalized, -kMaxFloat, kMaxFloat);  // a finite logit stays finite
  }
}

namespace {

void AddToLogit(int32_t id, float delta, std::vector<Candidate>* by_id) {
  if (id < 0 || id >= static_cast<int64_t>(by_id->size())) return;
  float& logit = (*by_id)[static_cast<size_t>(id)].logit;
  if (!std::isfinite(logit)) return;  // -inf stays impossible
  logit = std::clamp(logit + delta, -kMaxFloat, kMaxFloat);
}

}  // namespace

void ApplyPresenceFrequencyPenalty(const int32_t* generated, size_t n, float presence, float frequency,
                                   std::vector<Candidate>* by_id) {
  if ((presence == 0.0f && frequency == 0.0f) || n == 0) return;
  std::vector<int32_t> ids(generated, generated + n);
  std::sort(ids.begin(), ids.end());
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j < ids.size() && ids[j] == ids[i]) ++j;
    AddToLogit(ids[i], -(static_cast<float>(j - i) * frequency + presence), by_id);
    i = j;
  }
}

void BanRepeatedNgrams(const std::vector<int32_t>& history, int32_t n, std::vector<Candidate>* by_id) {
  if (n <= 0) return;
  const size_t len = history.size();
  const size_t prefix = static_cast<size_t>(n) - 1;
  if (len < prefix) return;
  // Every earlier n-gram whose first n - 1 tokens equal the last n - 1 tokens.
  for (size_t i = 0; i + prefix < len; ++i) {
    if (std::equal(history.begin() + static_cast<std::ptrdiff_t>(i),
                   history.begin() + static_cast<std::ptrdiff_t>(i + prefix),
                   history.end() - static_cast<std::ptrdiff_t>(prefix))) {
      const int32_t banned = history[i + prefix];
      if (banned >= 0 && banned < static_cast<int64_t>(by_id->size())) {
        (*by_id)[static_cast<size_t>(banned)].logit = kNegInf;
      }
    }
  }
}

void ApplyLogitBias(const std::vector<std::pair<int32_t, float>>& bias, std::vector<Candidate>* by_id) {
  for (const auto& [id, b] : bias) AddToLogit(id, b, by_id);
}

void KeepTopK(int64_t k, std::vector<Candidate>* cands) {
  if (k <= 0 || k >= static_cast<int64_t>(cands->size())) return;
  std::partial_sort(cands->begin(), cands->begin() + k, cands->end(), kByRank);
  cands->resize(static_cast<size_t>(k));
}

void KeepTopP(float top_p, std::vector<Candidate>* cands) {
  if (top_p >= 1.0f || cands->empty() || MaxLogit(*cands) == kNegInf) return;
  Softmax(cands);
  const double target = static_cast<double>(top_p) * (1.0 - kThresholdSlack);
  // Tokens below `negligible` hold less than (1 - target) / 2 together, so the
  // nucleus lies inside the rest: drop them first with one cheap pass.
  const double negligible = (1.0 - target) / (2.0 * static_cast<double>(cands->size()));
  cands->erase(
      std::remove_if(cands->begin(), cands->end(), [negligible](const Candidate& c) { return c.p < negligible; }),
      cands->end());
  // Invariant: [begin, lo) ranks before [lo, hi), is kept, and holds
  // probability `below` < target; the cut lies in [lo, hi).
  auto lo = cands->begin();
  auto hi = cands->end();
  double below = 0.0;
  constexpr std::ptrdiff_t kSortBelow = 256;
  // Usual case first: a peaked distribution whose nucleus fits in a small
  // head, found by a cheap partial sort.
  const auto head = lo + std::min<std::ptrdiff_t>(hi - lo, 64);
  std::partial_sort(lo, head, hi, kByRank);
  for (auto it = lo; it != head; ++it) {
    if (below + it->p >= target) {
      cands->resize(static_cast<size_t>(it + 1 - cands->begin()));
      return;
    }
    below += it->p;
  }
  lo = head;
  // Otherwise a weighted quickselect over the rest: O(n) expected.
  while (hi - lo > kSortBelow) {
    const auto mid = lo + (hi - lo) / 2;
    std::nth_element(lo, mid, hi, kByRank);
    double mass = 0.0;
    for (auto it = lo; it <= mid; ++it) mass += it->p;
    if (below + mass >= target) {
      hi = mid + 1;
    } else {
      below += mass;
      lo = mid + 1;
    }
  }
  std::sort(lo, hi, kByRank);
  for (auto it = lo; it != hi; ++it) {
    below += it->p;
    if (below >= target) {
      hi = it + 1;
      break;
    }
  }
  cands->resize(static_cast<size_t>(hi - cands->begin()));  // rounding short: keep [begin, hi)
}

void KeepMinP(float min_p, std::vector<Candidate>* cands) {
  if (min_p <= 0.0f || cands->empty()) return;
  const float m = MaxLogit(*cands);
  if (m == kNegInf) return;
  KeepAboveLogRatio(std::log(static_cast<double>(min_p)), m, cands);
}

void KeepTopA(float top_a, std::vector<Candidate>* cands) {
  if (top_a <= 0.0f || cands->empty()) return;
  const float m = MaxLogit(*cands);
  if (m == kNegInf) return;
  // p >= a * p_max^2  <=>  exp(l - m) / S >= a / S^2  <=>  l - m >= log(a / S),
  // where S = sum exp(l - m) = 1 / p_max.
  double sum = 0.0;
  for (const Candidate& c : *cands) sum += std::exp(static_cast<double>(c.logit) - m);
  KeepAboveLogRatio(std::log(static_cast<double>(top_a)) - std::log(sum), m, cands);
}

void ApplyTemperature(float temperature, std::vector<Candidate>* cands) {
  const float m = MaxLogit(*cands);
  if (m == kNegInf) return;
  for (Candidate& c : *cands) c.logit = (c.logit - m) / temperature;
}

int32_t ArgmaxId(const std::vector<Candidate>& cands) { return cands.empty() ? -1 : cands[FirstInRank(cands)].id; }

int32_t DrawId(const std::vector<Candidate>& cands, double u) {
  double sum = 0.0;
  for (const Candidate& c : cands) sum += c.p;
  if (!(sum > 0.0)) return ArgmaxId(cands);
  const double target = u * sum;
  double cumulative = 0.0;
  int32_t last_possible = -1;
  for (const Candidate& c : cands) {
    if (!(c.p > 0.0f)) continue;
    cumulative += c.p;
    last_possible = c.id;
    if (cumulative > target) return c.id;
  }
  return last_possible;  // u * sum rounded up past the total
}

}  // namespace troupe
