// JobLifecycle's prefix reuse: parked and running caches as copy sources, eviction, node loss, reroutes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/scheduling/lifecycle_fixture.h"

namespace troupe::scheduling {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): the fixture's helpers
using std::chrono::minutes;
using std::chrono::seconds;

// ------------------------------------------------------------ prefix reuse

std::vector<int32_t> Tokens(int32_t from, int32_t n) {
  std::vector<int32_t> t;
  for (int32_t i = 0; i < n; ++i) t.push_back(from + i);
  return t;
}

// "park a 1001" / "close b 1001" / "open a 1002 copy 1001:20": the ToNode actions in order.
std::vector<std::string> ShardMessages(const Actions& actions) {
  std::vector<std::string> out;
  for (const ToNode& t : All<ToNode>(actions)) {
    if (t.envelope.has_session_open()) {
      const v1::SessionOpen& o = t.envelope.session_open();
      out.push_back(
          "open " + t.node_id + " " + std::to_string(o.session_id()) +
          (o.copy_from() ? " copy " + std::to_string(o.copy_from()) + ":" + std::to_string(o.copy_length()) : ""));
    } else {
      const v1::SessionClose& c = t.envelope.session_close();
      out.push_back((c.park() ? "park " : "close ") + t.node_id + " " + std::to_string(c.session_id()));
    }
  }
  return out;
}

class PrefixReuseTest : public JobLifecycleTest {
 protected:
  // Job 5 with a 20-token prompt answers 2 tokens and parks.
  void FinishOne() {
    AdmittedJob job;
    job.prompt = Tokens(100, 20);
    job.params.max_tokens = 4;
    lc->Submit(5, kClient, 1, job, t0);
    lc->Opened(kFirst + 1, "a", 0, t0);
    lc->Opened(kFirst + 1, "b", 0, t0);
    std::vector<int32_t> done = Tokens(100, 20);
    done.push_back(7);
    done.push_back(8);
    Actions out = lc->Done(kFirst + 1, done, t0);
    EXPECT_EQ(ShardMessages(out), (std::vector<std::string>{"park a 1001", "park b 1001"}));
  }
  AdmittedJob SharingPrefix(int32_t shared) {
    AdmittedJob job;
    job.prompt = Tokens(100, shared);
    for (int32_t t : Tokens(500, 5)) job.prompt.push_back(t);
    job.params.max_tokens = 4;
    return job;
  }
};

TEST_F(PrefixReuseTest, AJobSharingAPrefixCopiesItAndPrefillsTheRest) {
  Make(true);
  FinishOne();
  Actions out = lc->Submit(6, kClient, 2, SharingPrefix(18), t0);
  EXPECT_EQ(ShardMessages(out), (std::vector<std::string>{"open a 1002 copy 1001:18", "open b 1002 copy 1001:18"}));
  lc->Opened(1002, "a", 18, t0);
  out = lc->Opened(1002, "b", 12, t0);  // b kept less of it: the job reuses what both hold
  ASSERT_EQ(Kinds(out), "SessionStart Prefill");
  EXPECT_EQ(std::get<SessionStart>(out[0]).cached, 12);
  EXPECT_EQ(std::get<Prefill>(out[1]).step.first_position(), 12u);
  EXPECT_EQ(std::get<Prefill>(out[1]).step.token_count(), 23u - 12u);
  EXPECT_EQ(lc->prefill_counts().reused, 12u);
}

TEST_F(PrefixReuseTest, ShortPrefixesAndAWholeMatchLeaveTheLastTokenToRun) {
  Make(true);
  FinishOne();
  EXPECT_EQ(ShardMessages(lc->Submit(6, kClient, 2, SharingPrefix(10), t0)),
            (std::vector<std::string>{"open a 1002", "open b 1002"}))
      << "10 shared tokens are below min_reuse";
  AdmittedJob same;
  same.prompt = Tokens(100, 20);
  same.params.max_tokens = 4;
  EXPECT_EQ(ShardMessages(lc->Submit(7, kClient, 2, same, t0)),
            (std::vector<std::string>{"open a 1003 copy 1001:19", "open b 1003 copy 1001:19"}));
}

TEST_F(PrefixReuseTest, AnEvictedParkedCacheIsForgottenAndClosedElsewhere) {
  Make(true);
  FinishOne();
  v1::Error evicted;
  evicted.set_code(v1::CANCELLED);
  evicted.set_node_id("a");
  evicted.set_session_id(kFirst + 1);
  EXPECT_EQ(ShardMessages(lc->Failed(kFirst + 1, evicted, t0)), (std::vector<std::string>{"close b 1001"}));
  EXPECT_EQ(lc->reusable().size(), 0u);
  EXPECT_EQ(ShardMessages(lc->Submit(6, kClient, 2, SharingPrefix(18), t0)),
            (std::vector<std::string>{"open a 1002", "open b 1002"}));
}

TEST_F(PrefixReuseTest, ALostNodeDropsTheParkedCachesThroughIt) {
  Make(false);
  FinishOne();
  EXPECT_EQ(ShardMessages(lc->NodeDown("b", "disconnected", t0)), (std::vector<std::string>{"close a 1001"}));
  EXPECT_EQ(lc->reusable().size(), 0u);
}

TEST_F(PrefixReuseTest, ARunningJobsPromptIsASourceUntilItFails) {
  Make(true);
  AdmittedJob job;
  job.prompt = Tokens(100, 20);
  job.params.max_tokens = 4;
  lc->Submit(5, kClient, 1, job, t0);
  lc->Opened(kFirst + 1, "a", 0, t0);
  lc->Opened(kFirst + 1, "b", 0, t0);  // running: its prompt fills the caches
  EXPECT_EQ(ShardMessages(lc->Submit(6, kClient, 2, SharingPrefix(18), t0)),
            (std::vector<std::string>{"open a 1002 copy 1001:18", "open b 1002 copy 1001:18"}));
  lc->Cancel(kClient, 3, 5, t0);
  EXPECT_EQ(ShardMessages(lc->Submit(7, kClient, 2, SharingPrefix(18), t0)),
            (std::vector<std::string>{"open a 1003", "open b 1003"}))
      << "a cancelled job's caches are closed, not a source";
}

TEST_F(PrefixReuseTest, ARerouteOpensWithoutCopying) {
  Make(false, /*replica=*/true);
  FinishOne();  // parked on a and b
  Actions out = lc->Submit(6, kClient, 2, SharingPrefix(18), t0);
  EXPECT_EQ(ShardMessages(out), (std::vector<std::string>{"open a 1002 copy 1001:18", "open b 1002 copy 1001:18"}));
  out = lc->NodeDown("b", "disconnected", t0);  // while opening: over a and b2, from scratch
  EXPECT_EQ(ShardMessages(out),
            (std::vector<std::string>{"close a 1002", "open a 1003", "open b2 1003", "close a 1001"}));
  lc->Opened(1003, "a", 0, t0);
  out = lc->Opened(1003, "b2", 0, t0);
  ASSERT_EQ(Kinds(out), "SessionStart Prefill");
  EXPECT_EQ(std::get<SessionStart>(out[0]).cached, 0);
}

}  // namespace
}  // namespace troupe::scheduling
