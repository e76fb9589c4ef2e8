// BeamSearch: Hugging Face's beam rules on hand-made logits over a 6-token
// vocabulary (token 0 is eos). Logits are log(p), so each row's logprobs are
// log(p / sum p) and the expected sums are worked out by hand below.
#include "pipeline/sampling/beam_search.h"

#include <cmath>
#include <initializer_list>
#include <vector>

#include <gtest/gtest.h>

namespace troupe {
namespace {

constexpr int64_t kVocab = 6;
constexpr int32_t kEos = 0;

// One row of logits from probabilities of tokens 0..5 (normalized here).
std::vector<float> Row(std::initializer_list<double> probs) {
  double sum = 0;
  for (double p : probs) sum += p;
  std::vector<float> out;
  for (double p : probs) out.push_back(static_cast<float>(std::log(p / sum)));
  return out;
}

std::vector<float> Rows(std::initializer_list<std::vector<float>> rows) {
  std::vector<float> out;
  for (const auto& r : rows) out.insert(out.end(), r.begin(), r.end());
  return out;
}

SamplingParams BeamParams(int32_t beams, float length_penalty, EarlyStopping mode, int32_t ret = 1) {
  SamplingParams p;
  p.num_beams = beams;
  p.length_penalty = length_penalty;
  p.early_stopping = mode;
  p.num_return_sequences = ret;
  return p;
}

BeamSearch Make(const SamplingParams& p, int64_t max_new) {
  Result<BeamSearch> bs = BeamSearch::Create(p, {kEos}, max_new);
  EXPECT_TRUE(bs.ok()) << bs.status().ToString();
  return std::move(bs).value();
}

void Advance(BeamSearch& bs, const std::vector<float>& logits) {
  ASSERT_EQ(static_cast<int64_t>(logits.size()), bs.rows() * kVocab);
  Status s = bs.Advance(logits.data(), bs.rows(), kVocab);
  ASSERT_TRUE(s.ok()) << s.ToString();
}

using Tokens = std::vector<int32_t>;

// Scenario S (2 beams, max 4 new tokens), shared by the early_stopping tests:
//  step 0: eos 0.5 ranks first -> hypothesis H1 = [] (sum log .5, len 1);
//          beams [1] (log .25), [2] (log .2).
//  step 1: row 1's token 4 (.9) ranks first, row 0's eos (.6) second ->
//          H2 = [1] (sum log .25 + log .6 = -1.897, len 2, score -0.949);
//          beams [2,4] (parent 1, -1.714), [1,3] (parent 0, -2.590).
//          Two kept: early_stopping true is done; false: -0.949 >=
//          -1.714 / 2? no; never: -0.949 >= -1.714 / 4? no.
//  step 2: row 0 spreads (t5 .3, t1 .25, ...); row 1's eos (.3, -3.794) is
//          not among the best four candidates:
//          beams [2,4,5] (-2.918), [2,4,1] (-3.100), both from row 0.
//          false: -0.949 >= -2.918 / 3 = -0.973 -> done; never: no.
//  step 3 (never only): both rows take token 3 with .9 -> at 4 tokens
//          [2,4,5,3] scores -3.023 / 4 = -0.756 and beats H2.
void ScenarioSteps0And1(BeamSearch& bs) {
  Advance(bs, Row({.5, .25, .2, .05 / 3, .05 / 3, .05 / 3}));
  EXPECT_EQ(bs.parents(), (Tokens{0, 0}));
  EXPECT_EQ(bs.next_tokens(), (Tokens{1, 2}));
  EXPECT_FALSE(bs.done());  // one hypothesis kept, two needed
  Advance(bs,
          Rows({Row({.6, .1 / 4, .1 / 4, .3, .1 / 4, .1 / 4}), Row({.05, .05 / 4, .05 / 4, .05 / 4, .9, .05 / 4})}));
  EXPECT_EQ(bs.parents(), (Tokens{1, 0}));  // the better beam now comes from row 1
  EXPECT_EQ(bs.next_tokens(), (Tokens{4, 3}));
  EXPECT_EQ(bs.beam_tokens(0), (Tokens{2, 4}));
  EXPECT_EQ(bs.beam_tokens(1), (Tokens{1, 3}));
}

void ScenarioStep2(BeamSearch& bs) {
  Advance(bs, Rows({Row({.02, .25, .2, .15, .08, .3}), Row({.3, .1, .05, .03, .02, .5})}));
  EXPECT_EQ(bs.parents(), (Tokens{0, 0}));  // both continue row 0: row 1 gets copied over
  EXPECT_EQ(bs.next_tokens(), (Tokens{5, 1}));
}

TEST(BeamSearchTest, EarlyStoppingTrueStopsAtNumBeamsHypotheses) {
  BeamSearch bs = Make(BeamParams(2, 1.0f, EarlyStopping::kTrue, 2), 4);
  ScenarioSteps0And1(bs);
  EXPECT_TRUE(bs.done());
  std::vector<BeamHypothesis> out = bs.Finish();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].tokens, Tokens{});
  EXPECT_TRUE(out[0].eos);
  EXPECT_NEAR(out[0].score, std::log(.5), 1e-6);
  EXPECT_EQ(out[1].tokens, Tokens{1});
  EXPECT_NEAR(out[1].sum_logprobs, std::log(.25) + std::log(.6), 1e-6);
  EXPECT_NEAR(out[1].score, (std::log(.25) + std::log(.6)) / 2, 1e-6);  // length 2 counts the eos
}

