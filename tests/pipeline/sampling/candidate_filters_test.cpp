// The sampling filters keep exactly the hand-computed sets, ties and
// boundaries included.
#include "pipeline/sampling/candidate_filters.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace troupe {
namespace {

using IdList = std::vector<int32_t>;

std::vector<Candidate> FromLogits(const std::vector<float>& logits) {
  std::vector<Candidate> c;
  for (size_t i = 0; i < logits.size(); ++i) {
    c.push_back({static_cast<int32_t>(i), logits[i], 0.0f});
  }
  return c;
}

// Logits log(p): the softmax gives back p (when the p sum to 1).
std::vector<Candidate> FromProbs(const std::vector<double>& probs) {
  std::vector<float> logits;
  for (double p : probs) logits.push_back(static_cast<float>(std::log(p)));
  return FromLogits(logits);
}

std::vector<int32_t> Ids(const std::vector<Candidate>& c) {
  std::vector<int32_t> ids;
  for (const Candidate& x : c) ids.push_back(x.id);
  return ids;
}

// Top-p leaves its survivors unordered: report them in rank order.
std::vector<int32_t> TopP(float p, std::vector<Candidate> c) {
  KeepTopP(p, &c);
  std::sort(c.begin(), c.end(), RanksBefore);
  return Ids(c);
}
std::vector<int32_t> MinP(float p, std::vector<Candidate> c) {
  KeepMinP(p, &c);
  return Ids(c);
}
std::vector<int32_t> TopA(float a, std::vector<Candidate> c) {
  KeepTopA(a, &c);
  return Ids(c);
}

TEST(SoftmaxTest, NormalizesAndGivesZeroToMinusInf) {
  auto c = FromLogits({0.0f, std::log(3.0f), -std::numeric_limits<float>::infinity()});
  Softmax(&c);
  EXPECT_NEAR(c[0].p, 0.25, 1e-7);
  EXPECT_NEAR(c[1].p, 0.75, 1e-7);
  EXPECT_EQ(c[2].p, 0.0f);
}

TEST(SoftmaxTest, HugeLogitsDoNotOverflow) {
  auto c = FromLogits({1e30f, 1e30f, 0.0f});
  Softmax(&c);
  EXPECT_FLOAT_EQ(c[0].p, 0.5f);
  EXPECT_FLOAT_EQ(c[1].p, 0.5f);
  EXPECT_EQ(c[2].p, 0.0f);
}

TEST(TopKTest, KeepsHighestInRankOrderTiesToLowerId) {
  auto c = FromLogits({1, 5, 3, 5, 2});
  KeepTopK(3, &c);
  EXPECT_EQ(Ids(c), (IdList{1, 3, 2}));

  auto tied = FromLogits({2, 7, 7, 7});
  KeepTopK(2, &tied);
  EXPECT_EQ(Ids(tied), (IdList{1, 2}));  // id 3 ties but ranks after
}

TEST(TopKTest, OffValuesLeaveListUntouched) {
  auto c = FromLogits({1, 5, 3});
  KeepTopK(0, &c);
  EXPECT_EQ(Ids(c), (IdList{0, 1, 2}));
  KeepTopK(3, &c);
  EXPECT_EQ(Ids(c), (IdList{0, 1, 2}));
  KeepTopK(100, &c);
  EXPECT_EQ(Ids(c), (IdList{0, 1, 2}));
}

TEST(TopPTest, KeepsShortestPrefixReachingP) {
  // Rank order: id1 0.4, id3 0.3, id2 0.2, id0 0.1.
  const auto c = FromProbs({0.1, 0.4, 0.2, 0.3});
  EXPECT_EQ(TopP(0.3f, c), (IdList{1}));  // top alone is enough
  EXPECT_EQ(TopP(0.4f, c), (IdList{1}));  // boundary: 0.4 >= 0.4
  EXPECT_EQ(TopP(0.41f, c), (IdList{1, 3}));
  EXPECT_EQ(TopP(0.7f, c), (IdList{1, 3}));  // boundary: 0.7 >= 0.7
  EXPECT_EQ(TopP(0.71f, c), (IdList{1, 3, 2}));
  EXPECT_EQ(TopP(0.9f, c), (IdList{1, 3, 2}));  // boundary
  EXPECT_EQ(TopP(0.95f, c), (IdList{1, 3, 2, 0}));
  auto off = c;
  KeepTopP(1.0f, &off);
  EXPECT_EQ(Ids(off), (IdList{0, 1, 2, 3}));  // off: untouched, order included
}

TEST(TopPTest, TiesBreakToLowerId) {
  const auto c = FromProbs({0.25, 0.25, 0.25, 0.25});
  EXPECT_EQ(TopP(0.5f, c), (IdList{0, 1}));
  EXPECT_EQ(TopP(0.6f, c), (IdList{0, 1, 2}));
  EXPECT_EQ(TopP(1e-6f, c), (IdList{0}));
}

TEST(TopPTest, UsesProbabilitiesRenormalizedOverRemainingCandidates) {
  // After top-k 2 the survivors are 0.4 and 0.3: renormalized 4/7 and 3/7.
  auto c = FromProbs({0.1, 0.4, 0.2, 0.3});
  KeepTopK(2, &c);
  EXPECT_EQ(TopP(0.57f, c), (IdList{1}));  // 4/7 >= 0.57; raw 0.4 would not be
  EXPECT_EQ(TopP(0.58f, c), (IdList{1, 3}));
}

TEST(TopPTest, LargeFlatVocabularyMatchesFullSort) {
  // A flat distribution makes the nucleus span thousands of tokens, so the
  // head has to widen several times.
  std::mt19937 gen(7);
  std::normal_distribution<float> noise(0.0f, 0.5f);
  std::vector<float> logits(100000);
  for (float& l : logits) l = noise(gen);
  for (float p : {0.05f, 0.5f, 0.9f, 0.999f}) {
    auto got = FromLogits(logits);
    KeepTopP(p, &got);
    std::sort(got.begin(), got.end(), RanksBefore);

    auto ref = FromLogits(logits);
    Softmax(&ref);
    std::sort(ref.begin(), ref.end(), RanksBefore);
    double cumulative = 0.0;
    size_t keep = 0;
    while (keep < ref.size() && cumulative < p * (1 - kThresholdSlack)) cumulative += ref[keep++].p;
    ref.resize(keep);
    EXPECT_GT(keep, 64u);
    EXPECT_EQ(Ids(got), Ids(ref)) << "top_p " << p;
  }
}

TEST(TopPTest, UniformVocabularyEveryCutPosition) {
  // All tokens tie at 1/n, so top_p = (k - 0.5) / n keeps exactly ids
  // 0..k-1. Sweeping k puts the cut on every position the search can pivot on.
  const int n = 2000;
  const auto flat = FromLogits(std::vector<float>(n, 0.0f));
  for (int k = 1; k <= n; ++k) {
    const auto kept = TopP(static_cast<float>((k - 0.5) / n), flat);
    ASSERT_EQ(kept.size(), static_cast<size_t>(k));
    ASSERT_EQ(kept.back(), k - 1);
  }
}

TEST(MinPTest, KeepsAtLeastFractionOfMaxInclusive) {
  // p_max = 0.5.
  const auto c = FromProbs({0.5, 0.25, 0.05, 0.2});
  EXPECT_EQ(MinP(0.5f, c), (IdList{0, 1}));  // >= 0.25, boundary kept
  EXPECT_EQ(MinP(0.51f, c), (IdList{0}));
  EXPECT_EQ(MinP(0.4f, c), (IdList{0, 1, 3}));     // >= 0.2, boundary kept
  EXPECT_EQ(MinP(0.11f, c), (IdList{0, 1, 3}));    // >= 0.055
  EXPECT_EQ(MinP(0.1f, c), (IdList{0, 1, 2, 3}));  // >= 0.05, boundary kept
  EXPECT_EQ(MinP(0.0f, c), (IdList{0, 1, 2, 3}));  // off
}

TEST(MinPTest, OneKeepsOnlyTiesOfTheMaxAndPreservesOrder) {
  auto c = FromProbs({0.2, 0.4, 0.4});
  std::reverse(c.begin(), c.end());
  EXPECT_EQ(MinP(1.0f, c), (IdList{2, 1}));
}

TEST(MinPTest, IndependentOfNormalization) {
  // Unnormalized logits: ratios 1 : 0.5 : 0.1 to the max.
  const auto c = FromLogits({0.0f, std::log(0.5f), std::log(0.1f)});
  EXPECT_EQ(MinP(0.5f, c), (IdList{0, 1}));
  EXPECT_EQ(MinP(0.1f, c), (IdList{0, 1, 2}));
}

TEST(TopATest, KeepsAtLeastAPmaxSquared) {
  // p_max^2 = 0.25.
  const auto c = FromProbs({0.5, 0.25, 0.125, 0.125});
  EXPECT_EQ(TopA(1.0f, c), (IdList{0, 1}));        // >= 0.25, boundary kept
  EXPECT_EQ(TopA(0.6f, c), (IdList{0, 1}));        // >= 0.15
  EXPECT_EQ(TopA(0.5f, c), (IdList{0, 1, 2, 3}));  // >= 0.125, boundary kept
  EXPECT_EQ(TopA(2.0f, c), (IdList{0}));           // >= 0.5 = p_max
  EXPECT_EQ(TopA(3.0f, c), (IdList{0}));           // above p_max: keep the top one
  EXPECT_EQ(TopA(0.0f, c), (IdList{0, 1, 2, 3}));  // off

  // p_max = 0.8, p_max^2 = 0.64.
  const auto d = FromProbs({0.1, 0.8, 0.06, 0.04});
  EXPECT_EQ(TopA(0.1f, d), (IdList{0, 1}));           // >= 0.064
  EXPECT_EQ(TopA(0.0625f, d), (IdList{0, 1, 2, 3}));  // >= 0.04, boundary kept
}

TEST(TopATest, ThresholdAboveMaxKeepsFirstInRankAmongTies) {
  const auto c = FromProbs({0.25, 0.375, 0.375});
  EXPECT_EQ(TopA(10.0f, c), (IdList{1}));
}

TEST(TopATest, UsesRenormalizedProbabilities) {
  // Unnormalized logits 0, log 0.5, log 0.25: softmax 4/7, 2/7, 1/7.
  // a = 1: threshold (4/7)^2 = 16/49 = 0.3265 -> keep only id 0 (2/7 = 0.2857).
  // a = 0.875: threshold 14/49 = 2/7 -> id 1 on the boundary, kept.
  const auto c = FromLogits({0.0f, std::log(0.5f), std::log(0.25f)});
  EXPECT_EQ(TopA(1.0f, c), (IdList{0}));
  EXPECT_EQ(TopA(0.875f, c), (IdList{0, 1}));
}

TEST(RepetitionPenaltyTest, RecentDistinctIdsTakesTheWindow) {
  const std::vector<int32_t> history = {4, 0, 1, 0, 2, 2};
  std::vector<int32_t> ids;
  RecentDistinctIds(history, 3, &ids);
  EXPECT_EQ(ids, (IdList{0, 2}));
  RecentDistinctIds(history, -1, &ids);
  EXPECT_EQ(ids, (IdList{0, 1, 2, 4}));
  RecentDistinctIds(history, 100, &ids);
  EXPECT_EQ(ids, (IdList{0, 1, 2, 4}));
  RecentDistinctIds(history, 0, &ids);
  EXPECT_TRUE(ids.empty());
  RecentDistinctIds({}, 64, &ids);
  EXPECT_TRUE(ids.empty());
}

TEST(RepetitionPenaltyTest, DividesPositiveMultipliesNonPositive) {
  auto c = FromLogits({2.0f, -2.0f, 0.0f, 3.0f, 1.0f});
  ApplyRepetitionPenalty({0, 1, 2}, 2.0f, &c);
  EXPECT_FLOAT_EQ(c[0].logit, 1.0f);
  EXPECT_FLOAT_EQ(c[1].logit, -4.0f);
  EXPECT_FLOAT_EQ(c[2].logit, 0.0f);
  EXPECT_FLOAT_EQ(c[3].logit, 3.0f);  // not in the window
  EXPECT_FLOAT_EQ(c[4].logit, 1.0f);

  // A penalty below 1 rewards repetition with the same rule.
  auto r = FromLogits({2.0f, -2.0f});
  ApplyRepetitionPenalty({0, 1}, 0.5f, &r);
  EXPECT_FLOAT_EQ(r[0].logit, 4.0f);
  EXPECT_FLOAT_EQ(r[1].logit, -1.0f);
}

TEST(RepetitionPenaltyTest, IgnoresOutOfRangeIdsAndKeepsLogitsFinite) {
  const float inf = std::numeric_limits<float>::infinity();
  auto c = FromLogits({1e38f, -1e38f, -inf});
  ApplyRepetitionPenalty({-1, 0, 1, 2, 7}, 1e-3f, &c);
  EXPECT_EQ(c[0].logit, std::numeric_limits<float>::max());
  EXPECT_FLOAT_EQ(c[1].logit, -1e35f);
  EXPECT_EQ(c[2].logit, -inf);
  ApplyRepetitionPenalty({1}, 1e6f, &c);
  EXPECT_EQ(c[1].logit, -std::numeric_limits<float>::max());
}

TEST(TemperatureTest, ScalesShiftedLogits) {
  auto c = FromLogits({1.0f, 3.0f, -std::numeric_limits<float>::infinity()});
  ApplyTemperature(0.5f, &c);
  EXPECT_FLOAT_EQ(c[0].logit, -4.0f);
  EXPECT_FLOAT_EQ(c[1].logit, 0.0f);
  EXPECT_EQ(c[2].logit, -std::numeric_limits<float>::infinity());
  auto tiny = FromLogits({10.0f, 9.0f});
  ApplyTemperature(1e-38f, &tiny);
  Softmax(&tiny);
  EXPECT_EQ(tiny[0].p, 1.0f);
  EXPECT_EQ(tiny[1].p, 0.0f);
}

TEST(DrawTest, InverseCdfInListOrder) {
  auto c = FromProbs({0.5, 0.25, 0.25});
  Softmax(&c);
  EXPECT_EQ(DrawId(c, 0.0), 0);
  EXPECT_EQ(DrawId(c, 0.49), 0);
  EXPECT_EQ(DrawId(c, 0.51), 1);
  EXPECT_EQ(DrawId(c, 0.74), 1);
  EXPECT_EQ(DrawId(c, 0.76), 2);
  EXPECT_EQ(DrawId(c, std::nextafter(1.0, 0.0)), 2);
}

TEST(DrawTest, NeverReturnsZeroProbability) {
  std::vector<Candidate> c = {{0, 0.0f, 0.0f}, {1, 0.0f, 1.0f}, {2, 0.0f, 0.0f}};
  for (double u : {0.0, 0.3, 0.999999}) EXPECT_EQ(DrawId(c, u), 1);
  EXPECT_EQ(DrawId({}, 0.5), -1);
  EXPECT_EQ(ArgmaxId({}), -1);
}

// OpenAI: mu[j] -= c[j] * frequency + (c[j] > 0) * presence, over the answer's tokens.
TEST(PresenceFrequencyPenaltyTest, FollowsOpenAisFormula) {
  std::vector<Candidate> c = FromLogits({1.0f, 1.0f, 1.0f, -std::numeric_limits<float>::infinity()});
  const std::vector<int32_t> answer = {1, 2, 2, 2, 3, 9};
  ApplyPresenceFrequencyPenalty(answer.data(), answer.size(), 0.5f, 0.25f, &c);
  EXPECT_FLOAT_EQ(c[0].logit, 1.0f);                               // never said
  EXPECT_FLOAT_EQ(c[1].logit, 1.0f - 0.25f - 0.5f);                // once
  EXPECT_FLOAT_EQ(c[2].logit, 1.0f - 0.75f - 0.5f);                // three times
  EXPECT_EQ(c[3].logit, -std::numeric_limits<float>::infinity());  // impossible stays impossible
  std::vector<Candidate> negative = FromLogits({1.0f, 1.0f});
  ApplyPresenceFrequencyPenalty(answer.data(), answer.size(), -1.0f, 0.0f, &negative);
  EXPECT_FLOAT_EQ(negative[1].logit, 2.0f);  // a negative penalty encourages repeats
}

// Hugging Face: a token that would complete an n-gram already in the sequence is banned.
TEST(NoRepeatNgramTest, BansEveryTokenThatWouldRepeatAnNgram) {
  const std::vector<int32_t> history = {5, 6, 7, 5, 6, 8, 5, 6};
  std::vector<Candidate> c = FromLogits(std::vector<float>(10, 0.0f));
  BanRepeatedNgrams(history, 3, &c);  // "5 6 x" occurred with x = 7 and 8
  std::vector<int32_t> banned;
  for (const Candidate& x : c) {
    if (x.logit == -std::numeric_limits<float>::infinity()) banned.push_back(x.id);
  }
  EXPECT_EQ(banned, IdList({7, 8}));
  std::vector<Candidate> bigram = FromLogits(std::vector<float>(10, 0.0f));
  BanRepeatedNgrams(history, 2, &bigram);  // after 6 came 7 and 8
  EXPECT_EQ(bigram[7].logit, -std::numeric_limits<float>::infinity());
  EXPECT_EQ(bigram[8].logit, -std::numeric_limits<float>::infinity());
  EXPECT_EQ(bigram[5].logit, 0.0f);
  std::vector<Candidate> off = FromLogits(std::vector<float>(10, 0.0f));
  BanRepeatedNgrams(history, 0, &off);
  BanRepeatedNgrams({1}, 3, &off);  // shorter than n - 1
  for (const Candidate& x : off) EXPECT_EQ(x.logit, 0.0f);
}

TEST(LogitBiasTest, AddsBiasesAndIgnoresUnknownIds) {
  std::vector<Candidate> c = FromLogits({1.0f, 2.0f, 3.0f});
  ApplyLogitBias({{0, 5.0f}, {2, -100.0f}, {7, 1.0f}, {-1, 1.0f}}, &c);
  EXPECT_FLOAT_EQ(c[0].logit, 6.0f);
  EXPECT_FLOAT_EQ(c[1].logit, 2.0f);
  EXPECT_FLOAT_EQ(c[2].logit, -97.0f);
}

}  // namespace
}  // namespace troupe
