// Sampler: the chain order, min_tokens, greedy, determinism in (seed, step),
// and the empirical distribution of temperature sampling.
#include "pipeline/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "pipeline/sampling/candidate_filters.h"

namespace troupe {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

SamplingParams Temperature(float t, uint64_t seed = 1) {
  SamplingParams p;
  p.temperature = t;
  p.seed = seed;
  return p;
}

std::vector<float> RandomLogits(int64_t vocab, uint32_t seed, float scale = 3.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> logits(static_cast<size_t>(vocab));
  for (float& l : logits) l = dist(gen);
  return logits;
}

std::vector<int32_t> Generate(Sampler& s, const std::vector<float>& logits, int64_t steps) {
  std::vector<int32_t> out;
  for (int64_t step = 0; step < steps; ++step) {
    out.push_back(s.Sample(logits.data(), static_cast<int64_t>(logits.size()), step, {}));
  }
  return out;
}

// softmax(logits / t), restricted to `keep` (all when empty) and renormalized.
std::vector<double> Expected(const std::vector<float>& logits, double t, const std::vector<int32_t>& keep = {}) {
  std::vector<double> p(logits.size(), 0.0);
  double sum = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) {
    const bool kept = keep.empty() || std::count(keep.begin(), keep.end(), i) > 0;
    if (kept) sum += p[i] = std::exp(logits[i] / t);
  }
  for (double& x : p) x /= sum;
  return p;
}

// Draws `n` tokens (steps 0..n-1) and checks the frequencies against
// `expected`: chi-square below the p = 0.001 critical value and every
// frequency within 0.01. Tokens with expected probability 0 must never occur.
void ExpectDistribution(Sampler& s, const std::vector<float>& logits, const std::vector<double>& expected,
                        int n = 20000) {
  std::vector<int> counts(logits.size(), 0);
  for (int step = 0; step < n; ++step) {
    const int32_t t = s.Sample(logits.data(), static_cast<int64_t>(logits.size()), step, {});
    ASSERT_GE(t, 0);
    ASSERT_LT(t, static_cast<int32_t>(logits.size()));
    ++counts[static_cast<size_t>(t)];
  }
  // Chi-square critical values at p = 0.001 for 1..6 degrees of freedom.
  const double kCritical[] = {0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46};
  double chi2 = 0.0;
  int dof = -1;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double want = expected[i] * n;
    if (expected[i] == 0.0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " has probability 0";
      continue;
    }
    chi2 += (counts[i] - want) * (counts[i] - want) / want;
    ++dof;
    EXPECT_NEAR(static_cast<double>(counts[i]) / n, expected[i], 0.01) << "token " << i;
  }
  ASSERT_GE(dof, 1);
  ASSERT_LE(dof, 6);
  EXPECT_LT(chi2, kCritical[dof]) << "dof " << dof;
}

TEST(SamplerTest, GreedyIsArgmaxTiesToLowestId) {
  Sampler s(SamplingParams{}, {});
  for (uint32_t trial = 0; trial < 5; ++trial) {
    const auto logits = RandomLogits(50000, trial);
    const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
    EXPECT_EQ(s.Sample(logits.data(), 50000, trial, {}), best);
  }
  const std::vector<float> tied = {1.0f, 3.0f, 3.0f, 3.0f};
  EXPECT_EQ(s.Sample(tied.data(), 4, 0, {}), 1);

  // Negative temperature is greedy too, and ignores the seed.
  Sampler negative(Temperature(-1.0f, 99), {});
  EXPECT_EQ(negative.Sample(tied.data(), 4, 7, {}), 1);
}

