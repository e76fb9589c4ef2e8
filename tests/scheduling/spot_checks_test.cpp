// Spot checks: which sessions get a shadow and on which replica, the
// shadow's life (open, start, fail, end), digests compared by position, and
// the verdicts — a node is quarantined only when two replicas that agree
// with each other both disagree with it.
#include "scheduling/spot_checks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <variant>

#include "scheduling/session_messages.h"

namespace troupe::scheduling {
namespace {

const auto kNow = Clock::now();

ShardEntry Node(const std::string& id, int64_t begin, int64_t end) {
  ShardEntry e{id, "tcp://" + id, begin, end, true, kNow};
  e.public_key = "key-" + id;
  e.details.device = "kernels (cpu)";
  return e;
}

// head -> a (0-10) -> b (10-20) -> c (20-30) -> head.
std::vector<v1::RouteHop> RouteABC() {
  return RouteThrough("head", "tcp://head",
                      {Span{"a", "tcp://a", 0, 10}, Span{"b", "tcp://b", 10, 20}, Span{"c", "tcp://c", 20, 30}});
}

template <typename T>
std::vector<T> All(const Actions& actions) {
  std::vector<T> out;
  for (const Action& a : actions) {
    if (const T* t = std::get_if<T>(&a)) out.push_back(*t);
  }
  return out;
}

std::vector<std::string> ShardsOf(const std::vector<v1::RouteHop>& route) {
  std::vector<std::string> out;
  for (const v1::RouteHop& h : route) {
    if (h.stage() == v1::STAGE_SHARD) out.push_back(h.node_id());
  }
  return out;
}

TEST(DigestMatchTest, ComparesEachPositionOnceBothHalvesAreIn) {
  DigestMatch m(5);
  EXPECT_EQ(m.Checked(4, 1), std::nullopt);  // before the shadow's replay: never compared
  EXPECT_EQ(m.Shadow(4, 1), std::nullopt);
  EXPECT_EQ(m.Checked(5, 7), std::nullopt);
  EXPECT_EQ(m.Shadow(5, 7), std::optional<bool>(true));
  EXPECT_EQ(m.Shadow(6, 8), std::nullopt);  // either half may come first
  EXPECT_EQ(m.Checked(6, 9), std::optional<bool>(false));
  EXPECT_EQ(m.compared(), 2);
}

TEST(DigestMatchTest, HalvesWithoutTheirOtherHalfAreBounded) {
  DigestMatch m(0);
  for (int64_t p = 0; p < static_cast<int64_t>(DigestMatch::kMaxPending) + 10; ++p) m.Checked(p, 1);
  EXPECT_EQ(m.Shadow(0, 1), std::nullopt);  // the oldest went
  EXPECT_EQ(m.Shadow(DigestMatch::kMaxPending + 9, 1), std::optional<bool>(true));
}

TEST(HiddenDigestTest, DependsOnEveryValue) {
  std::vector<float> row(576, 0.25f);
  const uint64_t d = HiddenDigest(row.data(), 576);
  EXPECT_EQ(d, HiddenDigest(row.data(), 576));
  row[575] = std::nextafter(0.25f, 1.0f);
  EXPECT_NE(d, HiddenDigest(row.data(), 576));
  EXPECT_NE(d, HiddenDigest(row.data(), 575));
}

TEST(SpotChecksTest, NoFractionOrNoReplicaMeansNoShadow) {
  const std::vector<ShardEntry> usable{Node("a", 0, 10), Node("b", 10, 20), Node("b2", 10, 20), Node("c", 20, 30)};
  EXPECT_EQ(SpotChecks(0, 1).Plan(7, RouteABC(), 64, usable), std::nullopt);
  const std::vector<ShardEntry> single{Node("a", 0, 10), Node("b", 10, 20), Node("c", 20, 30)};
  EXPECT_EQ(SpotChecks(1, 1).Plan(7, RouteABC(), 64, single), std::nullopt);
  // A replica of other layers is no replica.
  const std::vector<ShardEntry> other{Node("a", 0, 10), Node("b", 10, 20), Node("bx", 10, 30), Node("c", 20, 30)};
  EXPECT_EQ(SpotChecks(1, 1).Plan(7, RouteABC(), 64, other), std::nullopt);
}

TEST(SpotChecksTest, OnlyKernelsBackendNodesAreCompared) {
  std::vector<ShardEntry> usable{Node("a", 0, 10), Node("b", 10, 20), Node("b2", 10, 20), Node("c", 20, 30)};
  usable[2].details.device = "torch (cuda:0, bf16)";  // exact only up to rounding that varies with batching
  EXPECT_EQ(SpotChecks(1, 1).Plan(7, RouteABC(), 64, usable), std::nullopt);
  usable[2].details.device = "";  // no heartbeat yet
  EXPECT_EQ(SpotChecks(1, 1).Plan(7, RouteABC(), 64, usable), std::nullopt);
  usable[2].details.device = "kernels (cpu)";
  usable[1].details.device = "torch (cpu, f32)";  // the checked node
  EXPECT_EQ(SpotChecks(1, 1).Plan(7, RouteABC(), 64, usable), std::nullopt);
}

TEST(SpotChecksTest, AFractionOfSessionsIsChecked) {
  const std::vector<ShardEntry> usable{Node("a", 0, 10), Node("b", 10, 20), Node("b2", 10, 20), Node("c", 20, 30)};
  SpotChecks checks(0.25, 42);
  int picked = 0;
  for (uint64_t id = 1; id <= 4000; ++id) picked += checks.Plan(id, RouteABC(), 64, usable).has_value();
  EXPECT_GT(picked, 800);
  EXPECT_LT(picked, 1200);
}

TEST(SpotChecksTest, TheShadowRouteSwapsOneSpanForAReplica) {
  const std::vector<ShardEntry> usable{Node("a", 0, 10), Node("b", 10, 20), Node("b2", 10, 20), Node("c", 20, 30)};
  std::optional<ShadowPlan> plan = SpotChecks(1, 1).Plan(7, RouteABC(), 64, usable);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->session_id, 7u);
  EXPECT_EQ(plan->max_length, 64);
  EXPECT_EQ(plan->checked, "b");
  EXPECT_EQ(plan->partner, "b2");
  EXPECT_EQ(plan->layer_begin, 10);
  EXPECT_EQ(plan->layer_end, 20);
  EXPECT_EQ(ShardsOf(plan->route), (std::vector<std::string>{"a", "b2", "c"}));
  const v1::RouteHop& swapped = plan->route[2];
  EXPECT_EQ(swapped.endpoint(), "tcp://b2");
  EXPECT_EQ(swapped.public_key(), "key-b2");
  // The rest is the checked route's: embedding first, LM head and sampler last.
  const std::vector<v1::RouteHop> route = RouteABC();
  ASSERT_EQ(plan->route.size(), route.size());
  EXPECT_EQ(plan->route.front().stage(), v1::STAGE_EMBEDDING);
  EXPECT_EQ(plan->route.back().stage(), route.back().stage());
}

TEST(SpotChecksTest, PairsNotYetComparedComeFirst) {
  const std::vector<ShardEntry> usable{Node("a", 0, 10), Node("b", 10, 20), Node("b2", 10, 20), Node("b3", 10, 20),
                                       Node("c", 20, 30)};
  SpotChecks checks(1, 1);
  checks.Record("b", "b2", 10, 20, true);
  for (uint64_t id = 1; id <= 20; ++id) {
    std::optional<ShadowPlan> plan = checks.Plan(id, RouteABC(), 64, usable);
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->partner, "b3") << id;  // b and b2 have met; b and b3 not yet
  }
}

