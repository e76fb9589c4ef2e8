// JobLifecycle: one test per transition, asserting the actions it decides.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/scheduling/lifecycle_fixture.h"

namespace troupe::scheduling {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): the fixture's helpers
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

TEST_F(JobLifecycleTest, SubmitAnswersRunningAndOpensOnEveryShard) {
  Make(true);
  Actions out = lc->Submit(5, kClient, 42, Prompt(3, 8), t0);
  EXPECT_EQ(Kinds(out), "Reply ToNode ToNode");
  const Reply& reply = std::get<Reply>(out[0]);
  EXPECT_EQ(reply.client, kClient);
  EXPECT_EQ(reply.envelope.request_id(), 42u);
  EXPECT_EQ(reply.envelope.job_status().state(), v1::JOB_RUNNING);
  EXPECT_EQ(reply.envelope.job_status().session_id(), kFirst + 1);
  EXPECT_EQ(NodeMessages(out), (std::vector<std::string>{"open a 1001", "open b 1001"}));
  const v1::SessionOpen& open = std::get<ToNode>(out[1]).envelope.session_open();
  EXPECT_EQ(open.max_length(), 11u);  // prompt + max_tokens
  EXPECT_EQ(open.model_fingerprint(), "fp");
  EXPECT_EQ(lc->StateOf(5), JobState::kOpening);
  // The sampler gets the seed, every stage the route, in process.
  lc->Opened(kFirst + 1, "a", 0, t0);
  out = lc->Opened(kFirst + 1, "b", 0, t0);
  ASSERT_EQ(Kinds(out), "SessionStart Prefill");
  EXPECT_EQ(std::get<SessionStart>(out[0]).params.seed, Mix64(kFirst + 1));
  const v1::Step& prefill = std::get<Prefill>(out[1]).step;
  ASSERT_EQ(prefill.rest_of_route_size(), 5);  // embedding, a, b, LM head, sampler
  EXPECT_EQ(prefill.rest_of_route(0).stage(), v1::STAGE_EMBEDDING);
  EXPECT_EQ(prefill.rest_of_route(2).node_id(), "b");
  EXPECT_EQ(prefill.rest_of_route(4).stage(), v1::STAGE_SAMPLER);
}

TEST_F(JobLifecycleTest, MaxLengthIsCappedByTheContextAndAGivenSeedIsKept) {
  Make(true);
  AdmittedJob job = Prompt(10, 100);
  job.seed_given = true;
  job.params.seed = 99;
  Actions out = lc->Submit(5, kClient, 42, job, t0);
  const v1::SessionOpen& open = std::get<ToNode>(out[1]).envelope.session_open();
  EXPECT_EQ(open.max_length(), 64u);
  lc->Opened(kFirst + 1, "a", 0, t0);
  out = lc->Opened(kFirst + 1, "b", 0, t0);
  ASSERT_EQ(Kinds(out), "SessionStart Prefill");
  EXPECT_EQ(std::get<SessionStart>(out[0]).params.seed, 99u);
}

TEST_F(JobLifecycleTest, SubmitWithoutARouteIsNoRoute) {
  Make(true);
  lc->registry().Remove("b");
  Actions out = lc->Submit(5, kClient, 42, Prompt(), t0);
  ASSERT_EQ(Kinds(out), "Reply");
  const v1::Error& e = std::get<Reply>(out[0]).envelope.error();
  EXPECT_EQ(e.code(), v1::NO_ROUTE);
  EXPECT_EQ(e.job_id(), 5u);
  EXPECT_NE(e.text().find("layer 2"), std::string::npos) << e.text();
  EXPECT_EQ(lc->StateOf(5), std::nullopt);
}

TEST_F(JobLifecycleTest, RefusalSaysNoRouteBeforeAnythingIsAccepted) {
  Make(true);
  EXPECT_EQ(lc->Refusal(t0), std::nullopt);
  lc->registry().Remove("b");  // nothing serves layers 2..3
  const std::optional<v1::Error> no = lc->Refusal(t0);
  ASSERT_TRUE(no.has_value());
  EXPECT_EQ(no->code(), v1::NO_ROUTE);
  EXPECT_FALSE(no->has_job_id());
}

