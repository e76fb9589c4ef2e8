#include "pipeline/sampling/contrastive.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace troupe {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr double kMaxFloat = std::numeric_limits<float>::max();

// NaN -> -inf, +inf -> the largest float (the Sampler's convention).
double Sanitize(float logit) {
  if (std::isnan(logit)) return kNegInf;
  return std::min<double>(logit, kMaxFloat);
}

// log(sum(exp(row))) in double over sanitized values; -inf if no value is
// finite. *max_out receives the largest sanitized value.
double LogSumExp(const float* row, int64_t vocab, double* max_out) {
  double m = kNegInf;
  for (int64_t i = 0; i < vocab; ++i) m = std::max(m, Sanitize(row[i]));
  *max_out = m;
  if (m == kNegInf) return kNegInf;
  double sum = 0.0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(Sanitize(row[i]) - m);
  return m + std::log(sum);
}

}  // namespace

void ContrastiveLogits(const float* expert, const float* amateur, int64_t vocab, const ContrastiveParams& params,
                       float* out) {
  if (vocab < 1) return;
  double max_e = 0.0;
  double max_a = 0.0;
  const double lse_e = LogSumExp(expert, vocab, &max_e);
  const double lse_a = LogSumExp(amateur, vocab, &max_a);
  const double log_alpha = params.alpha > 0.0f ? std::log(static_cast<double>(params.alpha)) : kNegInf;
  const double beta = params.beta;
  for (int64_t i = 0; i < vocab; ++i) {
    const double le = Sanitize(expert[i]);
    const double la = Sanitize(amateur[i]);
    // Implausible: ruled out by the expert, or below the alpha cut.
    if (le == kNegInf || !(le - max_e >= log_alpha)) {
      out[i] = -std::numeric_limits<float>::infinity();
      continue;
    }
    if (beta == 0.0) {  // only the alpha cut
      out[i] = static_cast<float>(le);
      continue;
    }
    if (la == kNegInf || lse_a == kNegInf) {  // the amateur rules it out: score +inf
      out[i] = std::numeric_limits<float>::max();
      continue;
    }
    // (le - lse_e) - (la - lse_a) is exactly 0 when the rows are equal.
    const double score = le + beta * ((le - lse_e) - (la - lse_a));
    out[i] = static_cast<float>(std::clamp(score, -kMaxFloat, kMaxFloat));
  }
}

}  // namespace troupe