TEST(SpotChecksTest, AShadowOpensStartsAndClosesOnItsShards) {
  const std::vector<ShardEntry> usable{Node("a", 0, 10), Node("b", 10, 20), Node("b2", 10, 20), Node("c", 20, 30)};
  SpotChecks checks(1, 1);
  std::optional<ShadowPlan> plan = checks.Plan(7, RouteABC(), 64, usable);
  ASSERT_TRUE(plan);
  plan->shadow_id = 99;
  Actions open = checks.Open(*plan, "fp", kNow);
  std::vector<ToNode> opens = All<ToNode>(open);
  ASSERT_EQ(opens.size(), 3u);
  for (const ToNode& t : opens) {
    EXPECT_EQ(t.session_id, 99u);
    ASSERT_TRUE(t.envelope.has_session_open());
    EXPECT_EQ(t.envelope.session_open().session_id(), 99u);
    EXPECT_EQ(t.envelope.session_open().max_length(), 64u);
  }
  EXPECT_TRUE(checks.Has(99));
  EXPECT_TRUE(All<ShadowStart>(checks.Opened(99, "a")).empty());
  EXPECT_TRUE(All<ShadowStart>(checks.Opened(99, "b2")).empty());
  std::vector<ShadowStart> start = All<ShadowStart>(checks.Opened(99, "c"));
  ASSERT_EQ(start.size(), 1u);
  EXPECT_EQ(start[0].session_id, 7u);
  EXPECT_EQ(start[0].shadow_id, 99u);
  EXPECT_EQ(ShardsOf(start[0].route), (std::vector<std::string>{"a", "b2", "c"}));
  EXPECT_TRUE(All<ShadowStart>(checks.Opened(99, "c")).empty());  // once

  std::vector<Quarantine> found;
  Actions end = checks.Ended(ShadowEnd{7, 99, 12, std::nullopt}, &found);
  EXPECT_FALSE(checks.Has(99));
  EXPECT_TRUE(found.empty());
  std::vector<ToNode> closes = All<ToNode>(end);
  ASSERT_EQ(closes.size(), 3u);
  for (const ToNode& t : closes) EXPECT_EQ(t.envelope.session_close().session_id(), 99u);
  EXPECT_EQ(checks.checks_total(), 1u);
  EXPECT_EQ(checks.positions_total(), 12u);
  EXPECT_EQ(checks.mismatches_total(), 0u);
}