TEST(BeamSearchTest, EarlyStoppingFalseUsesTheCurrentLengthHeuristic) {
  BeamSearch bs = Make(BeamParams(2, 1.0f, EarlyStopping::kFalse, 2), 4);
  ScenarioSteps0And1(bs);
  EXPECT_FALSE(bs.done());
  ScenarioStep2(bs);
  EXPECT_TRUE(bs.done());
  EXPECT_EQ(bs.step(), 3);
  std::vector<BeamHypothesis> out = bs.Finish();  // done: live beams are not offered
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].tokens, Tokens{});
  EXPECT_EQ(out[1].tokens, Tokens{1});
}

TEST(BeamSearchTest, EarlyStoppingNeverBoundsWithMaxLength) {
  BeamSearch bs = Make(BeamParams(2, 1.0f, EarlyStopping::kNever, 2), 4);
  ScenarioSteps0And1(bs);
  ScenarioStep2(bs);
  EXPECT_FALSE(bs.done());  // -0.949 < -2.918 / 4: a longer beam could still win
  Advance(bs, Rows({Row({.02, .02, .02, .9, .02, .02}), Row({.02, .02, .02, .9, .02, .02})}));
  EXPECT_TRUE(bs.done());  // max_new_tokens reached
  std::vector<BeamHypothesis> out = bs.Finish();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].tokens, Tokens{});
  EXPECT_EQ(out[1].tokens, (Tokens{2, 4, 5, 3}));
  EXPECT_FALSE(out[1].eos);
  const double sum = std::log(.2) + std::log(.9) + std::log(.3) + std::log(.9 / 1.0);
  EXPECT_NEAR(out[1].score, sum / 4, 1e-5);
}

TEST(BeamSearchTest, NeverWithNonPositiveLengthPenaltyActsLikeFalse) {
  // With length_penalty 0 the scores are plain sums and "never" uses the current length, as "false" does.
  for (EarlyStopping mode : {EarlyStopping::kFalse, EarlyStopping::kNever}) {
    BeamSearch bs = Make(BeamParams(2, 0.0f, mode), 4);
    ScenarioSteps0And1(bs);
    // Kept: H1 -0.693, H2 -1.897 (worst); best candidate -1.714 > -1.897: not done.
    EXPECT_FALSE(bs.done());
    ScenarioStep2(bs);
    EXPECT_TRUE(bs.done()) << early_stopping_name(mode);  // -1.897 >= -2.918
  }
}

// Length penalty: at the end (2 tokens) the short eos hypothesis [] (log .4,
// length 1) competes with the beams [1,3] (log .35 + log .9) and [2,4]
// (log .25 + log .9), both length 2.
std::vector<BeamHypothesis> LengthPenaltyRun(float length_penalty) {
  BeamSearch bs = Make(BeamParams(2, length_penalty, EarlyStopping::kFalse, 2), 2);
  Advance(bs, Row({.4, .35, .25, 1e-4, 1e-4, 1e-4}));
  Advance(bs, Rows({Row({1e-3, .05, .03, .9, .01, .009}), Row({1e-3, .05, .03, .01, .9, .009})}));
  EXPECT_TRUE(bs.done());
  return bs.Finish();
}

TEST(BeamSearchTest, LengthPenaltyChangesTheWinner) {
  std::vector<BeamHypothesis> plain = LengthPenaltyRun(0.0f);  // raw sums: the short one wins
  ASSERT_EQ(plain.size(), 2u);
  EXPECT_EQ(plain[0].tokens, Tokens{});
  EXPECT_TRUE(plain[0].eos);
  EXPECT_EQ(plain[1].tokens, (Tokens{1, 3}));
  for (float lp : {1.0f, 2.0f}) {  // dividing by length favours the longer beams
    std::vector<BeamHypothesis> out = LengthPenaltyRun(lp);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].tokens, (Tokens{1, 3})) << lp;
    EXPECT_EQ(out[1].tokens, (Tokens{2, 4})) << lp;
    EXPECT_NEAR(out[0].score, out[0].sum_logprobs / std::pow(2.0, lp), 1e-12);
  }
}