// Plain greedy (no bias, no penalty) takes a one-pass argmax instead of the
// candidate chain; a zero logit bias forces the chain with the same logits.
// Both must pick the same token for ties, NaN, +-inf, all -inf, and eos
// masked (or not: when nothing else is possible) before min_tokens.
TEST(SamplerTest, PlainGreedyPicksWhatTheCandidateChainPicks) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<std::vector<float>> cases = {
      {1.0f, 3.0f, 3.0f, 3.0f},   {nan, 2.0f, nan, 2.0f},    {-kInf, -kInf, -kInf, -kInf},
      {nan, nan, nan, nan},       {kInf, 1.0f, kInf, 0.0f},  {std::numeric_limits<float>::max(), kInf, 0.0f, 0.0f},
      {-kInf, -kInf, 9.0f, 9.0f}, {0.0f, -kInf, 5.0f, 5.0f}, {-kInf, -kInf, -kInf, 7.0f},
  };
  std::mt19937 gen(5);
  for (uint32_t trial = 0; trial < 40; ++trial) {
    std::vector<float> logits = RandomLogits(3000, trial, 1.0f);
    for (float& l : logits) {
      l = std::round(l * 4.0f) / 4.0f;  // many ties
      const uint32_t r = gen() % 64;
      if (r == 0) l = nan;
      if (r == 1) l = -kInf;
      if (r == 2 && trial % 8 == 0) l = kInf;
    }
    cases.push_back(std::move(logits));
  }
  for (const std::vector<int32_t>& eos : {std::vector<int32_t>{}, std::vector<int32_t>{2, 3}}) {
    for (int64_t min_tokens : {int64_t{0}, int64_t{2}}) {
      SamplingParams plain;
      plain.min_tokens = min_tokens;
      SamplingParams chain = plain;
      chain.logit_bias = {{0, 0.0f}};
      Sampler fast(plain, eos), slow(chain, eos);
      for (size_t c = 0; c < cases.size(); ++c) {
        const auto vocab = static_cast<int64_t>(cases[c].size());
        for (int64_t step : {int64_t{0}, int64_t{3}}) {
          EXPECT_EQ(fast.Sample(cases[c].data(), vocab, step, {}), slow.Sample(cases[c].data(), vocab, step, {}))
              << "case " << c << ", step " << step << ", min_tokens " << min_tokens << ", " << eos.size() << " eos";
        }
      }
    }
  }
}

TEST(SamplerTest, TopKNeverEmitsOutsideTopK) {
  const auto logits = RandomLogits(1000, 3, 1.0f);
  std::vector<int32_t> order(logits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  const std::set<int32_t> top5(order.begin(), order.begin() + 5);

  std::set<int32_t> seen;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    SamplingParams p = Temperature(2.0f, seed);
    p.top_k = 5;
    Sampler s(p, {});
    for (int32_t t : Generate(s, logits, 50)) {
      ASSERT_TRUE(top5.count(t)) << "token " << t << " outside the top 5, seed " << seed;
      seen.insert(t);
    }
  }
  EXPECT_EQ(seen, top5);  // and it really samples among all five
}

TEST(SamplerTest, RepetitionPenaltyAppliesOncePerDistinctToken) {
  SamplingParams p;
  p.repeat_penalty = 2.0f;
  Sampler s(p, {});
  const std::vector<float> logits = {3.0f, 1.0f};
  // Once: 3 / 2 = 1.5 > 1. Twice would give 0.75 < 1.
  EXPECT_EQ(s.Sample(logits.data(), 2, 0, {0, 0}), 0);
  // Negative logits are multiplied: -1 * 2 = -2 < -1.5 (dividing would give -0.5).
  const std::vector<float> negative = {-1.0f, -1.5f};
  EXPECT_EQ(s.Sample(negative.data(), 2, 0, {}), 0);
  EXPECT_EQ(s.Sample(negative.data(), 2, 0, {0}), 1);
}

TEST(SamplerTest, RepetitionPenaltyOnlyCoversLastN) {
  const std::vector<float> logits = {3.0f, 2.0f, -10.0f, -10.0f, -10.0f, -10.0f};
  const std::vector<int32_t> history = {0, 5, 5};
  auto pick = [&](int32_t last_n) {
    SamplingParams p;
    p.repeat_penalty = 2.0f;
    p.repeat_last_n = last_n;
    Sampler s(p, {});
    return s.Sample(logits.data(), 6, 0, history);
  };
  EXPECT_EQ(pick(0), 0);   // off
  EXPECT_EQ(pick(2), 0);   // window {5, 5}: token 0 not penalized
  EXPECT_EQ(pick(3), 1);   // window covers token 0: 1.5 < 2
  EXPECT_EQ(pick(-1), 1);  // whole history
}