TEST(SpotChecksTest, AFailedOrSilentShadowClosesAndStopsTheSampler) {
  const std::vector<ShardEntry> usable{Node("a", 0, 10), Node("b", 10, 20), Node("b2", 10, 20), Node("c", 20, 30)};
  SpotChecks checks(1, 1, std::chrono::seconds(30));
  std::optional<ShadowPlan> plan = checks.Plan(7, RouteABC(), 64, usable);
  ASSERT_TRUE(plan);
  plan->shadow_id = 99;
  checks.Open(*plan, "fp", kNow);
  Actions failed = checks.Failed(99, "'b2' answered CACHE_FULL");
  EXPECT_EQ(All<ToNode>(failed).size(), 3u);
  ASSERT_EQ(All<ShadowStop>(failed).size(), 1u);
  EXPECT_EQ(All<ShadowStop>(failed)[0].session_id, 7u);
  EXPECT_FALSE(checks.Has(99));
  EXPECT_TRUE(checks.Failed(99, "again").empty());

  plan->shadow_id = 100;
  checks.Open(*plan, "fp", kNow);
  checks.Opened(100, "a");
  EXPECT_TRUE(checks.Tick(kNow + std::chrono::seconds(29)).empty());
  Actions late = checks.Tick(kNow + std::chrono::seconds(31));
  EXPECT_EQ(All<ShadowStop>(late).size(), 1u);
  std::vector<Log> logs = All<Log>(late);
  ASSERT_FALSE(logs.empty());
  EXPECT_NE(logs.back().text.find("no SessionOpened from 'b2', 'c'"), std::string::npos) << logs.back().text;
  // An ended shadow that compared nothing is no verdict.
  plan->shadow_id = 101;
  checks.Open(*plan, "fp", kNow);
  checks.Ended(ShadowEnd{7, 101, 0, std::nullopt}, nullptr);
  EXPECT_EQ(checks.checks_total(), 0u);
}