TEST(BeamSearchTest, EosBelowTheTopNumBeamsIsDropped) {
  BeamSearch bs = Make(BeamParams(2, 1.0f, EarlyStopping::kTrue, 2), 3);
  Advance(bs, Row({.01, .5, .4, .03, .03, .03}));  // beams [1] (log .5), [2] (log .4)
  // Ranking: row 0 eos (-1.386) finishes [1]; row 0 token 1 (-1.609) lives;
  // row 1 eos (-1.715) ranks third: dropped, not kept; row 1 token 2 (-1.760) lives.
  Advance(bs, Rows({Row({.5, .4, .04, .02, .02, .02}), Row({.45, .02, .43, .06, .02, .02})}));
  EXPECT_EQ(bs.parents(), (Tokens{0, 1}));
  EXPECT_EQ(bs.next_tokens(), (Tokens{1, 2}));
  EXPECT_FALSE(bs.done());  // one hypothesis kept: "true" needs two
  // Both beams end: [1,1] (-1.715 / 3) and [2,2] (-1.866 / 3) push out [1] (-1.386 / 2).
  Advance(bs, Rows({Row({.9, .02, .02, .02, .02, .02}), Row({.9, .02, .02, .02, .02, .02})}));
  EXPECT_TRUE(bs.done());
  std::vector<BeamHypothesis> out = bs.Finish();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].eos);
  EXPECT_EQ(out[0].tokens, (Tokens{1, 1}));
  EXPECT_EQ(out[1].tokens, (Tokens{2, 2}));
  EXPECT_NEAR(out[1].score, (std::log(.4) + std::log(.43) + std::log(.9)) / 3, 1e-6);
}

TEST(BeamSearchTest, MinTokensMasksEos) {
  SamplingParams p = BeamParams(2, 1.0f, EarlyStopping::kTrue);
  p.min_tokens = 1;
  BeamSearch bs = Make(p, 2);
  Advance(bs, Row({.9, .06, .037, 1e-3, 1e-3, 1e-3}));
  EXPECT_EQ(bs.next_tokens(), (Tokens{1, 2}));  // eos was the best, but masked
  EXPECT_FALSE(bs.done());
  Advance(bs, Rows({Row({.9, .02, .02, .02, .02, .02}), Row({.9, .02, .02, .02, .02, .02})}));
  std::vector<BeamHypothesis> out = bs.Finish();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tokens, Tokens{1});  // step 1: eos allowed again
  EXPECT_TRUE(out[0].eos);
  // The masked eos is not renormalized away: token 1 kept its logprob log .06.
  EXPECT_NEAR(out[0].sum_logprobs, std::log(.06) + std::log(.9), 1e-6);
}

TEST(BeamSearchTest, EqualScoresGoToTheLowerRowAndToken) {
  BeamSearch bs = Make(BeamParams(2, 1.0f, EarlyStopping::kFalse), 2);
  Advance(bs, Row({.01, .2, .2, .2, .2, .19}));
  EXPECT_EQ(bs.next_tokens(), (Tokens{1, 2}));
  Advance(bs, Rows({Row({.01, .2, .2, .2, .2, .19}), Row({.01, .2, .2, .2, .2, .19})}));
  EXPECT_EQ(bs.parents(), (Tokens{0, 0}));
  EXPECT_EQ(bs.next_tokens(), (Tokens{1, 2}));
}

TEST(BeamSearchTest, RefusesBadCalls) {
  BeamSearch bs = Make(BeamParams(2, 1.0f, EarlyStopping::kFalse), 1);
  std::vector<float> two_rows = Rows({Row({.1, .2, .3, .2, .1, .1}), Row({.1, .2, .3, .2, .1, .1})});
  EXPECT_TRUE(bs.Finish().empty());                           // no step yet
  EXPECT_FALSE(bs.Advance(two_rows.data(), 2, kVocab).ok());  // the first step has one row
  EXPECT_FALSE(bs.Advance(nullptr, 1, kVocab).ok());
  EXPECT_FALSE(bs.Advance(two_rows.data(), 1, 0).ok());
  Advance(bs, Row({.1, .2, .3, .2, .1, .1}));
  EXPECT_TRUE(bs.done());
  EXPECT_FALSE(bs.Advance(two_rows.data(), 2, kVocab).ok());  // after done

  SamplingParams bad = BeamParams(2, 1.0f, EarlyStopping::kFalse);
  bad.temperature = 0.8f;
  Result<BeamSearch> refused = BeamSearch::Create(bad, {kEos}, 4);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("temperature"), std::string::npos);
  EXPECT_FALSE(BeamSearch::Create(BeamParams(2, 1.0f, EarlyStopping::kFalse), {kEos}, 0).ok());
}

TEST(BeamSearchTest, TooFewNonEosCandidatesIsAnError) {
  // 3 beams need 6 candidates; a 4-token vocabulary with 3 eos ids leaves 1.
  Result<BeamSearch> bs = BeamSearch::Create(BeamParams(3, 1.0f, EarlyStopping::kFalse), {0, 1, 2}, 4);
  ASSERT_TRUE(bs.ok());
  std::vector<float> row = {0.f, 0.f, 0.f, 0.f};
  EXPECT_FALSE(bs->Advance(row.data(), 1, 4).ok());
}

}  // namespace
}  // namespace troupe