TEST_F(JobLifecycleTest, AllOpenedStartsTheSamplerAndThePrefill) {
  Make(true);
  lc->Submit(5, kClient, 42, Prompt(3), t0);
  const uint64_t sid = kFirst + 1;
  EXPECT_TRUE(lc->Opened(sid, "a", 0, t0 + seconds(1)).empty());
  EXPECT_TRUE(lc->Opened(sid + 7, "b", 0, t0).empty());  // another session
  Actions out = lc->Opened(sid, "b", 0, t0 + seconds(2));
  ASSERT_EQ(Kinds(out), "SessionStart Prefill");
  const SessionStart& start = std::get<SessionStart>(out[0]);
  EXPECT_EQ(start.session_id, sid);
  EXPECT_EQ(start.job_id, 5u);
  EXPECT_EQ(start.client, kClient);
  EXPECT_EQ(start.request_id, 42u);
  EXPECT_EQ(start.prompt, (std::vector<int32_t>{10, 11, 12}));
  EXPECT_EQ(start.max_length, 11);
  EXPECT_EQ(start.submitted, t0);
  EXPECT_EQ(start.opened, t0 + seconds(2));
  const v1::Step& step = std::get<Prefill>(out[1]).step;
  EXPECT_EQ(step.session_id(), sid);
  EXPECT_EQ(step.token_count(), 3u);
  EXPECT_EQ(step.rest_of_route_size(), 5);
  EXPECT_EQ(lc->StateOf(5), JobState::kRunning);
  EXPECT_TRUE(lc->Opened(sid, "b", 0, t0).empty());  // a repeat changes nothing
}

TEST_F(JobLifecycleTest, RetryableCacheFullWhileOpeningQueues) {
  Make(true);
  lc->Submit(5, kClient, 42, Prompt(), t0);
  const uint64_t sid = kFirst + 1;
  lc->Opened(sid, "b", 0, t0);
  Actions out = lc->Failed(sid, CacheFull("a", sid), t0);
  EXPECT_EQ(Kinds(out), "ToNode ToNode Log Reply");
  EXPECT_EQ(NodeMessages(out), (std::vector<std::string>{"close a 1001", "close b 1001"}));
  const v1::JobStatus& js = std::get<Reply>(out[3]).envelope.job_status();
  EXPECT_EQ(js.state(), v1::JOB_QUEUED);
  EXPECT_EQ(js.queue_position(), 0u);  // no older queued job
  EXPECT_EQ(js.job_id(), 5u);
  EXPECT_EQ(lc->StateOf(5), JobState::kQueued);
  EXPECT_EQ(lc->jobs_queued_total(), 1u);
  // Another shard's refusal of the same round and a late SessionOpened: nothing.
  EXPECT_TRUE(lc->Failed(sid, CacheFull("b", sid), t0).empty());
  EXPECT_TRUE(lc->Opened(sid, "a", 0, t0).empty());
  EXPECT_EQ(lc->StateOf(5), JobState::kQueued);
}

TEST_F(JobLifecycleTest, CacheFullThatIsNotRetryableFails) {
  Make(true);
  lc->Submit(5, kClient, 42, Prompt(), t0);
  Actions out = lc->Failed(kFirst + 1, CacheFull("a", kFirst + 1, false), t0);
  EXPECT_EQ(Kinds(out), "Reply ToNode ToNode");
  EXPECT_EQ(std::get<Reply>(out[0]).envelope.error().code(), v1::CACHE_FULL);
  EXPECT_EQ(NodeMessages(out), (std::vector<std::string>{"close a 1001", "close b 1001"}));
  EXPECT_EQ(lc->StateOf(5), std::nullopt);
}

TEST_F(JobLifecycleTest, ACloseDispatchesTheOldestQueuedJobOneAtATime) {
  Make(true);
  const uint64_t running = Running(1);
  Queued(2, t0 + seconds(1));
  Queued(3, t0 + seconds(2));
  Actions out = lc->Done(running, {}, t0 + seconds(3));
  // Job 1 closes; job 2 (the oldest) tries as session 1004; job 3 waits.
  EXPECT_EQ(NodeMessages(out),
            (std::vector<std::string>{"close a 1001", "close b 1001", "open a 1004", "open b 1004"}));
  EXPECT_EQ(lc->StateOf(1), std::nullopt);
  EXPECT_EQ(lc->StateOf(2), JobState::kOpening);
  EXPECT_EQ(lc->SessionOf(2), 1004u);
  EXPECT_EQ(lc->StateOf(3), JobState::kQueued);
  EXPECT_TRUE(NodeMessages(lc->Tick(t0 + seconds(4))).empty());  // job 2 is trying
  lc->Opened(1004, "a", 0, t0 + seconds(4));
  lc->Opened(1004, "b", 0, t0 + seconds(4));
  EXPECT_EQ(lc->StateOf(2), JobState::kRunning);
  EXPECT_EQ(NodeMessages(lc->Tick(t0 + seconds(5))), (std::vector<std::string>{"open a 1005", "open b 1005"}));
  EXPECT_EQ(lc->StateOf(3), JobState::kOpening);
}

