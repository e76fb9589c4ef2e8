#include "scheduling/span_choice.h"

#include <algorithm>
#include <set>
#include <string>
#include <tuple>

namespace troupe::scheduling {
namespace {

std::string Mib(uint64_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

}  // namespace

Result<int64_t> LayersThatFit(const std::vector<uint64_t>& layer_bytes, uint64_t memory_budget_bytes,
                              uint64_t cache_budget_bytes) {
  if (layer_bytes.empty()) return Status::InvalidArgument("the model has no layers");
  const uint64_t largest = std::max<uint64_t>(1, *std::max_element(layer_bytes.begin(), layer_bytes.end()));
  const uint64_t fixed = cache_budget_bytes + kNodeOverheadBytes;
  const uint64_t room = memory_budget_bytes > fixed ? memory_budget_bytes - fixed : 0;
  const uint64_t fit = room / largest;
  if (fit == 0) {
    return Status::InvalidArgument("memory budget " + Mib(memory_budget_bytes) + " holds no layer: one layer needs " +
                                   Mib(largest) + " beside the KV cache budget " + Mib(cache_budget_bytes) +
                                   " and about " + Mib(kNodeOverheadBytes) + " for the process");
  }
  return static_cast<int64_t>(std::min<uint64_t>(fit, layer_bytes.size()));
}

LayerSpan ChooseSpan(const std::vector<uint32_t>& replicas, const std::vector<LayerSpan>& spans, int64_t max_layers,
                     std::optional<LayerSpan> prefer) {
  const int64_t n = static_cast<int64_t>(replicas.size());
  if (n == 0) return {0, 0};
  const int64_t k = std::clamp<int64_t>(max_layers, 1, n);
  std::set<int64_t> bounds = {0, n};
  for (const LayerSpan& s : spans) {
    if (s.begin >= 0 && s.begin <= n) bounds.insert(s.begin);
    if (s.end >= 0 && s.end <= n) bounds.insert(s.end);
  }
  std::vector<LayerSpan> candidates;
  for (int64_t b : bounds) {
    for (int64_t e : bounds) {
      if (e > b && e - b <= k) candidates.push_back({b, e});
    }
  }
  if (candidates.empty()) {  // every gap between boundaries is wider than the node holds
    for (int64_t b : bounds) {
      if (b < n) candidates.push_back({b, std::min(n, b + k)});
    }
  }
  // Smaller is better: (lowest count, -layers at it, sorted counts, not preferred, begin).
  auto score = [&replicas, &prefer](const LayerSpan& s) {
    std::vector<uint32_t> counts(replicas.begin() + s.begin, replicas.begin() + s.end);
    std::sort(counts.begin(), counts.end());
    const int64_t at_lowest = std::count(counts.begin(), counts.end(), counts.front());
    const bool preferred = prefer && prefer->begin == s.begin && prefer->end == s.end;
    return std::make_tuple(counts.front(), -at_lowest, counts, !preferred, s.begin);
  };
  LayerSpan best = candidates.front();
  auto best_score = score(best);
  for (const LayerSpan& c : candidates) {
    auto sc = score(c);
    if (sc < best_score) {
      best = c;
      best_score = std::move(sc);
    }
  }
  return best;
}

uint32_t WeakestCoverage(const std::vector<uint32_t>& replicas) {
  return replicas.empty() ? 0 : *std::min_element(replicas.begin(), replicas.end());
}

std::optional<LayerSpan> BetterSpan(const std::vector<uint32_t>& replicas, const std::vector<LayerSpan>& spans,
                                    LayerSpan current, int64_t max_layers) {
  const int64_t n = static_cast<int64_t>(replicas.size());
  if (n == 0 || current.begin < 0 || current.end > n || current.begin >= current.end) return std::nullopt;
  std::vector<uint32_t> without = replicas;
  for (int64_t l = current.begin; l < current.end; ++l) {
    if (without[l] == 0) return std::nullopt;  // the counts do not include this node: nothing to judge
    without[l]--;
  }
  std::vector<LayerSpan> others = spans;
  auto self = std::find_if(others.begin(), others.end(),
                           [&](const LayerSpan& s) { return s.begin == current.begin && s.end == current.end; });
  if (self != others.end()) others.erase(self);
  const LayerSpan target = ChooseSpan(without, others, max_layers);
  if (target.begin == current.begin && target.end == current.end) return std::nullopt;
  std::vector<uint32_t> after = without;
  for (int64_t l = target.begin; l < target.end; ++l) after[l]++;
  if (WeakestCoverage(after) <= WeakestCoverage(replicas)) return std::nullopt;
  return target;
}

}  // namespace troupe::scheduling
