// Registry: routes over spans, replicas in turn, expiry of silent nodes,
// troubled nodes and unreachable hops left out (and named when no route is left).
#include "scheduling/registry.h"

#include <gtest/gtest.h>

namespace troupe::scheduling {
namespace {

TEST(RegistryTest, RoutableDoesNotTakeATurn) {
  Registry r;
  const auto now = std::chrono::steady_clock::now();
  EXPECT_FALSE(r.Routable(4, now));
  r.Upsert(ShardEntry{"a", "tcp://a", 0, 2, true, now});
  EXPECT_FALSE(r.Routable(4, now));
  r.Upsert(ShardEntry{"b", "tcp://b", 2, 4, true, now});
  r.Upsert(ShardEntry{"b2", "tcp://b2", 2, 4, true, now});
  EXPECT_TRUE(r.Routable(4, now));
  auto first = r.Route(4, now);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(r.Routable(4, now));
  auto second = r.Route(4, now);
  ASSERT_TRUE(second.ok());
  EXPECT_NE((*first)[1].node_id, (*second)[1].node_id);  // round robin untouched by Routable
}

TEST(RegistryTest, RoutesOverSpansAndRoundRobinsReplicas) {
  Registry r;
  const auto now = std::chrono::steady_clock::now();
  r.Upsert(ShardEntry{"a", "tcp://a", 0, 10, false, now});
  r.Upsert(ShardEntry{"b", "tcp://b", 10, 30, false, now});
  r.Upsert(ShardEntry{"b2", "tcp://b2", 10, 30, false, now});
  auto first = r.Route(30, now);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 2u);
  EXPECT_EQ((*first)[0].node_id, "a");
  auto second = r.Route(30, now);
  ASSERT_TRUE(second.ok());
  EXPECT_NE((*first)[1].node_id, (*second)[1].node_id);  // replicas in turn
}

TEST(RegistryTest, MissingLayersAndStaleNodesGiveNoRoute) {
  Registry r(std::chrono::seconds(5));
  const auto now = std::chrono::steady_clock::now();
  r.Upsert(ShardEntry{"a", "tcp://a", 0, 10, false, now});
  auto gap = r.Route(30, now);
  ASSERT_FALSE(gap.ok());
  EXPECT_NE(gap.status().message().find("layer 10"), std::string::npos);
  r.Upsert(ShardEntry{"b", "tcp://b", 10, 30, false, now});
  EXPECT_TRUE(r.Route(30, now).ok());
  EXPECT_FALSE(r.Route(30, now + std::chrono::seconds(6)).ok());  // announces stopped
  r.Upsert(ShardEntry{"c", "tcp://c", 0, 30, true, now});
  EXPECT_TRUE(r.Route(30, now + std::chrono::hours(1)).ok());  // config peers never expire
}

TEST(RegistryTest, HeartbeatsKeepKnownNodesAliveAndSilentOnesExpire) {
  Registry r(std::chrono::seconds(5));
  const auto t0 = std::chrono::steady_clock::now();
  r.Upsert(ShardEntry{"a", "tcp://a", 0, 30, false, t0});
  r.Upsert(ShardEntry{"b", "tcp://b", 0, 30, false, t0});
  r.Upsert(ShardEntry{"fixed", "tcp://f", 0, 30, true, t0});
  r.Touch("a", t0 + std::chrono::seconds(4));
  r.Touch("stranger", t0 + std::chrono::seconds(4));  // joins by announcing, not by heartbeat
  EXPECT_EQ(r.Find("stranger"), nullptr);
  EXPECT_TRUE(r.Expired(t0 + std::chrono::seconds(5)).empty());
  EXPECT_EQ(r.Expired(t0 + std::chrono::seconds(6)), std::vector<std::string>{"b"});
  EXPECT_EQ(r.Expired(t0 + std::chrono::seconds(10)), (std::vector<std::string>{"a", "b"}));
  r.Touch("a", t0);  // a late, older heartbeat does not turn the clock back
  EXPECT_EQ(r.Expired(t0 + std::chrono::seconds(6)), std::vector<std::string>{"b"});
}

TEST(RegistryTest, CoverageCountsLiveNodesPerLayer) {
  Registry r(std::chrono::seconds(10));
  const auto now = std::chrono::steady_clock::now();
  r.Upsert(ShardEntry{"a", "tcp://a", 0, 2, false, now});
  r.Upsert(ShardEntry{"b", "tcp://b", 1, 4, false, now});
  r.Upsert(ShardEntry{"old", "tcp://old", 0, 4, false, now - std::chrono::seconds(60)});  // expired
  EXPECT_EQ(r.Coverage(5, now), (std::vector<uint32_t>{1, 2, 1, 1, 0}));
}

TEST(RegistryTest, RoutesCarryTheAnnouncedKey) {
  Registry r;
  const auto now = std::chrono::steady_clock::now();
  ShardEntry e{"a", "tcp://a", 0, 4, false, now};
  e.public_key = "K";
  r.Upsert(e);
  auto route = r.Route(4, now);
  ASSERT_TRUE(route.ok());
  ASSERT_EQ(route->size(), 1u);
  EXPECT_EQ((*route)[0].public_key, "K");
}

TEST(RegistryTest, NewSessionsTakeTheFastReplicaUntilItsLoadOutweighsTheLink) {
  Registry r;
  const auto now = std::chrono::steady_clock::now();
  r.Upsert(ShardEntry{"a", "tcp://a", 0, 10, false, now});
  r.Upsert(ShardEntry{"fast", "tcp://fast", 10, 30, false, now});
  r.Upsert(ShardEntry{"slow", "tcp://slow", 10, 30, false, now});
  r.RecordRoundTrip("fast", 0.2);
  r.RecordRoundTrip("slow", 100);  // a 50 ms link each way
  r.Report("fast", 5, 0);
  r.Report("slow", 5, 0);
  for (int i = 0; i < 10; ++i) {
    auto route = r.Route(30, now);
    ASSERT_TRUE(route.ok());
    EXPECT_EQ((*route)[1].node_id, "fast") << "session " << i;
  }
  // 20 sessions on the fast one (its heartbeat says): 0.2 + 5 * 21 > 100 + 5.
  r.Report("fast", 5, 20);
  auto route = r.Route(30, now);
  ASSERT_TRUE(route.ok());
  EXPECT_EQ((*route)[1].node_id, "slow");
  // A refreshed announce keeps what was measured.
  r.Upsert(ShardEntry{"slow", "tcp://slow", 10, 30, false, now});
  EXPECT_GT(r.Find("slow")->rtt_ms, 50);
}

TEST(RegistryTest, OneNodeForTheWholeModelBeatsTwoHopsOfTheSameSpeed) {
  Registry r;
  const auto now = std::chrono::steady_clock::now();
  r.Upsert(ShardEntry{"a", "tcp://a", 0, 10, false, now});
  r.Upsert(ShardEntry{"b", "tcp://b", 10, 30, false, now});
  r.Upsert(ShardEntry{"whole", "tcp://w", 0, 30, false, now});
  for (const char* n : {"a", "b", "whole"}) r.RecordRoundTrip(n, 1);
  auto route = r.Route(30, now);
  ASSERT_TRUE(route.ok());
  ASSERT_EQ(route->size(), 1u);
  EXPECT_EQ((*route)[0].node_id, "whole");
  // Made slow, the two-hop path wins.
  r.RecordRoundTrip("whole", 500);
  r.RecordRoundTrip("whole", 500);
  route = r.Route(30, now);
  ASSERT_TRUE(route.ok());
  EXPECT_EQ(route->size(), 2u);
}

TEST(RegistryTest, ATroubledNodeTakesNoSessionAndNoRouteNamesWhy) {
  Registry r;
  const auto now = std::chrono::steady_clock::now();
  r.Upsert(ShardEntry{"a", "tcp://a", 0, 10, true, now});
  r.Upsert(ShardEntry{"b", "tcp://b", 10, 30, true, now});
  r.Upsert(ShardEntry{"b2", "tcp://b2", 10, 30, true, now});
  r.SetTrouble("b", "node 'b' at tcp://b refused this node's CURVE key");
  for (int i = 0; i < 4; ++i) {
    auto route = r.Route(30, now);
    ASSERT_TRUE(route.ok());
    EXPECT_EQ((*route)[1].node_id, "b2");
  }
  r.SetTrouble("b2", "handshake with node 'b2' failed 3 times");
  EXPECT_FALSE(r.Routable(30, now));
  auto none = r.Route(30, now);
  ASSERT_FALSE(none.ok());
  const std::string why = none.status().message();
  EXPECT_NE(why.find("no shard serves layer 10 of 30"), std::string::npos) << why;
  EXPECT_NE(why.find("shard 'b' (layers 10-30) is unusable: node 'b' at tcp://b refused"), std::string::npos) << why;
  EXPECT_NE(why.find("failed 3 times"), std::string::npos) << why;
  // A refreshed announce keeps the trouble; clearing it makes the node usable.
  r.Upsert(ShardEntry{"b", "tcp://b", 10, 30, false, now});
  EXPECT_FALSE(r.Routable(30, now));
  r.SetTrouble("b", "");
  EXPECT_TRUE(r.Routable(30, now));
}

TEST(RegistryTest, AHopToANodeItsPredecessorCannotReachIsNeverTaken) {
  Registry r;
  const auto now = std::chrono::steady_clock::now();
  r.Upsert(ShardEntry{"a", "tcp://a", 0, 10, true, now});
  r.Upsert(ShardEntry{"a2", "tcp://a2", 0, 10, true, now});
  r.Upsert(ShardEntry{"b", "tcp://b", 10, 30, true, now});
  r.SetUnreachable("a", {{"b", "node 'b' refused this node's CURVE key"}});
  for (int i = 0; i < 4; ++i) {  // both first-span replicas would be in turn: only a2 reaches b
    auto route = r.Route(30, now);
    ASSERT_TRUE(route.ok());
    EXPECT_EQ((*route)[0].node_id, "a2");
  }
  r.SetUnreachable("a2", {{"b", "handshake with node 'b' failed 3 times"}});
  auto none = r.Route(30, now);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("shard 'a' (layers 0-10) cannot reach 'b': node 'b' refused"),
            std::string::npos)
      << none.status().message();
  r.SetUnreachable("a", {});
  EXPECT_TRUE(r.Routable(30, now));
}