TEST_F(JobLifecycleTest, ATickDispatchesAQueuedJobAndNoticesComeEveryTenSeconds) {
  Make(true);
  Queued(5, t0);
  EXPECT_EQ(NodeMessages(lc->Tick(t0 + seconds(1))), (std::vector<std::string>{"open a 1002", "open b 1002"}));
  // Refused again within 10 s of the last notice: closes, no notice.
  EXPECT_EQ(Kinds(lc->Failed(1002, CacheFull("b", 1002), t0 + seconds(2))), "ToNode ToNode");
  lc->Tick(t0 + seconds(3));
  Actions out = lc->Failed(1003, CacheFull("b", 1003), t0 + seconds(11));
  EXPECT_EQ(Kinds(out), "ToNode ToNode Reply");
  EXPECT_EQ(std::get<Reply>(out[2]).envelope.job_status().state(), v1::JOB_QUEUED);
  EXPECT_EQ(lc->jobs_queued_total(), 1u);  // counted once
}

TEST_F(JobLifecycleTest, QueuedTooLongFailsCacheFull) {
  Make(true);
  Running(1);
  Queued(5, t0);
  lc->Tick(t0 + seconds(9));  // dispatch: job 5 tries again and is refused again
  lc->Failed(1003, CacheFull("a", 1003), t0 + seconds(9));
  Actions out = lc->Tick(t0 + minutes(10) + seconds(1));
  ASSERT_EQ(Kinds(out), "Reply ToNode ToNode");
  const v1::Error& e = std::get<Reply>(out[0]).envelope.error();
  EXPECT_EQ(e.code(), v1::CACHE_FULL);
  EXPECT_EQ(e.job_id(), 5u);
  EXPECT_NE(e.text().find("waited 600 s"), std::string::npos) << e.text();
  EXPECT_EQ(lc->StateOf(5), std::nullopt);
  EXPECT_EQ(lc->StateOf(1), JobState::kRunning);
}

TEST_F(JobLifecycleTest, OpenTimeoutFailsNamingTheSilentNodes) {
  Make(true);
  lc->Submit(5, kClient, 42, Prompt(), t0);
  lc->Opened(kFirst + 1, "a", 0, t0);
  EXPECT_TRUE(lc->Tick(t0 + seconds(30)).empty());
  Actions out = lc->Tick(t0 + seconds(31));
  ASSERT_EQ(Kinds(out), "Reply ToNode ToNode");
  const v1::Error& e = std::get<Reply>(out[0]).envelope.error();
  EXPECT_EQ(e.code(), v1::TIMEOUT);
  EXPECT_EQ(e.text(), "no answer to SessionOpen from b");
  EXPECT_EQ(e.node_id(), "head");
  EXPECT_EQ(lc->StateOf(5), std::nullopt);
}

TEST_F(JobLifecycleTest, NodeDownWhileRunningReroutesAndResumes) {
  Make(false, /*replica=*/true);
  const uint64_t sid = Running(5);  // over a and b (b2 is b's replica)
  Actions out = lc->NodeDown("b", "disconnected", t0 + seconds(1));
  EXPECT_EQ(Kinds(out), "ToNode Log SessionMove ToNode ToNode");
  EXPECT_EQ(NodeMessages(out), (std::vector<std::string>{"close a 1001", "open a 1002", "open b2 1002"}));
  const SessionMove& move = std::get<SessionMove>(out[2]);
  EXPECT_EQ(move.old_id, sid);
  EXPECT_EQ(move.new_id, 1002u);
  EXPECT_EQ(move.route[2].node_id(), "b2");
  EXPECT_EQ(lc->StateOf(5), JobState::kRerouting);
  EXPECT_EQ(lc->registry().Find("b"), nullptr);  // until it announces again
  EXPECT_TRUE(lc->Opened(1002, "a", 0, t0).empty());
  out = lc->Opened(1002, "b2", 0, t0);
  ASSERT_EQ(Kinds(out), "SessionResume");
  EXPECT_EQ(std::get<SessionResume>(out[0]).session_id, 1002u);
  EXPECT_EQ(lc->StateOf(5), JobState::kRunning);
  EXPECT_EQ(lc->Live(5)->session_id, 1002u);
}

