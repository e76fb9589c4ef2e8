// ConsoleDesk: a console query reaches its view or a named error, and the
// samples it keeps between ticks feed the history view and tokens/s.
#include "scheduling/console_desk.h"

#include <gtest/gtest.h>

#include "scheduling/job_book.h"
#include "scheduling/job_journal.h"
#include "tests/scheduling/lifecycle_fixture.h"

namespace troupe::scheduling {
namespace {

class ConsoleDeskTest : public testing::JobLifecycleTest {
 protected:
  void SetUp() override {
    Make(/*fixed=*/true);
    auto journal = JobJournal::Open("");  // in memory
    ASSERT_TRUE(journal.ok()) << journal.status().ToString();
    book = std::make_unique<JobBook>(BookConfig{"head", 60}, std::move(*journal));
    head.n_layers = 4;
    head.unix_ms = 102000;
  }
  Result<Json> Ask(const std::string& view, uint64_t session_id = 0, double seconds = 0) {
    return desk.View(view, session_id, seconds, head, *lc, *book, nullptr, t0, 102.0);
  }
  ConsoleDesk desk;
  ConsoleHead head;
  std::unique_ptr<JobBook> book;
};

TEST_F(ConsoleDeskTest, EveryViewAnswers) {
  for (const char* v : {"cluster", "nodes", "coverage", "jobs", "sessions", "history"}) {
    Result<Json> j = Ask(v);
    ASSERT_TRUE(j.ok()) << v << ": " << j.status().ToString();
    EXPECT_TRUE(j->is_object()) << v;
  }
}

TEST_F(ConsoleDeskTest, AnUnknownViewAndAMissingTimelineAreNamed) {
  Result<Json> bad = Ask("weather");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("no console view 'weather'"), std::string::npos);
  Result<Json> none = Ask("timeline", 4242);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("session 4242"), std::string::npos);
}

TEST_F(ConsoleDeskTest, SamplesFeedTokensPerSecondAndTheHistory) {
  desk.Sample(t0, 100.0, *lc, /*tokens_total=*/0, /*failed_total=*/0);
  desk.Sample(t0, 100.5, *lc, 10, 0);  // under a second since the last: no sample
  EXPECT_EQ(desk.tokens_per_s(), 0.0);
  desk.Sample(t0, 101.5, *lc, 30, 3);
  EXPECT_DOUBLE_EQ(desk.tokens_per_s(), 20.0);
  Result<Json> h = Ask("history", 0, 60);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  const Json& series = (*h)["series"];
  ASSERT_TRUE(series.contains("tokens_per_s")) << h->dump();
  EXPECT_DOUBLE_EQ(series["tokens_per_s"].back()[1].get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(series["errors_per_s"].back()[1].get<double>(), 2.0);
}

}  // namespace
}  // namespace troupe::scheduling
