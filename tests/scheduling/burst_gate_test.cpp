#include "scheduling/burst_gate.h"

#include <gtest/gtest.h>

namespace troupe::scheduling {
namespace {

using Clock = BurstGate::Clock;
using std::chrono::microseconds;

constexpr auto kPatience = microseconds(1000);
const Clock::time_point t0 = Clock::time_point() + std::chrono::hours(1);

TEST(BurstGateTest, NothingHeldIsNotReady) {
  BurstGate gate(kPatience);
  EXPECT_FALSE(gate.Ready(t0));
  EXPECT_EQ(gate.WaitUntil(), Clock::time_point::max());
}

TEST(BurstGateTest, AStepOutsideAnyBurstRunsAtOnce) {
  BurstGate gate(kPatience);
  gate.Arrived(0, 0, t0);
  EXPECT_TRUE(gate.Ready(t0));
  BurstGate single(kPatience);
  single.Arrived(7, 1, t0);  // a burst of one is no burst
  EXPECT_TRUE(single.Ready(t0));
}

TEST(BurstGateTest, APartialBurstWaitsUntilComplete) {
  BurstGate gate(kPatience);
  gate.Arrived(42, 3, t0);
  EXPECT_FALSE(gate.Ready(t0));
  EXPECT_EQ(gate.WaitUntil(), t0 + kPatience);
  gate.Arrived(42, 3, t0 + microseconds(20));
  EXPECT_FALSE(gate.Ready(t0 + microseconds(20)));
  gate.Arrived(42, 3, t0 + microseconds(40));
  EXPECT_TRUE(gate.Ready(t0 + microseconds(40)));
  EXPECT_EQ(gate.held(), 3u);
}

TEST(BurstGateTest, APartialBurstRunsOncePatienceIsOut) {
  BurstGate gate(kPatience);
  gate.Arrived(42, 4, t0);
  gate.Arrived(42, 4, t0 + microseconds(500));
  EXPECT_FALSE(gate.Ready(t0 + kPatience - microseconds(1)));
  EXPECT_EQ(gate.WaitUntil(), t0 + kPatience);  // counted from the first member
  EXPECT_TRUE(gate.Ready(t0 + kPatience));
}

TEST(BurstGateTest, AnyReadyStepMakesTheGateReady) {
  BurstGate gate(kPatience);
  gate.Arrived(1, 2, t0);
  EXPECT_FALSE(gate.Ready(t0));
  gate.Arrived(2, 2, t0);
  gate.Arrived(2, 2, t0);  // burst 2 complete: compute, burst 1's member with it
  EXPECT_TRUE(gate.Ready(t0));
  gate.Left(1, t0);
  gate.Left(2, t0);
  gate.Left(2, t0);
  EXPECT_EQ(gate.held(), 0u);
  EXPECT_FALSE(gate.Ready(t0));
  // Burst 1 was split: its straggler does not wait.
  gate.Arrived(1, 2, t0 + microseconds(100));
  EXPECT_TRUE(gate.Ready(t0 + microseconds(100)));
  gate.Left(1, t0 + microseconds(100));
  EXPECT_EQ(gate.bursts(), 0u);  // every member computed: forgotten
}

TEST(BurstGateTest, BurstsAreForgottenOnceComputedOrLongGone) {
  BurstGate gate(kPatience);
  for (uint64_t id = 1; id <= 100; ++id) {
    gate.Arrived(id, 2, t0);
    gate.Arrived(id, 2, t0);
    gate.Left(id, t0);
    gate.Left(id, t0);
  }
  EXPECT_EQ(gate.bursts(), 0u);
  gate.Arrived(500, 3, t0);  // one member only, computed after the wait; the rest never come
  gate.Left(500, t0 + kPatience);
  EXPECT_EQ(gate.bursts(), 1u);
  gate.Arrived(0, 0, t0 + kPatience * 64);
  gate.Arrived(501, 2, t0 + kPatience * 64);  // any later arrival sweeps the old one
  EXPECT_EQ(gate.bursts(), 1u);
}

TEST(BurstGateTest, ZeroPatienceNeverWaits) {
  BurstGate gate(Clock::duration::zero());
  gate.Arrived(9, 4, t0);
  EXPECT_TRUE(gate.Ready(t0));
}

TEST(BurstGateTest, ADroppedStepCountsAsLeft) {
  BurstGate gate(kPatience);
  gate.Arrived(0, 0, t0);
  gate.Arrived(3, 2, t0);
  gate.Left(0, t0);  // the unbursted one was refused
  EXPECT_FALSE(gate.Ready(t0));
  EXPECT_EQ(gate.held(), 1u);
}

v1::Step StepTo(const std::string& node) {
  v1::Step s;
  s.add_rest_of_route()->set_node_id(node);
  return s;
}

TEST(TagBurstsTest, StepsToOneNodeFormOneBurst) {
  std::vector<v1::Step> steps = {StepTo("a"), StepTo("b"), StepTo("a"), StepTo("a"), v1::Step()};
  steps[1].set_burst_id(5);  // tags from the stage before go
  steps[1].set_burst_size(3);
  TagBursts(steps, 77);
  for (int i : {0, 2, 3}) {
    EXPECT_EQ(steps[i].burst_id(), 77u);
    EXPECT_EQ(steps[i].burst_size(), 3u);
  }
  EXPECT_EQ(steps[1].burst_id(), 0u);  // alone to its node: no burst to wait for
  EXPECT_EQ(steps[1].burst_size(), 0u);
  EXPECT_EQ(steps[4].burst_id(), 0u);  // goes nowhere
}

TEST(TagBurstsTest, GroupsByALaterHop) {
  std::vector<v1::Step> steps(3);
  for (int i = 0; i < 3; ++i) {
    steps[i].add_rest_of_route()->set_node_id("head");  // the embedding, for all
    steps[i].add_rest_of_route()->set_node_id(i == 1 ? "shard-0-r1" : "shard-0");
  }
  TagBursts({&steps[0], &steps[1], &steps[2]}, 9, /*hop=*/1);
  EXPECT_EQ(steps[0].burst_size(), 2u);
  EXPECT_EQ(steps[2].burst_size(), 2u);
  EXPECT_EQ(steps[1].burst_id(), 0u);  // the only one to its replica
}

TEST(TagBurstsTest, TheReceiversGateRunsOnceTheBurstIsIn) {
  std::vector<v1::Step> steps = {StepTo("a"), StepTo("a")};
  TagBursts({&steps[0], &steps[1]}, 5);
  BurstGate gate(kPatience);
  gate.Arrived(steps[0].burst_id(), steps[0].burst_size(), t0);
  EXPECT_FALSE(gate.Ready(t0));
  gate.Arrived(steps[1].burst_id(), steps[1].burst_size(), t0);
  EXPECT_TRUE(gate.Ready(t0));
}

}  // namespace
}  // namespace troupe::scheduling
