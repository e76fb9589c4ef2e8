// JobLifecycle with kept sessions: continuing on the same shard session, errors, expiry, close, failures.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/scheduling/lifecycle_fixture.h"

namespace troupe::scheduling {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): the fixture's helpers
using std::chrono::minutes;
using std::chrono::seconds;

// ------------------------------------------------------------ kept sessions

AdmittedJob InSession(const std::string& name, bool keep, std::vector<int32_t> prompt, int64_t max_length = 0) {
  AdmittedJob job;
  job.prompt = std::move(prompt);
  job.params.max_tokens = 4;
  job.session = name;
  job.keep = keep;
  job.max_length = max_length;
  return job;
}

v1::ErrorCode RefusalCode(const Actions& out) {
  EXPECT_EQ(Kinds(out), "Reply");
  return out.empty() ? v1::ERROR_CODE_UNSPECIFIED : std::get<Reply>(out[0]).envelope.error().code();
}

class KeptSessionTest : public JobLifecycleTest {
 protected:
  // Opens kept session "s" with job 5 (prompt 10 11 12) and ends it with answer 20 21.
  void OpenAndAnswer() {
    lc->Submit(5, kClient, 1, InSession("s", true, {10, 11, 12}, 32), t0);
    lc->Opened(kFirst + 1, "a", 0, t0);
    lc->Opened(kFirst + 1, "b", 0, t0);
    Actions out = lc->Done(kFirst + 1, {10, 11, 12, 20, 21}, t0 + seconds(1));
    EXPECT_TRUE(NodeMessages(out).empty()) << "a kept session's caches stay open";
  }
};

TEST_F(KeptSessionTest, AContinuingJobPrefillsOnlyWhatIsNewOnTheSameShardSession) {
  Make(true);
  OpenAndAnswer();
  EXPECT_EQ(lc->StateOf(5), std::nullopt);
  Actions out = lc->Submit(6, kClient, 2, InSession("s", false, {30, 31}), t0 + seconds(2));
  ASSERT_EQ(Kinds(out), "Reply SessionStart Prefill") << "no SessionOpen: the shards hold its cache";
  const SessionStart& start = std::get<SessionStart>(out[1]);
  EXPECT_EQ(start.session_id, kFirst + 1);
  EXPECT_EQ(start.prompt, (std::vector<int32_t>{10, 11, 12, 20, 21, 30, 31}));
  EXPECT_EQ(start.cached, 4) << "every token but the last sampled one is in the caches";
  EXPECT_EQ(start.max_length, 32);
  const v1::Step& step = std::get<Prefill>(out[2]).step;
  EXPECT_EQ(step.first_position(), 4u);
  EXPECT_EQ(std::vector<int32_t>(step.token_ids().begin(), step.token_ids().end()), (std::vector<int32_t>{21, 30, 31}));
  EXPECT_EQ(lc->prefill_counts().reused, 4u);
  EXPECT_EQ(lc->prefill_counts().prefilled, 3u + 3u);
}

TEST_F(KeptSessionTest, AChatTurnDoesNotRepeatTheEndOfTurnTokenTheAnswerEndedWith) {
  Make(true);
  OpenAndAnswer();  // the answer ended with 21
  AdmittedJob job = InSession("s", false, {21, 40});
  job.chat_continuation = true;
  Actions out = lc->Submit(6, kClient, 2, job, t0);
  EXPECT_EQ(std::get<SessionStart>(out[1]).prompt, (std::vector<int32_t>{10, 11, 12, 20, 21, 40}));
}

TEST_F(KeptSessionTest, UnknownBusyExistingAndFullSessionsAreRefused) {
  Make(true);
  EXPECT_EQ(RefusalCode(lc->Submit(5, kClient, 1, InSession("s", false, {1}), t0)), v1::UNKNOWN_SESSION);
  OpenAndAnswer();
  EXPECT_EQ(RefusalCode(lc->Submit(6, kClient, 1, InSession("s", true, {1}), t0)), v1::SESSION_EXISTS);
  lc->Submit(7, kClient, 1, InSession("s", false, {1}), t0);
  Actions busy = lc->Submit(8, kOther, 1, InSession("s", false, {1}), t0);
  EXPECT_EQ(RefusalCode(busy), v1::SESSION_BUSY);
  EXPECT_NE(std::get<Reply>(busy[0]).envelope.error().text().find("running job 7"), std::string::npos);
  lc->Done(lc->SessionOf(7), {10, 11, 12, 20, 21, 1, 2}, t0);
  // 7 tokens in a 32-position session: a 25-token prompt leaves no room to answer.
  Actions full = lc->Submit(9, kClient, 1, InSession("s", false, std::vector<int32_t>(25, 3)), t0);
  EXPECT_EQ(RefusalCode(full), v1::SESSION_FULL);
  EXPECT_EQ(lc->Submit(9, kClient, 1, InSession("s", false, std::vector<int32_t>(24, 3)), t0).size(), 3u);
}

TEST_F(KeptSessionTest, IdleSessionsExpireAndSayWhyLater) {
  Make(true);
  OpenAndAnswer();  // last used at t0 + 1 s
  EXPECT_TRUE(NodeMessages(lc->Tick(t0 + minutes(5))).empty());
  Actions out = lc->Tick(t0 + minutes(5) + seconds(2));
  EXPECT_EQ(NodeMessages(out), (std::vector<std::string>{"close a 1001", "close b 1001"}));
  EXPECT_EQ(lc->kept().size(), 0u);
  out = lc->Submit(6, kClient, 1, InSession("s", false, {1}), t0);
  EXPECT_EQ(std::get<Reply>(out[0]).envelope.error().text(), "kept session 's' expired after 300 s idle");
}