TEST(RegistryTest, ANodeStartedAgainIsNoLongerDraining) {
  Registry r;
  const auto now = std::chrono::steady_clock::now();
  ShardEntry first{"a", "tcp://a", 0, 4, false, now};
  first.incarnation = 7;
  r.Upsert(first);
  r.Report("a", 2.5, 3);
  r.SetDraining("a");
  // The same process announcing again (late, or saying it drains): still draining.
  ShardEntry again = first;
  EXPECT_FALSE(r.Restarted(again));
  r.Upsert(again);
  EXPECT_TRUE(r.Find("a")->draining);
  EXPECT_FALSE(r.Routable(4, now));
  // A new process (moved to other layers): a fresh entry, routable, measured anew.
  ShardEntry moved{"a", "tcp://a2", 0, 4, false, now};
  moved.incarnation = 9;
  EXPECT_TRUE(r.Restarted(moved));
  r.Upsert(moved);
  EXPECT_FALSE(r.Find("a")->draining);
  EXPECT_LT(r.Find("a")->step_ms, 0);
  EXPECT_EQ(r.Find("a")->endpoint, "tcp://a2");
  EXPECT_TRUE(r.Routable(4, now));
  // An announce without an incarnation (an older node) refreshes and keeps it.
  ShardEntry old{"a", "tcp://a2", 0, 4, false, now};
  EXPECT_FALSE(r.Restarted(old));
  r.Upsert(old);
  EXPECT_EQ(r.Find("a")->incarnation, 9u);
}