TEST(SpotChecksTest, TwoReplicasThatDisagreeQuarantineNobody) {
  SpotChecks checks(1, 1);
  EXPECT_TRUE(checks.Record("b", "liar", 10, 20, false).empty());
  EXPECT_TRUE(checks.Record("b", "liar", 10, 20, false).empty());
  EXPECT_FALSE(checks.Quarantined("b"));
  EXPECT_FALSE(checks.Quarantined("liar"));
}

TEST(SpotChecksTest, TheNodeTwoAgreeingReplicasDisagreeWithIsQuarantined) {
  SpotChecks checks(1, 1);
  EXPECT_TRUE(checks.Record("b", "b2", 10, 20, true).empty());
  EXPECT_TRUE(checks.Record("liar", "b", 10, 20, false).empty());  // one of the two: not yet known
  std::vector<Quarantine> found = checks.Record("b2", "liar", 10, 20, false);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].node_id, "liar");
  EXPECT_NE(found[0].why.find("differed from those of 'b' and 'b2', which agree (layers 10-20)"), std::string::npos)
      << found[0].why;
  EXPECT_TRUE(checks.Quarantined("liar"));
  EXPECT_EQ(checks.Why("liar"), found[0].why);
  EXPECT_FALSE(checks.Quarantined("b"));
  EXPECT_FALSE(checks.Quarantined("b2"));
  EXPECT_EQ(checks.Why("b"), "");
  EXPECT_TRUE(checks.Record("b2", "liar", 10, 20, false).empty());  // once
}

TEST(SpotChecksTest, TheAgreementMayComeLast) {
  SpotChecks checks(1, 1);
  EXPECT_TRUE(checks.Record("liar", "b", 10, 20, false).empty());
  EXPECT_TRUE(checks.Record("liar", "b2", 10, 20, false).empty());
  std::vector<Quarantine> found = checks.Record("b", "b2", 10, 20, true);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].node_id, "liar");
}

TEST(SpotChecksTest, AnIntermittentLiarDoesNotFrameTheHonest) {
  // The liar agrees now and then; honest nodes only ever differ from it.
  SpotChecks checks(1, 1);
  checks.Record("liar", "b", 10, 20, true);
  checks.Record("liar", "b", 10, 20, false);
  checks.Record("liar", "b2", 10, 20, true);
  EXPECT_FALSE(checks.Quarantined("b"));
  EXPECT_FALSE(checks.Quarantined("b2"));
  std::vector<Quarantine> found = checks.Record("liar", "b2", 10, 20, false);
  ASSERT_EQ(found.size(), 0u);  // b and b2 never met: no majority yet
  found = checks.Record("b", "b2", 10, 20, true);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].node_id, "liar");
  EXPECT_FALSE(checks.Quarantined("b"));
}

TEST(SpotChecksTest, VerdictsOnOtherLayersDoNotMix) {
  SpotChecks checks(1, 1);
  checks.Record("b", "b2", 0, 10, true);  // met on other layers
  checks.Record("liar", "b", 10, 20, false);
  EXPECT_TRUE(checks.Record("liar", "b2", 10, 20, false).empty());
}

TEST(SpotChecksTest, AMismatchIsLoggedAsAWarningNamingBothShards) {
  const std::vector<ShardEntry> usable{Node("a", 0, 10), Node("b", 10, 20), Node("b2", 10, 20), Node("c", 20, 30)};
  SpotChecks checks(1, 1);
  std::optional<ShadowPlan> plan = checks.Plan(7, RouteABC(), 64, usable);
  ASSERT_TRUE(plan);
  plan->shadow_id = 99;
  checks.Open(*plan, "fp", kNow);
  Actions end = checks.Ended(ShadowEnd{7, 99, 3, 41}, nullptr);
  std::vector<Log> logs = All<Log>(end);
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_TRUE(logs[0].warn);
  EXPECT_NE(logs[0].text.find("shards 'b' and 'b2' computed different hidden states with layers 10-20 for session 7 "
                              "at position 41"),
            std::string::npos)
      << logs[0].text;
  EXPECT_EQ(checks.mismatches_total(), 1u);
}

}  // namespace
}  // namespace troupe::scheduling