TEST_F(JobLifecycleTest, NodeDownWhileOpeningReopensWithoutTheSampler) {
  Make(false, /*replica=*/true);
  lc->Submit(5, kClient, 42, Prompt(), t0);
  Actions out = lc->NodeDown("b", "disconnected", t0);
  EXPECT_EQ(Kinds(out), "ToNode Log ToNode ToNode");  // no SessionMove: the sampler has nothing
  EXPECT_EQ(lc->StateOf(5), JobState::kOpening);
  lc->Opened(1002, "a", 0, t0);
  EXPECT_EQ(Kinds(lc->Opened(1002, "b2", 0, t0)), "SessionStart Prefill");
}

TEST_F(JobLifecycleTest, NodeDownWithoutAReplicaIsUnavailable) {
  Make(false);
  const uint64_t sid = Running(5);
  Actions out = lc->NodeDown("b", "disconnected", t0);
  EXPECT_EQ(Kinds(out), "ToNode Log Reply SessionDrop ToNode ToNode");
  const v1::Error& e = std::get<Reply>(out[2]).envelope.error();
  EXPECT_EQ(e.code(), v1::UNAVAILABLE);
  EXPECT_EQ(e.session_id(), sid);
  EXPECT_EQ(e.text(),
            "node 'b' on the session's route disconnected and no other node can take its place: "
            "no shard serves layer 2 of 4");
  EXPECT_EQ(std::get<SessionDrop>(out[3]).session_id, sid);
  EXPECT_EQ(lc->StateOf(5), std::nullopt);
}

TEST_F(JobLifecycleTest, TheFifthRouteChangeFails) {
  Make(false, /*replica=*/true);
  Running(5);  // over b
  for (int i = 0; i < 4; ++i) {
    // The replica in use dies, the job moves to the other one, the dead one comes back.
    const std::string down = i % 2 == 0 ? "b" : "b2";
    Actions out = lc->NodeDown(down, "disconnected", t0);
    ASSERT_EQ(All<SessionMove>(out).size(), 1u) << i;
    lc->registry().Upsert(ShardEntry{down, "tcp://" + down, 2, 4, false, t0});
    const uint64_t sid = lc->SessionOf(5);
    for (const char* n : {"a", "b", "b2"}) lc->Opened(sid, n, 0, t0);
    ASSERT_EQ(lc->StateOf(5), JobState::kRunning);
  }
  Actions out = lc->NodeDown("b", "disconnected", t0);
  ASSERT_EQ(Kinds(out).substr(0, 17), "Reply SessionDrop");
  const v1::Error& e = std::get<Reply>(out[0]).envelope.error();
  EXPECT_EQ(e.code(), v1::UNAVAILABLE);
  EXPECT_NE(e.text().find("(4 route changes already)"), std::string::npos) << e.text();
  EXPECT_EQ(lc->StateOf(5), std::nullopt);
}

TEST_F(JobLifecycleTest, FixedNodesAreNeverTakenDown) {
  Make(true);
  Running(5);
  EXPECT_TRUE(lc->NodeDown("b", "disconnected", t0).empty());
  EXPECT_NE(lc->registry().Find("b"), nullptr);
  EXPECT_TRUE(lc->NodeDown("stranger", "disconnected", t0).empty());
  EXPECT_EQ(lc->StateOf(5), JobState::kRunning);
}

TEST_F(JobLifecycleTest, ATroubledFixedNodeIsLeftForAReplicaAndWithoutOneNamed) {
  Make(true, /*replica=*/true);
  Running(5);  // over a and b
  lc->registry().SetTrouble("b", "node 'b' at tcp://b refused this node's CURVE key");
  Actions out = lc->NodeTroubled("b", "is unusable: node 'b' at tcp://b refused this node's CURVE key", t0);
  ASSERT_EQ(All<SessionMove>(out).size(), 1u);
  EXPECT_EQ(All<SessionMove>(out)[0].route[2].node_id(), "b2");
  EXPECT_NE(lc->registry().Find("b"), nullptr);  // a config node stays, out of routes while troubled
  // Without the replica a new job is refused naming the trouble, at once.
  lc->registry().SetTrouble("b2", "handshake with node 'b2' at tcp://b2 failed 3 times");
  std::optional<v1::Error> refusal = lc->Refusal(t0);
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ(refusal->code(), v1::NO_ROUTE);
  EXPECT_NE(refusal->text().find("refused this node's CURVE key"), std::string::npos) << refusal->text();
  EXPECT_NE(refusal->text().find("failed 3 times"), std::string::npos) << refusal->text();
}

