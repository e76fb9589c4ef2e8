// MetricsQueries: the merge, the waiting set, the deadline.
#include "scheduling/metrics_query.h"

#include <gtest/gtest.h>

namespace troupe::scheduling {
namespace {

v1::MetricsSnapshot Snapshot(const std::string& node, double steps) {
  v1::MetricsSnapshot s;
  s.set_node_id(node);
  (*s.mutable_counters())["steps"] = static_cast<uint64_t>(steps);
  (*s.mutable_gauges())["sessions_open"] = steps;
  return s;
}

const Clock::time_point t0 = Clock::time_point() + std::chrono::hours(1);

TEST(MetricsQueryTest, MergesEveryNodeUnderItsName) {
  MetricsQueries queries;
  const uint64_t q = queries.Begin(Origin{1, "c"}, 42, Snapshot("head", 1), "", t0);
  queries.Expect(q, "a");
  queries.Expect(q, "b");
  EXPECT_FALSE(queries.Finish(q));
  EXPECT_FALSE(queries.Answer(q, Snapshot("a", 2)));
  std::optional<Reply> reply = queries.Answer(q, Snapshot("b", 3));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->client, (Origin{1, "c"}));
  EXPECT_EQ(reply->envelope.request_id(), 42u);
  const v1::MetricsSnapshot& m = reply->envelope.metrics_snapshot();
  EXPECT_EQ(m.node_id(), "head");
  EXPECT_EQ(m.counters().at("head/steps"), 1u);
  EXPECT_EQ(m.counters().at("a/steps"), 2u);
  EXPECT_EQ(m.gauges().at("b/sessions_open"), 3.0);
  EXPECT_EQ(m.gauges().at("head/route_ready"), 1.0);
  EXPECT_EQ(m.gauges().count("a/unreachable"), 0u);
  EXPECT_EQ(queries.size(), 0u);
  EXPECT_FALSE(queries.Answer(q, Snapshot("b", 3)));  // answered once
}

TEST(MetricsQueryTest, NotesGoUnderTheNodesName) {
  MetricsQueries queries;
  const uint64_t q = queries.Begin(Origin{1, "c"}, 42, Snapshot("head", 1), "", t0);
  queries.Note(q, "a", "layer_end", 10);
  queries.Note(q + 1, "a", "layer_end", 20);  // no such query: ignored
  std::optional<Reply> reply = queries.Finish(q);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->envelope.metrics_snapshot().gauges().at("a/layer_end"), 10.0);
}

TEST(MetricsQueryTest, WithNobodyToAskTheHeadAnswersAtOnce) {
  MetricsQueries queries;
  const uint64_t q = queries.Begin(Origin{1, "c"}, 42, Snapshot("head", 1), "no shard serves layer 2 of 4", t0);
  std::optional<Reply> reply = queries.Finish(q);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->envelope.metrics_snapshot().gauges().at("head/route_ready"), 0.0);
  EXPECT_EQ(reply->envelope.metrics_snapshot().route_problem(), "no shard serves layer 2 of 4");
}

TEST(MetricsQueryTest, SilentNodesReadUnreachableAfterTheDeadline) {
  MetricsQueries queries;
  const uint64_t q = queries.Begin(Origin{1, "c"}, 42, Snapshot("head", 1), "", t0);
  queries.Expect(q, "a");
  queries.Expect(q, "b");
  EXPECT_FALSE(queries.Answer(q, Snapshot("a", 2)));
  EXPECT_TRUE(queries.Tick(t0 + std::chrono::milliseconds(1999)).empty());
  std::vector<Reply> due = queries.Tick(t0 + std::chrono::seconds(2));
  ASSERT_EQ(due.size(), 1u);
  const v1::MetricsSnapshot& m = due[0].envelope.metrics_snapshot();
  EXPECT_EQ(m.gauges().at("b/unreachable"), 1.0);
  EXPECT_EQ(m.gauges().count("a/unreachable"), 0u);
  EXPECT_EQ(m.counters().at("a/steps"), 2u);
  EXPECT_TRUE(queries.Tick(t0 + std::chrono::seconds(3)).empty());
}

}  // namespace
}  // namespace troupe::scheduling
