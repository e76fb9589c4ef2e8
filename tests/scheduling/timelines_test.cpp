// Timelines (the console's per-hop waterfall) and MetricHistory (its charts).
#include "scheduling/timelines.h"

#include <gtest/gtest.h>

#include "scheduling/metric_history.h"

namespace troupe::scheduling {
namespace {

StepTiming Step(uint32_t index, double total) {
  StepTiming s;
  s.index = index;
  s.total_ms = total;
  s.hops = {{"head", 1, 0.1, 0.5, 0.1}, {"shard-0", 2, 1.0, 4.0, 0.2}, {"head", 4, 0.0, 0.3, 0.0}};
  return s;
}

TEST(TimelinesTest, NetworkIsWhatTheHopsDoNotAccountFor) {
  StepTiming s = Step(3, 10.0);
  EXPECT_NEAR(s.network_ms(), 10.0 - 6.2, 1e-9);
  s.total_ms = 5.0;  // clocks of one host never run backwards, but a total below the parts reads 0
  EXPECT_EQ(s.network_ms(), 0.0);
  s.total_ms = -1;
  EXPECT_EQ(s.network_ms(), 0.0);
}

TEST(TimelinesTest, KeepsTheLastStepsOfEachSessionAndDropsEndedOnesLater) {
  Timelines t;
  const auto now = Timelines::Clock::now();
  for (uint32_t i = 0; i < Timelines::kStepsKept + 10; ++i) t.Record(7, Step(i, 10), now);
  auto steps = t.Of(7);
  ASSERT_TRUE(steps.has_value());
  ASSERT_EQ(steps->size(), Timelines::kStepsKept);
  EXPECT_EQ(steps->front().index, 10u);
  EXPECT_EQ(steps->back().index, Timelines::kStepsKept + 9);
  EXPECT_FALSE(t.Of(8).has_value());
  t.End(7, now);
  EXPECT_TRUE(t.Of(7).has_value());  // still there to look at
  t.Record(9, Step(0, 1), now + Timelines::kEndedKept + std::chrono::seconds(1));
  EXPECT_FALSE(t.Of(7).has_value());
  EXPECT_TRUE(t.Of(9).has_value());
}

TEST(TimelinesTest, HoldsAtMostSoManySessionsEndedOnesFirst) {
  Timelines t;
  const auto now = Timelines::Clock::now();
  t.Record(1, Step(0, 1), now);
  t.End(1, now);
  for (uint64_t s = 2; s <= Timelines::kSessionsKept + 1; ++s) t.Record(s, Step(0, 1), now);
  EXPECT_FALSE(t.Of(1).has_value());
  EXPECT_TRUE(t.Of(2).has_value());
  EXPECT_TRUE(t.Of(Timelines::kSessionsKept + 1).has_value());
}

TEST(MetricHistoryTest, OneSampleASecondInAFixedRing) {
  MetricHistory h(std::chrono::seconds(10), std::chrono::seconds(1));
  EXPECT_EQ(h.capacity(), 10u);
  int64_t t = 1'000'000;
  EXPECT_TRUE(h.Add(t, {{"tokens_per_s", 1}}));
  EXPECT_FALSE(h.Add(t + 500, {{"tokens_per_s", 99}}));  // too soon
  for (int i = 1; i < 15; ++i) EXPECT_TRUE(h.Add(t + i * 1000, {{"tokens_per_s", double(i)}, {"queue_depth", 2}}));
  const int64_t now = t + 14 * 1000;
  auto all = h.Last(3600, now);
  ASSERT_EQ(all["tokens_per_s"].size(), 10u);  // the ring holds 10
  EXPECT_EQ(all["tokens_per_s"].front(), std::make_pair(t + 5000, 5.0));
  EXPECT_EQ(all["tokens_per_s"].back(), std::make_pair(now, 14.0));
  EXPECT_EQ(all["queue_depth"].size(), 10u);
  auto recent = h.Last(3, now);
  ASSERT_EQ(recent["tokens_per_s"].size(), 3u);  // now-3 s exclusive
  EXPECT_EQ(recent["tokens_per_s"].front().second, 12.0);
}

}  // namespace
}  // namespace troupe::scheduling
