// The job journal (a real SQLite file in a temp dir) and the job book over it:
// acceptance is durable, a reopened journal gives every job back, a second
// head cannot open a journal in use, ended jobs expire; the book copies
// each message to every watcher with its own request id, replays streams on
// attach, keeps tokens in order, and says the right thing when the head stops.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "scheduling/job_book.h"
#include "scheduling/job_journal.h"

namespace troupe::scheduling {
namespace {

namespace fs = std::filesystem;

class JournalDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("troupe-journal-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path() const { return (dir_ / "jobs.db").string(); }
  fs::path dir_;
};

std::unique_ptr<JobJournal> Opened(const std::string& path) {
  auto j = JobJournal::Open(path);
  if (!j.ok()) ADD_FAILURE() << j.status().ToString();
  return j.ok() ? std::move(*j) : nullptr;
}

v1::JobSubmit Submit(const std::string& prompt, uint64_t job_id = 0) {
  v1::JobSubmit s;
  s.set_job_id(job_id);
  s.set_prompt(prompt);
  s.set_priority(2);
  s.mutable_sampling()->set_max_tokens(4);
  return s;
}

v1::Envelope TokenEnv(uint64_t job_id, uint32_t index, const std::string& text) {
  v1::Envelope env;
  env.set_request_id(1);
  v1::Token* t = env.mutable_token();
  t->set_job_id(job_id);
  t->set_index(index);
  t->set_text(text);
  t->set_token_id(static_cast<int32_t>(100 + index));
  return env;
}

v1::Envelope FinishEnv(uint64_t job_id, uint32_t tokens) {
  v1::Envelope env;
  v1::Finish* f = env.mutable_finish();
  f->set_job_id(job_id);
  f->set_generated_tokens(tokens);
  f->set_reason(v1::FINISH_LENGTH);
  return env;
}

TEST_F(JournalDir, AcceptedJobsComeBackAfterReopeningInOrder) {
  {
    auto j = JobJournal::Open(Path());
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    EXPECT_TRUE((*j)->durable());
    ASSERT_TRUE((*j)->Accept(7, Submit("a", 7), 11, 100.0).ok());
    ASSERT_TRUE((*j)->Accept(3, Submit("b", 3), 12, 101.0).ok());
    v1::JobRecord r;
    *r.add_stream() = TokenEnv(7, 0, "x");
    *r.mutable_final() = FinishEnv(7, 1);
    ASSERT_TRUE((*j)->Finish(7, r, 102.0).ok());
    EXPECT_FALSE((*j)->Accept(7, Submit("a", 7), 11, 103.0).ok()) << "an id is journaled once";
  }
  auto j = JobJournal::Open(Path());
  ASSERT_TRUE(j.ok());
  auto all = (*j)->Load();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].job_id, 7u);  // accepted first
  EXPECT_TRUE((*all)[0].finished);
  EXPECT_TRUE((*all)[0].final.has_finish());
  EXPECT_EQ((*all)[1].job_id, 3u);
  EXPECT_FALSE((*all)[1].finished);
  EXPECT_EQ((*all)[1].seed, 12u);
  EXPECT_EQ((*all)[1].submit.prompt(), "b");
  auto record = (*j)->Record(7);
  ASSERT_TRUE(record.ok() && record->has_value());
  EXPECT_EQ((**record).stream(0).token().text(), "x");
  EXPECT_FALSE((*j)->Record(3)->has_value()) << "not ended";
  auto expired = (*j)->Expire(102.5);
  ASSERT_TRUE(expired.ok());
  EXPECT_EQ(*expired, 1);
  EXPECT_EQ((*j)->Load()->size(), 1u);
}

TEST_F(JournalDir, ASecondHeadCannotOpenAJournalInUse) {
  auto first = JobJournal::Open(Path());
  ASSERT_TRUE(first.ok());
  auto second = JobJournal::Open(Path());
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("in use by another head"), std::string::npos) << second.status().ToString();
}

TEST(JobJournalTest, AnEmptyPathIsInMemory) {
  auto j = JobJournal::Open("");
  ASSERT_TRUE(j.ok());
  EXPECT_FALSE((*j)->durable());
  EXPECT_TRUE((*j)->Accept(1, Submit("a", 1), 1, 1.0).ok());
}

