// ComputeLogprobs: log_softmax of the raw logits, the sampled token's and the
// most likely ones', checked against a direct computation.
#include "pipeline/sampling/logprobs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace troupe {
namespace {

TEST(LogprobsTest, EqualsLogSoftmaxAndSumsToOne) {
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.0f, 4.0f);
  std::vector<float> logits(1000);
  for (float& x : logits) x = d(rng) + 30.0f;  // large offsets: the max must be subtracted
  double z = 0;
  for (float x : logits) z += std::exp(static_cast<double>(x));
  double total = 0;
  for (int32_t id : {0, 17, 999}) {
    TokenLogprobs lp = ComputeLogprobs(logits.data(), 1000, id, 0);
    EXPECT_NEAR(lp.logprob, std::log(std::exp(static_cast<double>(logits[id])) / z), 1e-5);
    EXPECT_TRUE(lp.top.empty());
  }
  for (int32_t id = 0; id < 1000; ++id) total += std::exp(ComputeLogprobs(logits.data(), 1000, id, 0).logprob);
  EXPECT_NEAR(total, 1.0, 1e-4);
}

TEST(LogprobsTest, TopIsMostLikelyFirstWithTiesToTheLowerId) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f};
  TokenLogprobs lp = ComputeLogprobs(logits.data(), 5, 4, 3);
  ASSERT_EQ(lp.top.size(), 3u);
  EXPECT_EQ(lp.top[0].id, 1);
  EXPECT_EQ(lp.top[1].id, 3);
  EXPECT_EQ(lp.top[2].id, 2);
  EXPECT_FLOAT_EQ(lp.top[0].logprob, lp.top[1].logprob);
  EXPECT_GT(lp.top[1].logprob, lp.top[2].logprob);
  EXPECT_LT(lp.logprob, lp.top[2].logprob);                            // the sampled token need not be among them
  EXPECT_EQ(ComputeLogprobs(logits.data(), 5, 0, 20).top.size(), 5u);  // clamped to the vocabulary
}

}  // namespace
}  // namespace troupe