TEST_F(JobLifecycleTest, DrainMovesRunningJobsToAReplicaClosingTheirSessionOnTheDrainingNodeToo) {
  Make(true, /*replica=*/true);
  const uint64_t sid = Running(5);  // over a and b
  DrainCounts counts;
  Actions out = lc->Drain("b", t0 + seconds(1), &counts);
  EXPECT_EQ(counts.moved, 1u);
  EXPECT_EQ(counts.staying, 0u);
  // Unlike a node loss, the leaving node is alive: its session is closed too.
  EXPECT_EQ(NodeMessages(out),
            (std::vector<std::string>{"close a 1001", "close b 1001", "open a 1002", "open b2 1002"}));
  const std::vector<SessionMove> moves = All<SessionMove>(out);
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_EQ(moves[0].old_id, sid);
  EXPECT_EQ(moves[0].route[2].node_id(), "b2");
  const std::vector<Log> logs = All<Log>(out);
  ASSERT_FALSE(logs.empty());
  EXPECT_NE(logs.back().text.find("node 'b' is draining: 1 job(s) moved to other nodes, 0 finishing on it"),
            std::string::npos)
      << logs.back().text;
  // No new session goes to it, and it is out of the coverage a joiner reads.
  EXPECT_TRUE(lc->registry().Find("b")->draining);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(lc->registry().Route(4, t0)->back().node_id, "b2");
  EXPECT_EQ(lc->registry().Coverage(4, t0), (std::vector<uint32_t>{1, 1, 1, 1}));
  // Once gone it leaves the registry, config node or not, until it announces again.
  lc->NodeDown("b", "disconnected", t0 + seconds(2));
  EXPECT_EQ(lc->registry().Find("b"), nullptr);
}

TEST_F(JobLifecycleTest, DrainWithoutAReplicaLetsRunningJobsFinishWhereTheyAre) {
  Make(false);
  Running(5);
  DrainCounts counts;
  Actions out = lc->Drain("b", t0, &counts);
  EXPECT_EQ(counts.moved, 0u);
  EXPECT_EQ(counts.staying, 1u);
  EXPECT_EQ(Kinds(out), "Log");
  EXPECT_NE(std::get<Log>(out[0]).text.find("(no other node serves its layers now); it leaves when they are done"),
            std::string::npos);
  EXPECT_EQ(lc->StateOf(5), JobState::kRunning);
  // A new job has no route meanwhile, and the refusal says why.
  std::optional<v1::Error> refusal = lc->Refusal(t0);
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ(refusal->code(), v1::NO_ROUTE);
  EXPECT_NE(refusal->text().find("shard 'b' (layers 2-4) is draining"), std::string::npos) << refusal->text();
  // An unknown node: nothing happens.
  EXPECT_TRUE(lc->Drain("stranger", t0, &counts).empty());
  EXPECT_EQ(counts.moved + counts.staying, 0u);
}

TEST_F(JobLifecycleTest, ADrainingConfigNodeExpiresLikeALearnedOne) {
  Make(true, /*replica=*/true);
  lc->Drain("b", t0, nullptr);
  lc->registry().Touch("a", t0 + seconds(11));
  lc->registry().Touch("b2", t0 + seconds(11));
  lc->Tick(t0 + seconds(12));  // b silent past the ttl: gone
  EXPECT_EQ(lc->registry().Find("b"), nullptr);
  EXPECT_NE(lc->registry().Find("b2"), nullptr);  // a fixed node that is not draining never expires
}

// The head runs no LM head itself (head_stages: [embedding]); nodes "l1"
// (and "l2") run it for the ring.
void MakeWithLmHeadNodes(std::unique_ptr<JobLifecycle>* lc, int nodes, Clock::time_point t0) {
  LifecycleConfig c;
  c.node_id = "head";
  c.node_endpoint = "tcp://head";
  c.fingerprint = "fp";
  c.n_layers = 4;
  c.max_positions = 64;
  c.first_session_id = 1000;
  c.local_lm_head = false;
  Registry r;
  r.Upsert(ShardEntry{"a", "tcp://a", 0, 4, false, t0});
  for (int i = 1; i <= nodes; ++i) {
    ShardEntry e{"l" + std::to_string(i), "tcp://l" + std::to_string(i), 0, 0, false, t0};
    e.stages = {v1::STAGE_LM_HEAD};
    e.public_key = "KL";
    r.Upsert(e);
  }
  *lc = std::make_unique<JobLifecycle>(c, std::move(r));
}

