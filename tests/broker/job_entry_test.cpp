#include "broker/job_entry.h"

#include <gtest/gtest.h>

namespace troupe::broker {
namespace {

StreamEntry Entry(const std::string& id, EntryFields fields) {
  StreamEntry e;
  e.id = id;
  e.fields = std::move(fields);
  return e;
}

TEST(JobEntry, JsonOfJobSubmitWithDefaults) {
  JobEntry j = ParseJobEntry(
      "troupe:jobs", Entry("17-0", {{"job", R"({"prompt": "Hi", "sampling": {"max_tokens": 5, "seed": "7"}})"}}));
  ASSERT_TRUE(j.problem.ok()) << j.problem.ToString();
  EXPECT_EQ(j.entry_id, "17-0");
  EXPECT_EQ(j.reply, "troupe:reply:17-0");
  EXPECT_EQ(j.job.prompt(), "Hi");
  EXPECT_EQ(j.job.sampling().max_tokens(), 5u);
  EXPECT_TRUE(j.job.stream());
  EXPECT_EQ(j.job_id, DeriveJobId("troupe:jobs", "17-0"));
  EXPECT_EQ(j.job.job_id(), j.job_id);
  EXPECT_EQ(j.job.sampling().seed(), 7u);  // the entry's seed stays
}

TEST(JobEntry, AJobWithoutASeedGetsItsJobId) {
  JobEntry j =
      ParseJobEntry("troupe:jobs", Entry("18-0", {{"job", R"({"prompt": "Hi", "sampling": {"temperature": 0.8}})"}}));
  ASSERT_TRUE(j.problem.ok()) << j.problem.ToString();
  EXPECT_TRUE(j.job.sampling().has_seed());
  EXPECT_EQ(j.job.sampling().seed(), j.job_id);
}

TEST(JobEntry, CamelCaseNamesAndAReplyStream) {
  JobEntry j = ParseJobEntry("s", Entry("1-1", {{"job", R"({"chat": [{"role": "user", "content": "Yo"}],
                                                           "sampling": {"maxTokens": 3}, "jobId": "42"})"},
                                                {"reply", "answers"}}));
  ASSERT_TRUE(j.problem.ok()) << j.problem.ToString();
  EXPECT_EQ(j.reply, "answers");
  EXPECT_EQ(j.job.chat(0).content(), "Yo");
  EXPECT_EQ(j.job.sampling().max_tokens(), 3u);
  EXPECT_EQ(j.job_id, 42u);  // the entry's own id wins
}

TEST(JobEntry, DerivedIdsAreStableDistinctAndJsonSafe) {
  const uint64_t a = DeriveJobId("troupe:jobs", "1700000000000-0");
  EXPECT_EQ(a, DeriveJobId("troupe:jobs", "1700000000000-0"));
  EXPECT_NE(a, DeriveJobId("troupe:jobs", "1700000000000-1"));
  EXPECT_NE(a, DeriveJobId("other", "1700000000000-0"));
  EXPECT_NE(a, 0u);
  EXPECT_LT(a, uint64_t{1} << 53);
}

TEST(JobEntry, RoundTripsThroughItsFields) {
  v1::JobSubmit job;
  job.set_prompt("The capital of France is");
  job.mutable_sampling()->set_max_tokens(8);
  job.mutable_sampling()->set_temperature(0.5f);
  JobEntry j = ParseJobEntry("s", Entry("9-0", JobEntryFields(job, "r")));
  ASSERT_TRUE(j.problem.ok()) << j.problem.ToString();
  EXPECT_EQ(j.reply, "r");
  EXPECT_EQ(j.job.prompt(), job.prompt());
  EXPECT_EQ(j.job.sampling().max_tokens(), 8u);
  EXPECT_FLOAT_EQ(j.job.sampling().temperature(), 0.5f);
}

TEST(JobEntry, MalformedEntriesKeepTheirReplyAndName) {
  const std::pair<EntryFields, std::string> bad[] = {
      {{}, "no 'job' field"},
      {{{"prompt", "Hi"}}, "unknown field 'prompt'"},
      {{{"job", "not json"}}, "not a JobSubmit in JSON"},
      {{{"job", R"({"promt": "Hi"})"}}, "promt"},
      {{{"job", R"({"sampling": {"max_tokens": "many"}})"}}, "not a JobSubmit in JSON"},
      {{{"job", "{}"}, {"reply", ""}}, "'reply' is empty"},
  };
  for (const auto& [fields, why] : bad) {
    JobEntry j = ParseJobEntry("s", Entry("3-0", fields));
    ASSERT_FALSE(j.problem.ok()) << why;
    EXPECT_EQ(j.problem.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(j.problem.message().find(why), std::string::npos) << j.problem.message();
    EXPECT_NE(j.problem.message().find("3-0"), std::string::npos) << j.problem.message();
    EXPECT_EQ(j.reply, "troupe:reply:3-0");
    EXPECT_EQ(j.job_id, DeriveJobId("s", "3-0"));
  }
  // A bad job still answers to the reply stream the entry names.
  JobEntry j = ParseJobEntry("s", Entry("4-0", {{"job", "[]"}, {"reply", "mine"}}));
  EXPECT_FALSE(j.problem.ok());
  EXPECT_EQ(j.reply, "mine");
}

}  // namespace
}  // namespace troupe::broker
