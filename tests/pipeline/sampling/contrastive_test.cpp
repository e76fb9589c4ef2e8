// ContrastiveLogits: the alpha cut, the beta weighting against hand-computed
// scores, the amateur == expert identity, and -inf/NaN/+inf handling.
#include "pipeline/sampling/contrastive.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "pipeline/sampling/candidate_filters.h"
#include "pipeline/sampling/sampler.h"

namespace troupe {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kMaxFloat = std::numeric_limits<float>::max();

std::vector<float> Combine(const std::vector<float>& expert, const std::vector<float>& amateur, float alpha,
                           float beta) {
  std::vector<float> out(expert.size(), 12345.0f);
  ContrastiveLogits(expert.data(), amateur.data(), static_cast<int64_t>(expert.size()), ContrastiveParams{alpha, beta},
                    out.data());
  return out;
}

// log of each probability, plus `shift` (logits are only defined up to a
// per-row constant).
std::vector<float> Logits(const std::vector<double>& probs, double shift) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p) + shift));
  return l;
}

int32_t Greedy(const std::vector<float>& row) {
  Sampler s(SamplingParams{}, {});
  return s.Sample(row.data(), static_cast<int64_t>(row.size()), 0, {});
}

TEST(ContrastiveTest, AlphaCutKeepsTokensAboveAlphaTimesTheMaxProbability) {
  const std::vector<float> expert = Logits({0.5, 0.3, 0.15, 0.05}, 2.0);
  const std::vector<float> amateur = Logits({0.25, 0.25, 0.25, 0.25}, 0.0);
  // alpha 0.2: threshold 0.1 -> keeps 0.5, 0.3, 0.15; cuts 0.05.
  std::vector<float> out = Combine(expert, amateur, 0.2f, 0.5f);
  EXPECT_TRUE(std::isfinite(out[0]) && std::isfinite(out[1]) && std::isfinite(out[2]));
  EXPECT_EQ(out[3], -kInf);
  // alpha 0.35: threshold 0.175 -> keeps 0.5 and 0.3 only.
  out = Combine(expert, amateur, 0.35f, 0.5f);
  EXPECT_TRUE(std::isfinite(out[0]) && std::isfinite(out[1]));
  EXPECT_EQ(out[2], -kInf);
  EXPECT_EQ(out[3], -kInf);
  // The cut reads the expert only: a flat expert keeps everything whatever the
  // amateur says.
  out = Combine(amateur, expert, 0.9f, 0.5f);
  for (float v : out) EXPECT_TRUE(std::isfinite(v));
}

TEST(ContrastiveTest, BetaWeightsTheAmateurAsThePaperScores) {
  const std::vector<double> pe = {0.5, 0.3, 0.2};
  const std::vector<double> pa = {0.8, 0.1, 0.1};
  // Unnormalized rows with different shifts: only the probabilities count.
  const std::vector<float> expert = Logits(pe, 3.0);
  const std::vector<float> amateur = Logits(pa, -1.0);
  for (float beta : {0.5f, 1.0f, 2.0f}) {
    const std::vector<float> out = Combine(expert, amateur, 0.0f, beta);
    for (size_t i = 0; i < pe.size(); ++i) {
      const double score = (1.0 + beta) * std::log(pe[i]) - beta * std::log(pa[i]);
      // out = score + logsumexp(expert logits) = score + 3.
      EXPECT_NEAR(out[i], score + 3.0, 1e-5) << "token " << i << " beta " << beta;
    }
  }
  // beta 1: scores -1.163, -0.105, -0.916: the amateur's favourite loses,
  // and the expert's second choice wins.
  EXPECT_EQ(Greedy(Combine(expert, amateur, 0.1f, 1.0f)), 1);
  EXPECT_EQ(Greedy(expert), 0);
  // beta 0.1: scores -0.740, -1.094, -1.540: the expert's choice stands.
  EXPECT_EQ(Greedy(Combine(expert, amateur, 0.1f, 0.1f)), 0);
}

TEST(ContrastiveTest, BetaZeroIsTheAlphaCutOfTheExpertLogits) {
  const std::vector<float> expert = {1.5f, -0.25f, 3.0f, 0.75f};
  const std::vector<float> amateur = {9.0f, -9.0f, 0.0f, -kInf};
  const std::vector<float> out = Combine(expert, amateur, 0.2f, 0.0f);  // keep l >= 3 + log 0.2 = 1.39
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[1], -kInf);
  EXPECT_EQ(out[2], 3.0f);
  EXPECT_EQ(out[3], -kInf);
}