TEST_F(JobLifecycleTest, AStageTheHeadDoesNotRunGoesToAStageNodeOrNamesItsAbsence) {
  MakeWithLmHeadNodes(&lc, 0, t0);
  std::optional<v1::Error> refusal = lc->Refusal(t0);
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ(refusal->code(), v1::NO_ROUTE);
  EXPECT_NE(refusal->text().find("no node runs the LM head (the head does not: head_stages)"), std::string::npos)
      << refusal->text();
}

TEST_F(JobLifecycleTest, ALostLmHeadNodeIsReplacedByAnotherMidAnswer) {
  MakeWithLmHeadNodes(&lc, 2, t0);
  lc->Submit(5, kClient, 42, Prompt(), t0);
  Actions out = lc->Opened(lc->SessionOf(5), "a", 0, t0);
  ASSERT_EQ(Kinds(out), "SessionStart Prefill");
  const v1::Step& prefill = std::get<Prefill>(out[1]).step;
  ASSERT_EQ(prefill.rest_of_route_size(), 4);  // embedding (head), a, LM head (a stage node), sampler (head)
  EXPECT_EQ(prefill.rest_of_route(0).node_id(), "head");
  const std::string used = prefill.rest_of_route(2).node_id();
  ASSERT_TRUE(used == "l1" || used == "l2") << used;
  EXPECT_EQ(prefill.rest_of_route(2).stage(), v1::STAGE_LM_HEAD);
  EXPECT_EQ(prefill.rest_of_route(2).public_key(), "KL");
  EXPECT_EQ(prefill.rest_of_route(3).node_id(), "head");
  // It dies mid-answer: the other LM head node takes its place.
  out = lc->NodeDown(used, "disconnected", t0 + seconds(1));
  const std::vector<SessionMove> moves = All<SessionMove>(out);
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_EQ(moves[0].route[2].node_id(), used == "l1" ? "l2" : "l1");
  // And without any, the job fails naming what is missing.
  out = lc->NodeDown(used == "l1" ? "l2" : "l1", "disconnected", t0 + seconds(2));
  const std::vector<Reply> replies = All<Reply>(out);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_NE(replies[0].envelope.error().text().find("no node runs the LM head"), std::string::npos)
      << replies[0].envelope.error().text();
}

TEST_F(JobLifecycleTest, SilentNodesGoDownOnATick) {
  Make(false, /*replica=*/true);
  Running(5);
  lc->registry().Touch("a", t0 + seconds(9));
  lc->registry().Touch("b2", t0 + seconds(9));
  Actions out = lc->Tick(t0 + seconds(11));  // b silent past the 10 s ttl
  const std::vector<Log> logs = All<Log>(out);
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].text.find("stopped answering (no heartbeat for 10 s)"), std::string::npos) << logs[0].text;
  EXPECT_EQ(lc->StateOf(5), JobState::kRerouting);
}

TEST_F(JobLifecycleTest, QueuedJobsAreNotReroutedWhenANodeDies) {
  Make(false, /*replica=*/true);
  Queued(5, t0);
  Actions out = lc->NodeDown("b", "disconnected", t0);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(lc->StateOf(5), JobState::kQueued);
}

TEST_F(JobLifecycleTest, ARefusedRerouteQueuesAndKeepsResumeSemantics) {
  Make(false, /*replica=*/true);
  Running(5);
  lc->NodeDown("b", "disconnected", t0);  // session 1002 over a, b2
  lc->Failed(1002, CacheFull("b2", 1002), t0);
  EXPECT_EQ(lc->StateOf(5), JobState::kQueued);
  Actions out = lc->Tick(t0 + seconds(1));  // its turn: session 1003
  ASSERT_EQ(All<SessionMove>(out).size(), 1u);
  EXPECT_EQ(All<SessionMove>(out)[0].old_id, 1002u);
  EXPECT_EQ(All<SessionMove>(out)[0].new_id, 1003u);
  EXPECT_EQ(lc->StateOf(5), JobState::kRerouting);
  lc->Opened(1003, "a", 0, t0);
  EXPECT_EQ(Kinds(lc->Opened(1003, "b2", 0, t0)), "SessionResume");
}