TEST(JobJournalTest, AnUnopenablePathNamesIt) {
  auto j = JobJournal::Open("/nonexistent-dir/jobs.db");
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("/nonexistent-dir/jobs.db"), std::string::npos);
}

const Origin kA{1, "a"}, kB{1, "b"};

std::unique_ptr<JobBook> MemoryBook(double retention = 60) {
  return std::make_unique<JobBook>(BookConfig{"head", retention}, Opened(""));
}

TEST(JobBookTest, EveryWatcherGetsEachMessageWithItsOwnRequestId) {
  auto book = MemoryBook();
  ASSERT_TRUE(book->Accept(5, Submit("p", 5), 9, Watcher{kA, 41, true, 0}, 0).ok());
  EXPECT_EQ(book->live(), 1u);
  book->Output(TokenEnv(5, 0, "He"), 1);
  // B attaches after the first token: gets status, the token so far, then live ones.
  Actions att = book->Attach(5, Watcher{kB, 77, true, 0}, LiveState{v1::JOB_RUNNING, 0, 1001});
  ASSERT_EQ(att.size(), 2u);
  EXPECT_EQ(std::get<Reply>(att[0]).envelope.job_status().state(), v1::JOB_RUNNING);
  EXPECT_EQ(std::get<Reply>(att[0]).envelope.job_status().tokens(), 1u);
  EXPECT_EQ(std::get<Reply>(att[0]).envelope.job_status().priority(), 2);
  EXPECT_EQ(std::get<Reply>(att[1]).envelope.token().text(), "He");
  EXPECT_EQ(std::get<Reply>(att[1]).envelope.request_id(), 77u);
  Actions out = book->Output(TokenEnv(5, 1, "llo"), 2);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(std::get<Reply>(out[0]).client, kA);
  EXPECT_EQ(std::get<Reply>(out[0]).envelope.request_id(), 41u);
  EXPECT_EQ(std::get<Reply>(out[1]).client, kB);
  EXPECT_EQ(std::get<Reply>(out[1]).envelope.request_id(), 77u);
  // A repeated or skipped index never reaches anyone.
  EXPECT_TRUE(book->Output(TokenEnv(5, 1, "llo"), 2).empty());
  EXPECT_TRUE(book->Output(TokenEnv(5, 5, "?"), 2).empty());
  out = book->Output(FinishEnv(5, 2), 3);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(std::get<Reply>(out[1]).envelope.has_finish());
  EXPECT_TRUE(book->Ended(5));
  EXPECT_EQ(book->live(), 0u);
  EXPECT_TRUE(book->Output(TokenEnv(5, 2, "x"), 4).empty()) << "nothing after the end";
}

TEST(JobBookTest, AttachingToAnEndedJobReplaysItFromTheJournalFromAnIndex) {
  auto book = MemoryBook();
  ASSERT_TRUE(book->Accept(5, Submit("p", 5), 9, Watcher{kA, 41, false, 0}, 0).ok());
  for (uint32_t i = 0; i < 4; ++i) {
    Actions out = book->Output(TokenEnv(5, i, std::to_string(i)), 1);
    EXPECT_TRUE(out.empty()) << "a watcher without stream gets no tokens";
  }
  EXPECT_EQ(book->Output(FinishEnv(5, 4), 2).size(), 1u);
  Actions att = book->Attach(5, Watcher{kB, 8, true, 2}, std::nullopt);
  ASSERT_EQ(att.size(), 4u);  // status, tokens 2 and 3, finish
  EXPECT_EQ(std::get<Reply>(att[0]).envelope.job_status().state(), v1::JOB_COMPLETED);
  EXPECT_EQ(std::get<Reply>(att[0]).envelope.job_status().finish_reason(), v1::FINISH_LENGTH);
  EXPECT_EQ(std::get<Reply>(att[1]).envelope.token().index(), 2u);
  EXPECT_EQ(std::get<Reply>(att[2]).envelope.token().index(), 3u);
  EXPECT_TRUE(std::get<Reply>(att[3]).envelope.has_finish());
  EXPECT_EQ(std::get<Reply>(att[3]).envelope.request_id(), 8u);
}