TEST(ContrastiveTest, AmateurEqualToExpertLeavesThePlausibleLogitsBitForBit) {
  std::mt19937 gen(7);
  std::normal_distribution<float> dist(0.0f, 4.0f);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<float> row(1000);
    for (float& v : row) v = dist(gen);
    row[3] = -kInf;
    for (float alpha : {0.0f, 0.01f, 0.1f, 0.5f, 1.0f}) {
      for (float beta : {0.0f, 0.3f, 1.0f, 7.5f}) {
        const std::vector<float> out = Combine(row, row, alpha, beta);
        const float max = *std::max_element(row.begin(), row.end());
        for (size_t i = 0; i < row.size(); ++i) {
          const bool plausible =
              row[i] != -kInf && static_cast<double>(row[i]) - max >= std::log(static_cast<double>(alpha));
          if (plausible) {
            ASSERT_EQ(out[i], row[i]) << "token " << i << " alpha " << alpha << " beta " << beta;
          } else {
            ASSERT_EQ(out[i], -kInf) << "token " << i;
          }
        }
        EXPECT_EQ(Greedy(out), Greedy(row));
      }
    }
  }
}

TEST(ContrastiveTest, AlphaEdges) {
  const std::vector<float> expert = {2.0f, -50.0f, 2.0f, -kInf, 1.999f};
  const std::vector<float> amateur = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  // alpha 0: every token the expert does not rule out, however unlikely.
  std::vector<float> out = Combine(expert, amateur, 0.0f, 0.5f);
  EXPECT_TRUE(std::isfinite(out[0]) && std::isfinite(out[1]) && std::isfinite(out[2]) && std::isfinite(out[4]));
  EXPECT_EQ(out[3], -kInf);
  // alpha 1: only the maximum, ties included.
  out = Combine(expert, amateur, 1.0f, 0.5f);
  EXPECT_TRUE(std::isfinite(out[0]) && std::isfinite(out[2]));
  EXPECT_EQ(out[1], -kInf);
  EXPECT_EQ(out[3], -kInf);
  EXPECT_EQ(out[4], -kInf);
}

TEST(ContrastiveTest, InfinitiesAndNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Expert NaN counts as -inf; an amateur -inf at a plausible token scores
  // the largest float, an amateur NaN likewise.
  std::vector<float> out = Combine({1.0f, nan, 0.5f, 0.9f}, {0.0f, 0.0f, -kInf, nan}, 0.1f, 0.5f);
  EXPECT_TRUE(std::isfinite(out[0]));
  EXPECT_EQ(out[1], -kInf);
  EXPECT_EQ(out[2], kMaxFloat);
  EXPECT_EQ(out[3], kMaxFloat);
  EXPECT_EQ(Greedy(out), 2);
  // Expert +inf is the largest float: with alpha > 0 it is the only
  // plausible token.
  out = Combine({kInf, 1.0f, 2.0f}, {0.0f, 0.0f, 0.0f}, 0.1f, 0.5f);
  EXPECT_TRUE(std::isfinite(out[0]));
  EXPECT_EQ(out[1], -kInf);
  EXPECT_EQ(out[2], -kInf);
  // Expert rules out everything: everything -inf.
  out = Combine({-kInf, nan, -kInf}, {1.0f, 2.0f, 3.0f}, 0.0f, 0.5f);
  for (float v : out) EXPECT_EQ(v, -kInf);
  // Amateur rules out everything: plausible tokens get the largest float
  // (beta > 0) or keep their logit (beta = 0).
  out = Combine({0.5f, 3.0f, -5.0f}, {-kInf, nan, -kInf}, 0.1f, 0.5f);
  EXPECT_EQ(out[0], -kInf);
  EXPECT_EQ(out[1], kMaxFloat);
  EXPECT_EQ(out[2], -kInf);
  out = Combine({0.5f, 3.0f, -5.0f}, {-kInf, nan, -kInf}, 0.1f, 0.0f);
  EXPECT_EQ(out[1], 3.0f);
}

TEST(ContrastiveTest, LargeBetaStaysFinite) {
  const std::vector<float> out = Combine({0.0f, 0.0f}, {0.0f, -1e30f}, 0.0f, 1e9f);
  EXPECT_TRUE(std::isfinite(out[0]));
  EXPECT_EQ(out[1], kMaxFloat);  // +1e39 clamped
}

TEST(ContrastiveTest, OutputMayAliasAnInput) {
  const std::vector<float> expert = Logits({0.5, 0.3, 0.2}, 0.0);
  const std::vector<float> amateur = Logits({0.8, 0.1, 0.1}, 0.0);
  const std::vector<float> want = Combine(expert, amateur, 0.1f, 1.0f);
  std::vector<float> in_place = expert;
  ContrastiveLogits(in_place.data(), amateur.data(), 3, ContrastiveParams{0.1f, 1.0f}, in_place.data());
  EXPECT_EQ(in_place, want);
  in_place = amateur;
  ContrastiveLogits(expert.data(), in_place.data(), 3, ContrastiveParams{0.1f, 1.0f}, in_place.data());
  EXPECT_EQ(in_place, want);
}

}  // namespace
}  // namespace troupe