TEST_F(JobLifecycleTest, CancelEndsTheJobAndDropsTheSamplersCopy) {
  Make(true);
  const uint64_t sid = Running(5);
  Actions out = lc->Cancel(kOther, 77, 5, t0);
  EXPECT_EQ(Kinds(out), "Reply SessionDrop ToNode ToNode");
  const Reply& reply = std::get<Reply>(out[0]);
  EXPECT_EQ(reply.client, kClient);  // the job's client hears it
  EXPECT_EQ(reply.envelope.request_id(), 55u);
  EXPECT_EQ(reply.envelope.error().code(), v1::CANCELLED);
  EXPECT_EQ(reply.envelope.error().text(), "job 5 was cancelled");
  EXPECT_EQ(NodeMessages(out), (std::vector<std::string>{"close a 1001", "close b 1001"}));
  EXPECT_EQ(std::get<SessionDrop>(out[1]).session_id, sid);
  EXPECT_EQ(lc->StateOf(5), std::nullopt);
}

TEST_F(JobLifecycleTest, CancelWhileOpeningDropsNothingAtTheSampler) {
  Make(true);
  lc->Submit(5, kClient, 42, Prompt(), t0);
  EXPECT_EQ(Kinds(lc->Cancel(kClient, 77, 5, t0)), "Reply ToNode ToNode");
}

TEST_F(JobLifecycleTest, UnknownJobsAreUnknown) {
  Make(true);
  const Actions out = lc->Cancel(kOther, 77, 404, t0);
  ASSERT_EQ(Kinds(out), "Reply");
  const Reply& reply = std::get<Reply>(out[0]);
  EXPECT_EQ(reply.client, kOther);
  EXPECT_EQ(reply.envelope.request_id(), 77u);
  EXPECT_EQ(reply.envelope.error().code(), v1::UNKNOWN_JOB);
  EXPECT_EQ(reply.envelope.error().text(), "no job 404");
  EXPECT_EQ(lc->Live(404), std::nullopt);
}

TEST_F(JobLifecycleTest, DoneFinishesAndCloses) {
  Make(true);
  const uint64_t sid = Running(5);
  Actions out = lc->Done(sid, {}, t0);
  EXPECT_EQ(NodeMessages(out), (std::vector<std::string>{"close a 1001", "close b 1001"}));
  EXPECT_EQ(Kinds(out), "ToNode ToNode");  // Finish came from the sampler
  EXPECT_EQ(lc->StateOf(5), std::nullopt);
  EXPECT_EQ(lc->Live(5), std::nullopt);
  EXPECT_TRUE(lc->Done(sid, {}, t0).empty());
}

TEST_F(JobLifecycleTest, StatusIsQueuedOrRunning) {
  Make(true);
  Running(5);
  Queued(6, t0);
  lc->Submit(7, kClient, 1, Prompt(), t0);  // opening reads as running
  auto state = [&](uint64_t job) { return lc->Live(job)->state; };
  EXPECT_EQ(state(5), v1::JOB_RUNNING);
  EXPECT_EQ(state(6), v1::JOB_QUEUED);
  EXPECT_EQ(state(7), v1::JOB_RUNNING);
}

TEST_F(JobLifecycleTest, QueuePositionCountsOlderQueuedJobs) {
  Make(true);
  Running(5);
  Queued(6, t0);
  Queued(7, t0 + seconds(1));
  const LiveState js = *lc->Live(7);
  EXPECT_EQ(js.state, v1::JOB_QUEUED);
  EXPECT_EQ(js.queue_position, 1u);  // job 6 goes first
  EXPECT_EQ(lc->Live(5)->queue_position, 0u);
}

TEST_F(JobLifecycleTest, HigherPrioritiesGoFirstInTheQueue) {
  Make(true);
  Running(5);
  Queued(6, t0);
  // Job 7 queues later but with a higher priority: it goes first.
  AdmittedJob urgent = Prompt();
  urgent.priority = 3;
  lc->Submit(7, kClient, 1, std::move(urgent), t0 + seconds(1));
  lc->Failed(lc->SessionOf(7), CacheFull("a", lc->SessionOf(7)), t0 + seconds(1));
  EXPECT_EQ(lc->Live(7)->queue_position, 0u);
  EXPECT_EQ(lc->Live(6)->queue_position, 1u);
  // Cache frees: the next try goes to job 7.
  lc->Done(lc->SessionOf(5), {}, t0 + seconds(2));
  EXPECT_EQ(lc->StateOf(7), JobState::kOpening);
  EXPECT_EQ(lc->StateOf(6), JobState::kQueued);
}