TEST(SamplerTest, MinTokensMasksEosBeforeStep) {
  SamplingParams p;
  p.min_tokens = 2;
  Sampler greedy(p, {3});
  const std::vector<float> logits = {0.0f, 1.0f, 0.0f, 10.0f};
  EXPECT_EQ(greedy.Sample(logits.data(), 4, 0, {}), 1);
  EXPECT_EQ(greedy.Sample(logits.data(), 4, 1, {}), 1);
  EXPECT_EQ(greedy.Sample(logits.data(), 4, 2, {}), 3);
  EXPECT_TRUE(greedy.IsEos(3));
  EXPECT_FALSE(greedy.IsEos(1));

  // Sampled: never eos before min_tokens, nearly always after (p ~ 0.9998).
  p = Temperature(1.0f);
  p.min_tokens = 100;
  Sampler sampled(p, {3, 2});
  int eos_after = 0;
  for (int64_t step = 0; step < 200; ++step) {
    const int32_t t = sampled.Sample(logits.data(), 4, step, {});
    if (step < 100) {
      EXPECT_FALSE(sampled.IsEos(t)) << "eos at step " << step;
    } else {
      eos_after += t == 3;
    }
  }
  EXPECT_GE(eos_after, 95);
}

TEST(SamplerTest, MinTokensDoesNotMaskTheOnlyPossibleToken) {
  SamplingParams p = Temperature(1.0f);
  p.min_tokens = 5;
  Sampler s(p, {1});
  const std::vector<float> logits = {-kInf, 5.0f};
  EXPECT_EQ(s.Sample(logits.data(), 2, 0, {}), 1);
}

TEST(SamplerTest, SameSeedSameTokensDifferentSeedsDiffer) {
  const std::vector<float> flat(5, 0.0f);
  Sampler a(Temperature(1.0f, 42), {});
  Sampler b(Temperature(1.0f, 42), {});
  const auto first = Generate(a, flat, 64);
  EXPECT_EQ(first, Generate(b, flat, 64));
  EXPECT_EQ(first, Generate(a, flat, 64));  // no state carried between runs

  std::set<std::vector<int32_t>> distinct = {first};
  for (uint64_t seed = 0; seed < 10; ++seed) {
    Sampler other(Temperature(1.0f, seed), {});
    distinct.insert(Generate(other, flat, 64));
  }
  EXPECT_EQ(distinct.size(), 11u);  // 42 and 0..9: all different sequences
}

TEST(SamplerTest, PureFunctionOfSeedAndStep) {
  const auto logits = RandomLogits(300, 5, 1.0f);
  SamplingParams p = Temperature(1.3f, 7);
  p.top_k = 50;
  p.top_p = 0.9f;
  Sampler forward(p, {});
  const auto in_order = Generate(forward, logits, 40);

  Sampler backward(p, {});
  for (int64_t step = 39; step >= 0; --step) {
    EXPECT_EQ(backward.Sample(logits.data(), 300, step, {}), in_order[step]) << step;
  }
  // A fresh sampler replaying from step 25 (as after a failure).
  Sampler replay(p, {});
  EXPECT_EQ(replay.Sample(logits.data(), 300, 25, {}), in_order[25]);
  EXPECT_EQ(replay.Sample(logits.data(), 300, 25, {}), in_order[25]);
}

TEST(SamplerTest, TemperatureOneMatchesSoftmax) {
  const std::vector<float> logits = {1.0f, 0.5f, 0.0f, -0.5f, 2.0f};
  Sampler s(Temperature(1.0f, 2024), {});
  ExpectDistribution(s, logits, Expected(logits, 1.0));
}

TEST(SamplerTest, LowAndHighTemperatureMatchScaledSoftmax) {
  const std::vector<float> logits = {1.0f, 0.5f, 0.0f, -0.5f, 2.0f};
  Sampler cold(Temperature(0.7f, 11), {});
  ExpectDistribution(cold, logits, Expected(logits, 0.7));
  Sampler hot(Temperature(2.5f, 12), {});
  ExpectDistribution(hot, logits, Expected(logits, 2.5));
}

