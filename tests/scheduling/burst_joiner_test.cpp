#include "scheduling/burst_joiner.h"

#include <gtest/gtest.h>

namespace troupe::scheduling {
namespace {

using Clock = BurstJoiner::Clock;
using std::chrono::milliseconds;

constexpr auto kPatience = milliseconds(50);
const Clock::time_point t0 = Clock::time_point() + std::chrono::hours(1);

TEST(BurstJoinerTest, NoOtherSessionOutSendsAtOnce) {
  BurstJoiner j(kPatience);
  EXPECT_FALSE(j.Waits("shard-0", t0, t0));
  j.Sent(1, "shard-0", t0);
  j.Returned(1, t0 + milliseconds(30));
  EXPECT_FALSE(j.Waits("shard-0", t0 + milliseconds(30), t0 + milliseconds(30)));
}

TEST(BurstJoinerTest, WaitsForASessionInItsFirstRound) {
  // The lighthouse case: A's prefill came back first, B's is still out.
  BurstJoiner j(kPatience);
  j.Sent(1, "shard-0", t0);
  j.Sent(2, "shard-0", t0);
  j.Returned(1, t0 + milliseconds(20));
  const auto since = t0 + milliseconds(20);
  EXPECT_TRUE(j.Waits("shard-0", since, since));
  EXPECT_TRUE(j.Waits("shard-0", since, since + milliseconds(10)));
  j.Returned(2, t0 + milliseconds(35));  // B is back: its step joins A's
  EXPECT_FALSE(j.Waits("shard-0", since, t0 + milliseconds(35)));
}

TEST(BurstJoinerTest, OnlySessionsBoundForTheSameFirstShardCount) {
  BurstJoiner j(kPatience);
  j.Sent(1, "shard-0", t0);
  j.Sent(2, "shard-9", t0);
  j.Returned(1, t0 + milliseconds(5));
  EXPECT_FALSE(j.Waits("shard-0", t0 + milliseconds(5), t0 + milliseconds(5)));
  EXPECT_TRUE(j.Waits("shard-9", t0 + milliseconds(5), t0 + milliseconds(5)));
}

TEST(BurstJoinerTest, WaitsOnlyForSessionsExpectedWithinPatience) {
  BurstJoiner j(kPatience);
  // Session 2's rounds take 200 ms: four times the patience.
  j.Sent(2, "shard-0", t0);
  j.Returned(2, t0 + milliseconds(200));
  j.Sent(2, "shard-0", t0 + milliseconds(200));
  j.Sent(1, "shard-0", t0 + milliseconds(200));
  j.Returned(1, t0 + milliseconds(210));
  const auto since = t0 + milliseconds(210);
  EXPECT_FALSE(j.Waits("shard-0", since, since)) << "expected back at 400 ms, after the bound";
  // Session 3's rounds take 20 ms and it left at 200 ms: expected at 220 ms.
  j.Sent(3, "shard-0", t0);
  j.Returned(3, t0 + milliseconds(20));
  j.Sent(3, "shard-0", t0 + milliseconds(200));
  EXPECT_TRUE(j.Waits("shard-0", since, since));
}

TEST(BurstJoinerTest, NeverWaitsPastPatienceAndALateSessionIsNotWaitedForAgain) {
  BurstJoiner j(kPatience);
  j.Sent(1, "shard-0", t0);
  j.Sent(2, "shard-0", t0);  // a long prefill
  j.Returned(1, t0 + milliseconds(10));
  const auto since = t0 + milliseconds(10);
  EXPECT_TRUE(j.Waits("shard-0", since, since + milliseconds(49)));
  EXPECT_FALSE(j.Waits("shard-0", since, since + kPatience));
  // Session 1's next step: session 2 is still out, but late now.
  j.Sent(1, "shard-0", since + kPatience);
  j.Returned(1, since + kPatience + milliseconds(10));
  EXPECT_FALSE(j.Waits("shard-0", since + kPatience + milliseconds(10), since + kPatience + milliseconds(10)));
  // Once back, it is waited for as before: its rounds take 10 ms now.
  j.Returned(2, t0 + milliseconds(300));
  j.Sent(2, "shard-0", t0 + milliseconds(300));
  j.Returned(2, t0 + milliseconds(310));
  j.Sent(2, "shard-0", t0 + milliseconds(310));
  EXPECT_TRUE(j.Waits("shard-0", t0 + milliseconds(310), t0 + milliseconds(310)));
}

TEST(BurstJoinerTest, ForgottenSessionsAreNotWaitedFor) {
  BurstJoiner j(kPatience);
  j.Sent(1, "shard-0", t0);
  j.Sent(2, "shard-0", t0);
  j.Returned(1, t0 + milliseconds(10));
  EXPECT_EQ(j.out(), 1u);
  j.Forget(2);
  EXPECT_EQ(j.out(), 0u);
  EXPECT_FALSE(j.Waits("shard-0", t0 + milliseconds(10), t0 + milliseconds(10)));
  j.Returned(2, t0 + milliseconds(20));  // a result of a forgotten session is ignored
  EXPECT_EQ(j.out(), 0u);
}

TEST(BurstJoinerTest, ZeroPatienceNeverHolds) {
  BurstJoiner j(Clock::duration::zero());
  j.Sent(1, "shard-0", t0);
  j.Sent(2, "shard-0", t0);
  j.Returned(1, t0);
  EXPECT_FALSE(j.Waits("shard-0", t0, t0));
}

}  // namespace
}  // namespace troupe::scheduling