TEST_F(JobLifecycleTest, AFailedSendFailsTheJob) {
  Make(true);
  lc->Submit(5, kClient, 42, Prompt(), t0);
  Actions out = lc->SendFailed(kFirst + 1, v1::UNAVAILABLE, "cannot reach shard 'a': no key", t0);
  EXPECT_EQ(Kinds(out), "Reply ToNode ToNode");
  EXPECT_EQ(std::get<Reply>(out[0]).envelope.error().node_id(), "head");
  EXPECT_FALSE(lc->Has(kFirst + 1));
}

TEST_F(JobLifecycleTest, AFullQueueAnswersBusyWithItsDepthAndARetryHint) {
  LifecycleConfig c;
  c.node_id = "head";
  c.n_layers = 4;
  c.max_positions = 64;
  c.first_session_id = kFirst;
  c.max_queued = 1;
  Registry r;
  r.Upsert(ShardEntry{"a", "tcp://a", 0, 4, true, t0});
  lc = std::make_unique<JobLifecycle>(c, std::move(r));
  Queued(5, t0);  // the queue is full
  const std::optional<v1::Error> busy = lc->Refusal(t0);
  ASSERT_TRUE(busy.has_value()) << "refused before it is accepted";
  EXPECT_EQ(busy->code(), v1::BUSY);
  EXPECT_TRUE(busy->retryable());
  EXPECT_EQ(busy->queue_depth(), 1u);
  EXPECT_EQ(busy->retry_after_seconds(), 5.0);
  EXPECT_FALSE(busy->has_session_id());
  // The queued job keeps its place; once it runs, there is room again.
  EXPECT_EQ(lc->StateOf(5), JobState::kQueued);
  lc->Tick(t0 + seconds(1));  // its next try
  EXPECT_TRUE(lc->Refusal(t0).has_value()) << "a job opening for the first time waits too";
  lc->Opened(lc->SessionOf(5), "a", 0, t0);
  EXPECT_EQ(lc->StateOf(5), JobState::kRunning);
  EXPECT_EQ(lc->Refusal(t0), std::nullopt);
  EXPECT_EQ(Kinds(lc->Submit(7, kOther, 67, Prompt(), t0)), "Reply ToNode");
  // An accepted job joins the queue even past the bound: it keeps its turn.
  lc->Failed(lc->SessionOf(7), CacheFull("a", lc->SessionOf(7)), t0);
  lc->Submit(8, kOther, 68, Prompt(), t0);
  lc->Failed(lc->SessionOf(8), CacheFull("a", lc->SessionOf(8)), t0);
  EXPECT_EQ(lc->StateOf(7), JobState::kQueued);
  EXPECT_EQ(lc->StateOf(8), JobState::kQueued);
  EXPECT_EQ(lc->Refusal(t0)->queue_depth(), 2u);
}

TEST_F(JobLifecycleTest, ClosingRefusesNewJobsLetsRunningOnesFinishAndGivesQueuedOnesNoTurn) {
  Make(true);
  const uint64_t running = Running(1);
  Queued(2, t0 + seconds(1));
  EXPECT_EQ(lc->Refusal(t0), std::nullopt);
  EXPECT_EQ(lc->Active(), 1u);
  lc->BeginClosing();
  EXPECT_TRUE(lc->closing());
  const std::optional<v1::Error> no = lc->Refusal(t0 + seconds(2));
  ASSERT_TRUE(no.has_value());
  EXPECT_EQ(no->code(), v1::UNAVAILABLE);
  EXPECT_NE(no->text().find("shutting down"), std::string::npos) << no->text();
  EXPECT_TRUE(no->retryable());
  EXPECT_FALSE(no->has_session_id());
  // The running job's end frees cache, yet the queued job gets no try, on
  // close or tick: it waits in the journal for the head's next start.
  Actions out = lc->Done(running, {}, t0 + seconds(3));
  EXPECT_EQ(NodeMessages(out), (std::vector<std::string>{"close a 1001", "close b 1001"}));
  EXPECT_TRUE(NodeMessages(lc->Tick(t0 + seconds(4))).empty());
  EXPECT_EQ(lc->StateOf(2), JobState::kQueued);
  EXPECT_EQ(lc->Active(), 0u);
  EXPECT_EQ(lc->queued(), 1u);
}

TEST_F(JobLifecycleTest, ShutdownAnswersEveryJob) {
  Make(true);
  Running(5);
  Queued(6, t0);
  Actions out = lc->Shutdown();
  ASSERT_EQ(Kinds(out), "Reply Reply");
  EXPECT_EQ(std::get<Reply>(out[0]).envelope.error().code(), v1::UNAVAILABLE);
  EXPECT_EQ(lc->size(), 0u);
}

}  // namespace
}  // namespace troupe::scheduling