TEST(SamplerTest, FiltersThenTemperatureRenormalizes) {
  // top-k 3 keeps ids 0, 1, 2; temperature applies to the survivors.
  const std::vector<float> logits = {2.0f, 1.0f, 0.0f, -1.0f, -2.0f};
  SamplingParams p = Temperature(2.0f, 5);
  p.top_k = 3;
  Sampler s(p, {});
  ExpectDistribution(s, logits, Expected(logits, 2.0, {0, 1, 2}));

  // min-p 0.3 on softmax 0.636, 0.234, 0.086, ...: keeps 0 and 1 (0.234 >= 0.191).
  p = Temperature(1.0f, 6);
  p.min_p = 0.3f;
  Sampler m(p, {});
  ExpectDistribution(m, logits, Expected(logits, 1.0, {0, 1}));

  // top-p 0.8: 0.636 < 0.8 <= 0.636 + 0.234, keeps 0 and 1; then temperature 0.5.
  p = Temperature(0.5f, 7);
  p.top_p = 0.8f;
  Sampler n(p, {});
  ExpectDistribution(n, logits, Expected(logits, 0.5, {0, 1}));
}

TEST(SamplerTest, NonFiniteLogitsAreSafe) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> logits = {nan, 1.0f, nan, -kInf};
  Sampler s(Temperature(1.0f), {});
  for (int32_t t : Generate(s, logits, 50)) EXPECT_EQ(t, 1);

  const std::vector<float> hot = {0.0f, kInf, 3.0f};
  for (int32_t t : Generate(s, hot, 20)) EXPECT_EQ(t, 1);
  Sampler greedy(SamplingParams{}, {});
  EXPECT_EQ(greedy.Sample(hot.data(), 3, 0, {}), 1);

  const std::vector<float> impossible = {nan, -kInf};
  EXPECT_EQ(s.Sample(impossible.data(), 2, 0, {}), 0);
}

TEST(SamplerTest, RejectsUnusableArguments) {
  Sampler s(SamplingParams{}, {});
  const float one = 1.0f;
  EXPECT_EQ(s.Sample(nullptr, 1, 0, {}), -1);
  EXPECT_EQ(s.Sample(&one, 0, 0, {}), -1);
  EXPECT_EQ(s.Sample(&one, 1, 0, {5, -3}), 0);  // bad history ids are ignored
}

TEST(SamplerTest, LargeVocabularyMinPBoundsEveryToken) {
  const int64_t vocab = 256000;
  const auto logits = RandomLogits(vocab, 9, 2.0f);
  SamplingParams p = Temperature(0.8f, 3);
  p.top_p = 0.95f;
  p.min_p = 0.01f;
  p.repeat_penalty = 1.1f;
  p.repeat_last_n = 8;
  Sampler s(p, {});
  std::vector<int32_t> history = {1, 2, 3};
  std::vector<int32_t> recent;
  for (int64_t step = 0; step < 20; ++step) {
    const int32_t t = s.Sample(logits.data(), vocab, step, history);
    ASSERT_GE(t, 0);
    ASSERT_LT(t, vocab);
    // Every sampled token survives min-p against the penalized maximum.
    std::vector<float> penalized = logits;
    RecentDistinctIds(history, p.repeat_last_n, &recent);
    for (int32_t id : recent) {
      float& l = penalized[static_cast<size_t>(id)];
      l = l > 0 ? l / p.repeat_penalty : l * p.repeat_penalty;
    }
    const float best = *std::max_element(penalized.begin(), penalized.end());
    EXPECT_GE(penalized[t], best + std::log(p.min_p) - 1e-4f) << "step " << step;
    history.push_back(t);
  }
}

TEST(SamplerTest, TinyLogitChangesRarelyChangeTheToken) {
  // A replay computes logits by prefill instead of step-by-step decode, so
  // they differ by rounding. Drawing in id order keeps the CDF continuous:
  // only draws that land within the perturbation of a boundary change.
  const auto logits = RandomLogits(8000, 4, 1.0f);
  auto nudged = logits;
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> noise(-1e-4f, 1e-4f);
  for (float& l : nudged) l += noise(gen);
  SamplingParams p = Temperature(1.0f, 8);
  p.top_p = 0.9f;
  Sampler a(p, {});
  Sampler b(p, {});
  int changed = 0;
  for (int64_t step = 0; step < 300; ++step) {
    changed += a.Sample(logits.data(), 8000, step, {}) != b.Sample(nudged.data(), 8000, step, {});
  }
  EXPECT_LE(changed, 3);
}

}  // namespace
}  // namespace troupe