TEST(JobBookTest, AnErrorEndsTheJobAbortedAndExpiryForgetsIt) {
  auto book = MemoryBook(/*retention=*/10);
  ASSERT_TRUE(book->Accept(5, Submit("p", 5), 9, Watcher{kA, 41, true, 0}, 0).ok());
  v1::Envelope err;
  err.mutable_error()->set_code(v1::CANCELLED);
  err.mutable_error()->set_text("job 5 was cancelled");
  err.mutable_error()->set_job_id(5);
  EXPECT_EQ(book->Output(err, 100).size(), 1u);
  const v1::JobStatus s = book->StatusOf(5, 3, std::nullopt).job_status();
  EXPECT_EQ(s.state(), v1::JOB_ABORTED);
  EXPECT_EQ(s.failure().code(), v1::CANCELLED);
  ASSERT_TRUE(book->Expire(105).ok());
  EXPECT_TRUE(book->Knows(5)) << "within the retention window";
  ASSERT_TRUE(book->Expire(111).ok());
  EXPECT_FALSE(book->Knows(5));
}

TEST(JobBookTest, SameJobIgnoresOnlyStreamAndIdsAreNeverReused) {
  auto book = MemoryBook();
  ASSERT_TRUE(book->Accept(1, Submit("p", 1), 9, Watcher{kA, 1, true, 0}, 0).ok());
  v1::JobSubmit again = Submit("p", 1);
  again.set_stream(true);
  EXPECT_TRUE(book->SameJob(1, again));
  EXPECT_FALSE(book->SameJob(1, Submit("q", 1)));
  EXPECT_EQ(book->NewId(), 2u) << "1 is taken";
  EXPECT_FALSE(book->Accept(1, Submit("p", 1), 9, Watcher{kA, 1, true, 0}, 0).ok());
}

TEST(JobBookTest, GoneClientsStopWatchingAndTheJobGoesOn) {
  auto book = MemoryBook();
  ASSERT_TRUE(book->Accept(5, Submit("p", 5), 9, Watcher{kA, 41, true, 0}, 0).ok());
  book->Gone(kA);
  EXPECT_TRUE(book->Output(TokenEnv(5, 0, "x"), 1).empty());
  EXPECT_FALSE(book->Ended(5));
  EXPECT_EQ(book->Attach(5, Watcher{kB, 2, true, 0}, std::nullopt).size(), 2u);
}

TEST_F(JournalDir, ClosingTellsWatchersAndLeavesJobsUnfinishedForTheNextHead) {
  {
    JobBook book(BookConfig{"head", 60}, Opened(Path()));
    ASSERT_TRUE(book.Recover(0).ok());
    ASSERT_TRUE(book.Accept(5, Submit("p", 5), 9, Watcher{kA, 41, true, 0}, 0).ok());
    ASSERT_TRUE(book.Accept(6, Submit("q", 6), 10, Watcher{kA, 42, true, 0}, 0).ok());
    book.Output(FinishEnv(6, 0), 1);
    Actions out = book.Close();
    ASSERT_EQ(out.size(), 1u);
    const v1::Error& e = std::get<Reply>(out[0]).envelope.error();
    EXPECT_EQ(e.code(), v1::UNAVAILABLE);
    EXPECT_TRUE(e.retryable());
    EXPECT_NE(e.text().find("runs again when the head restarts"), std::string::npos) << e.text();
    v1::Envelope late;  // what the life cycle says as it shuts down is not the job's end
    late.mutable_error()->set_code(v1::UNAVAILABLE);
    late.mutable_error()->set_job_id(5);
    EXPECT_TRUE(book.Output(late, 2).empty());
  }
  JobBook book(BookConfig{"head", 60}, Opened(Path()));
  auto unfinished = book.Recover(3);
  ASSERT_TRUE(unfinished.ok());
  ASSERT_EQ(unfinished->size(), 1u);
  EXPECT_EQ((*unfinished)[0].job_id, 5u);
  EXPECT_EQ((*unfinished)[0].seed, 9u);
  EXPECT_TRUE(book.Ended(6));
  EXPECT_FALSE(book.Ended(5));
  EXPECT_EQ(book.live(), 1u);
  EXPECT_EQ(book.NewId(), 1u);
}

}  // namespace
}  // namespace troupe::scheduling