TEST_F(KeptSessionTest, CloseFreesTheCachesAndCancelsTheRunningJob) {
  Make(true);
  OpenAndAnswer();
  lc->Submit(6, kClient, 1, InSession("s", false, {1}), t0);
  Actions out = lc->CloseKept(kOther, 77, "s", t0);
  EXPECT_EQ(NodeMessages(out), (std::vector<std::string>{"close a 1001", "close b 1001"}));
  std::vector<Reply> replies = All<Reply>(out);
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[0].envelope.error().code(), v1::CANCELLED);  // to job 6's client
  EXPECT_EQ(replies[0].client, kClient);
  EXPECT_EQ(replies[1].envelope.kept_session_closed().name(), "s");
  EXPECT_EQ(replies[1].envelope.request_id(), 77u);
  EXPECT_EQ(All<SessionDrop>(out).size(), 1u);
  EXPECT_EQ(lc->StateOf(6), std::nullopt);
  EXPECT_EQ(RefusalCode(lc->CloseKept(kOther, 78, "s", t0)), v1::UNKNOWN_SESSION);
}

TEST_F(KeptSessionTest, AFailedJobLeavesTheContextAndTheNextJobPrefillsItAllAfresh) {
  Make(true);
  OpenAndAnswer();
  lc->Submit(6, kClient, 1, InSession("s", false, {30}), t0);
  Actions out = lc->Cancel(kClient, 3, 6, t0);
  EXPECT_EQ(NodeMessages(out), (std::vector<std::string>{"close a 1001", "close b 1001"}));
  out = lc->Submit(7, kClient, 1, InSession("s", false, {31}), t0);
  EXPECT_EQ(NodeMessages(out), (std::vector<std::string>{"open a 1002", "open b 1002"}));
  lc->Opened(1002, "a", 0, t0);
  out = lc->Opened(1002, "b", 0, t0);
  ASSERT_EQ(Kinds(out), "SessionStart Prefill");
  EXPECT_EQ(std::get<SessionStart>(out[0]).prompt, (std::vector<int32_t>{10, 11, 12, 20, 21, 31}))
      << "the cancelled job's prompt is not in the context";
  EXPECT_EQ(std::get<SessionStart>(out[0]).cached, 0);
  EXPECT_EQ(std::get<Prefill>(out[1]).step.token_count(), 6u);
}

TEST_F(KeptSessionTest, AFirstJobThatFailsEndsTheSession) {
  Make(true);
  lc->Submit(5, kClient, 1, InSession("s", true, {10}), t0);
  lc->Cancel(kClient, 3, 5, t0);
  Actions out = lc->Submit(6, kClient, 1, InSession("s", false, {1}), t0);
  EXPECT_NE(std::get<Reply>(out[0]).envelope.error().text().find("its first job failed"), std::string::npos);
}

TEST_F(KeptSessionTest, ALostNodeUnbindsAnIdleSessionWhichThenReopensElsewhere) {
  Make(false, /*replica=*/true);
  lc->Submit(5, kClient, 1, InSession("s", true, {10, 11, 12}, 32), t0);
  const uint64_t sid = lc->SessionOf(5);
  for (const char* n : {"a", "b", "b2"}) lc->Opened(sid, n, 0, t0);
  lc->Done(sid, {10, 11, 12, 20, 21}, t0);
  const std::string lost = lc->kept().Find("s")->route[2].node_id();  // b or b2
  Actions out = lc->NodeDown(lost, "disconnected", t0);
  EXPECT_EQ(NodeMessages(out), (std::vector<std::string>{"close a " + std::to_string(sid)}));
  out = lc->Submit(6, kClient, 1, InSession("s", false, {30}), t0);
  EXPECT_EQ(Kinds(out), "Reply ToNode ToNode");
  EXPECT_FALSE(lc->kept().Find("s")->bound());
}

TEST_F(KeptSessionTest, AShardThatDropsAnIdleSessionsCacheUnbindsIt) {
  Make(true);
  OpenAndAnswer();
  v1::Error idle;
  idle.set_code(v1::TIMEOUT);
  idle.set_node_id("a");
  idle.set_session_id(kFirst + 1);
  Actions out = lc->Failed(kFirst + 1, idle, t0);
  EXPECT_EQ(NodeMessages(out), (std::vector<std::string>{"close b 1001"}));
  EXPECT_FALSE(lc->kept().Find("s")->bound());
}

TEST_F(KeptSessionTest, ListShowsKeptSessions) {
  Make(true);
  OpenAndAnswer();
  Actions out = lc->ListKept(kOther, 4, t0 + seconds(61));
  const v1::KeptSessionList& list = std::get<Reply>(out[0]).envelope.kept_session_list();
  ASSERT_EQ(list.sessions_size(), 1);
  EXPECT_EQ(list.sessions(0).name(), "s");
  EXPECT_EQ(list.sessions(0).context_tokens(), 5u);
  EXPECT_EQ(list.sessions(0).max_length(), 32u);
  EXPECT_EQ(list.sessions(0).jobs(), 1u);
  EXPECT_DOUBLE_EQ(list.sessions(0).idle_seconds(), 60.0);
  EXPECT_DOUBLE_EQ(list.sessions(0).expires_in_seconds(), 240.0);
  EXPECT_EQ(list.sessions(0).route_size(), 2);
}

}  // namespace
}  // namespace troupe::scheduling
