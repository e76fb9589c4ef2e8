// PromptScorer: chunks of logit rows score the prompt token after each
// position, whatever the chunking, and skip the last (the answer's) row.
#include "pipeline/sampling/prompt_scorer.h"

#include <gtest/gtest.h>

#include <cmath>

namespace troupe {
namespace {

// Rows over a vocabulary of 4 where position p favours token (p + 1) % 4.
std::vector<float> Rows(int64_t first, int64_t n) {
  std::vector<float> rows;
  for (int64_t p = first; p < first + n; ++p) {
    for (int64_t t = 0; t < 4; ++t) rows.push_back(t == (p + 1) % 4 ? 2.0f : 0.0f);
  }
  return rows;
}

TEST(PromptScorerTest, ScoresEveryTokenAfterTheFirstInAnyChunking) {
  const std::vector<int32_t> prompt = {0, 1, 3, 3, 0};
  PromptScorer whole(prompt, 2), chunked(prompt, 2);
  ASSERT_TRUE(whole.Add(0, Rows(0, 5).data(), 5, 4).ok());
  ASSERT_TRUE(chunked.Add(0, Rows(0, 2).data(), 2, 4).ok());
  EXPECT_FALSE(chunked.done());
  ASSERT_TRUE(chunked.Add(2, Rows(2, 3).data(), 3, 4).ok());
  ASSERT_TRUE(whole.done() && chunked.done());
  ASSERT_EQ(whole.scored().size(), 4u);
  const double favoured = 2.0 - std::log(std::exp(2.0) + 3.0), other = -std::log(std::exp(2.0) + 3.0);
  // Token 1 after position 0 (favoured), 3 after 1 (not: 2 is), 3 after 2 (favoured), 0 after 3 (favoured).
  const double expected[] = {favoured, other, favoured, favoured};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(whole.scored()[i].logprob, expected[i], 1e-6) << i;
    EXPECT_EQ(whole.scored()[i].logprob, chunked.scored()[i].logprob) << i;
    ASSERT_EQ(whole.scored()[i].top.size(), 2u);
    EXPECT_EQ(whole.scored()[i].top[0].id, static_cast<int32_t>((i + 1) % 4));
  }
}

TEST(PromptScorerTest, RefusesAGapAndStartsOverOnReset) {
  PromptScorer s({0, 1, 2}, 0);
  EXPECT_FALSE(s.Add(1, Rows(1, 1).data(), 1, 4).ok());
  ASSERT_TRUE(s.Add(0, Rows(0, 1).data(), 1, 4).ok());
  s.Reset();
  ASSERT_TRUE(s.Add(0, Rows(0, 3).data(), 3, 4).ok());
  EXPECT_EQ(s.scored().size(), 2u);
  EXPECT_TRUE(s.done());
}

}  // namespace
}  // namespace troupe