TEST(RegistryTest, AQuarantinedNodeTakesNoSessionAndStaysSoWhenItAnnouncesOrRestarts) {
  Registry r;
  const auto now = std::chrono::steady_clock::now();
  r.Upsert(ShardEntry{"a", "tcp://a", 0, 10, true, now});
  ShardEntry liar{"liar", "tcp://liar", 10, 20, false, now};
  liar.incarnation = 1;
  r.Upsert(liar);
  r.Upsert(ShardEntry{"b", "tcp://b", 10, 20, false, now});
  r.SetQuarantined("liar", "its hidden states differed");
  for (int i = 0; i < 4; ++i) {
    auto route = r.Route(20, now);
    ASSERT_TRUE(route.ok());
    EXPECT_EQ((*route)[1].node_id, "b");
  }
  EXPECT_EQ(r.Coverage(20, now)[15], 1u);  // a joining node fills its place
  EXPECT_EQ(r.Usable(now).size(), 2u);
  r.Upsert(liar);  // a refreshed announce
  liar.incarnation = 2;
  ASSERT_TRUE(r.Restarted(liar));
  r.Upsert(liar);  // started again
  EXPECT_EQ(r.Find("liar")->quarantine, "its hidden states differed");
  r.Remove("b");
  auto none = r.Route(20, now);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("shard 'liar' (layers 10-20) is quarantined: its hidden states differed"),
            std::string::npos)
      << none.status().message();
}

}  // namespace
}  // namespace troupe::scheduling
