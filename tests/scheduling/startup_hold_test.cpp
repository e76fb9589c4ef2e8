#include "scheduling/startup_hold.h"

#include <gtest/gtest.h>

namespace troupe::scheduling {
namespace {

using std::chrono::seconds;

HeldSubmit Job(uint64_t request_id) {
  HeldSubmit h;
  h.request_id = request_id;
  return h;
}

TEST(StartupHoldTest, HoldsUntilTheFirstRouteThenReleasesInOrder) {
  const Clock::time_point t0{};
  StartupHold hold(t0, seconds(5));
  EXPECT_TRUE(hold.Holding(t0 + seconds(1), false));
  hold.Hold(Job(1));
  hold.Hold(Job(2));
  EXPECT_TRUE(hold.Release(t0 + seconds(2), false).empty()) << "no route yet";
  std::deque<HeldSubmit> out = hold.Release(t0 + seconds(3), true);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].request_id, 1u);
  EXPECT_EQ(out[1].request_id, 2u);
  // Once the head has had a route, a missing one is news: nothing is held.
  EXPECT_FALSE(hold.Holding(t0 + seconds(4), false));
}

TEST(StartupHoldTest, TheWaitEndsTheHoldWithoutARoute) {
  const Clock::time_point t0{};
  StartupHold hold(t0, seconds(5));
  hold.Hold(Job(7));
  EXPECT_TRUE(hold.Release(t0 + seconds(4), false).empty());
  EXPECT_EQ(hold.Release(t0 + seconds(5), false).size(), 1u) << "they then meet the usual NO_ROUTE";
  EXPECT_FALSE(hold.Holding(t0 + seconds(6), false));
  EXPECT_TRUE(hold.Release(t0 + seconds(6), false).empty()) << "released once";
}

}  // namespace
}  // namespace troupe::scheduling
