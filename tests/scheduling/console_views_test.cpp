// ConsoleViews: the admin console's JSON (what /api/v1/... answers).
#include "scheduling/console_views.h"

#include <gtest/gtest.h>

namespace troupe::scheduling {
namespace {

using std::chrono::seconds;

ConsoleHead Head() {
  ConsoleHead h;
  h.node_id = "head";
  h.endpoint = "tcp://10.0.0.1:5600";
  h.model_name = "m.gguf";
  h.version = "0.9.0";
  h.n_layers = 30;
  h.unix_ms = 1'000'000;
  return h;
}

TEST(ConsoleViewsTest, NodesCarryTheirStateAndWhy) {
  Registry r(seconds(10));
  const auto now = ConsoleClock::now();
  r.Upsert(ShardEntry{"a", "tcp://a", 0, 10, false, now});
  r.Upsert(ShardEntry{"b", "tcp://b", 10, 20, false, now});
  r.Upsert(ShardEntry{"c", "tcp://c", 20, 30, false, now - seconds(30)});  // silent past the TTL
  r.Upsert(ShardEntry{"d", "tcp://d", 0, 10, false, now});
  r.SetTrouble("b", "its key is refused");
  r.SetDraining("d");
  r.ReportDetails("a", NodeDetails{123, "0.9.0", "cpu", 4096, 8192, 100}, now);
  std::map<std::string, LostNode> lost;
  TrackLost({{"e", ShardEntry{"e", "tcp://e", 20, 30, false, now}}}, r.All(), now - seconds(5), &lost);
  const Json nodes = NodesView(Head(), r, lost, now)["nodes"];
  ASSERT_EQ(nodes.size(), 6u);
  EXPECT_EQ(nodes[0]["id"], "head");
  EXPECT_EQ(nodes[0]["role"], "head");
  EXPECT_TRUE(nodes[0]["layers"].is_null());
  std::map<std::string, Json> by_id;
  for (const Json& n : nodes) by_id[n["id"]] = n;
  EXPECT_EQ(by_id["a"]["state"], "ok");
  EXPECT_EQ(by_id["a"]["layers"], Json::array({0, 10}));
  EXPECT_EQ(by_id["a"]["rss_bytes"], 123);
  EXPECT_EQ(by_id["a"]["cache_bytes"], 4096);
  EXPECT_EQ(by_id["a"]["cache_budget_bytes"], 8192);
  EXPECT_EQ(by_id["b"]["state"], "trouble");
  EXPECT_EQ(by_id["b"]["detail"], "its key is refused");
  EXPECT_EQ(by_id["c"]["state"], "stale");
  EXPECT_NE(by_id["c"]["detail"].get<std::string>().find("no heartbeat for"), std::string::npos);
  EXPECT_EQ(by_id["d"]["state"], "draining");
  EXPECT_EQ(by_id["e"]["state"], "lost");
  EXPECT_NE(by_id["e"]["detail"].get<std::string>().find("left the registry 5 s ago"), std::string::npos);
  // Silent for three heartbeats, though within the TTL: stale already.
  Registry quiet(seconds(10));
  quiet.Upsert(ShardEntry{"q", "tcp://q", 0, 30, false, now - seconds(4)});
  EXPECT_EQ(NodesView(Head(), quiet, {}, now)["nodes"][1]["state"], "stale");
}

TEST(ConsoleViewsTest, LostNodesAreDroppedWhenTheyComeBackOrAfterAWhile) {
  const auto now = ConsoleClock::now();
  std::map<std::string, ShardEntry> before = {{"a", ShardEntry{"a", "tcp://a", 0, 10, false, now}},
                                              {"b", ShardEntry{"b", "tcp://b", 10, 20, false, now}}};
  std::map<std::string, LostNode> lost;
  TrackLost(before, {{"a", before["a"]}}, now, &lost);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost.begin()->first, "b");
  TrackLost({{"a", before["a"]}}, before, now + seconds(1), &lost);  // b is back
  EXPECT_TRUE(lost.empty());
  TrackLost(before, {}, now, &lost);
  EXPECT_EQ(lost.size(), 2u);
  TrackLost({}, {}, now + kLostShown + seconds(1), &lost);
  EXPECT_TRUE(lost.empty());
}

TEST(ConsoleViewsTest, CoverageCountsLiveReplicasAndShowsGaps) {
  Registry r(seconds(10));
  const auto now = ConsoleClock::now();
  r.Upsert(ShardEntry{"a", "tcp://a", 0, 10, false, now});
  r.Upsert(ShardEntry{"a2", "tcp://a2", 0, 10, false, now});
  r.Upsert(ShardEntry{"c", "tcp://c", 20, 30, false, now});
  r.Upsert(ShardEntry{"d", "tcp://d", 20, 30, false, now});
  r.SetDraining("d");  // leaving: not a replica any more
  const Json c = CoverageView(r, {}, 30, now);
  EXPECT_EQ(c["n_layers"], 30);
  ASSERT_EQ(c["replicas"].size(), 30u);
  EXPECT_EQ(c["replicas"][0], 2);
  EXPECT_EQ(c["replicas"][15], 0);  // the gap
  EXPECT_EQ(c["replicas"][25], 1);
  EXPECT_EQ(c["spans"].size(), 4u);
}

TEST(ConsoleViewsTest, JobsListQueuedByPositionThenRunningThenEndedWithIdsAsStrings) {
  const auto now = ConsoleClock::now();
  std::vector<JobLifecycle::JobView> jobs(3);
  jobs[0] = {11, 1001, LiveState{v1::JOB_RUNNING, 0, 1001}, {"head", "a", "head"}, 0, 64, 5, now - seconds(2)};
  jobs[1] = {12, 1002, LiveState{v1::JOB_QUEUED, 1, 1002}, {}, 0, 64, 5, now};
  jobs[2] = {(uint64_t{1} << 63) + 5, 1003, LiveState{v1::JOB_QUEUED, 0, 1003}, {}, 3, 32, 5, now};
  std::vector<JobBook::Summary> book(4);
  book[0] = {11, false, v1::JOB_STATE_UNSPECIFIED, 7, 64, 0, 100, 0};
  book[1] = {12, false, v1::JOB_STATE_UNSPECIFIED, 0, 64, 0, 100, 0};
  book[2] = {(uint64_t{1} << 63) + 5, false, v1::JOB_STATE_UNSPECIFIED, 0, 32, 3, 100, 0};
  book[3] = {9, true, v1::JOB_ABORTED, 3, 64, 0, 90, 95};
  const Json list = JobsView(book, jobs, now, 101)["jobs"];
  ASSERT_EQ(list.size(), 4u);
  EXPECT_EQ(list[0]["job_id"], "9223372036854775813");  // 2^63 + 5: a string, as JavaScript cannot hold it
  EXPECT_EQ(list[0]["state"], "queued");
  EXPECT_EQ(list[0]["queue_position"], 0);
  EXPECT_EQ(list[1]["job_id"], "12");
  EXPECT_EQ(list[2]["state"], "running");
  EXPECT_EQ(list[2]["tokens"], 7);
  EXPECT_EQ(list[2]["route"], Json::array({"head", "a", "head"}));
  EXPECT_EQ(list[2]["session_id"], "1001");
  EXPECT_EQ(list[3]["state"], "aborted");
  EXPECT_NEAR(list[3]["age_ms"].get<double>(), 11000, 1);
  const Json sessions = SessionsView(book, jobs, now)["sessions"];
  ASSERT_EQ(sessions.size(), 1u);  // queued jobs hold no session yet
  EXPECT_EQ(sessions[0]["job_id"], "11");
  const Json cluster = ClusterView(Head(), Registry(), jobs, now);
  EXPECT_EQ(cluster["queued"], 2);
  EXPECT_EQ(cluster["sessions"], 1);
  EXPECT_EQ(cluster["route_ready"], true);
}

TEST(ConsoleViewsTest, TimelinesNameEveryHopAndTheNetwork) {
  StepTiming s;
  s.index = 4;
  s.total_ms = 10;
  s.hops = {{"head", v1::STAGE_EMBEDDING, 0.1, 0.2, 0.1},
            {"a", v1::STAGE_SHARD, 0.5, 5, 0.2},
            {"head", v1::STAGE_LM_HEAD, 0.1, 2, 0},
            {"head", v1::STAGE_SAMPLER, 0, 0.3, 0}};
  const Json t = TimelineView(1001, 11, {s});
  EXPECT_EQ(t["session_id"], "1001");
  EXPECT_EQ(t["job_id"], "11");
  ASSERT_EQ(t["steps"].size(), 1u);
  const Json& step = t["steps"][0];
  ASSERT_EQ(step["hops"].size(), 4u);
  EXPECT_EQ(step["hops"][1]["node"], "a");
  EXPECT_EQ(step["hops"][1]["stage"], "shard");
  EXPECT_EQ(step["hops"][2]["stage"], "lm_head");
  EXPECT_NEAR(step["network_ms"].get<double>(), 10 - 8.5, 1e-9);
}

TEST(ConsoleViewsTest, HistoryIsSeriesOfTimeAndValue) {
  MetricHistory h(seconds(60), std::chrono::seconds(1));
  h.Add(1000, {{"tokens_per_s", 5}});
  h.Add(2000, {{"tokens_per_s", 7}});
  const Json j = HistoryView(h, 600, 2000);
  EXPECT_EQ(j["interval_s"], 1.0);
  EXPECT_EQ(j["series"]["tokens_per_s"], Json::parse("[[1000, 5.0], [2000, 7.0]]"));
}

}  // namespace
}  // namespace troupe::scheduling
