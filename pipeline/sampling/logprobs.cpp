#include "pipeline/sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace troupe {

TokenLogprobs ComputeLogprobs(const float* logits, int64_t vocab, int32_t chosen, int32_t top_n) {
  double max = logits[0];
  for (int64_t i = 1; i < vocab; ++i) max = std::max(max, static_cast<double>(logits[i]));
  double sum = 0.0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - max);
  const double log_z = max + std::log(sum);
  auto logprob = [&](int64_t i) { return static_cast<float>(static_cast<double>(logits[i]) - log_z); };

  TokenLogprobs out;
  out.logprob = logprob(chosen);
  const int64_t n = std::clamp<int64_t>(top_n, 0, vocab);
  if (n == 0) return out;
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  auto more_likely = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), more_likely);
  out.top.reserve(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k)
    out.top.push_back(TokenLogprob{ids[static_cast<size_t>(k)], logprob(ids[static_cast<size_t>(k)])});
  return out;
}

}  // namespace troupe
