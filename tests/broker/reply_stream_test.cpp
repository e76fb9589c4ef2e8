#include "broker/reply_stream.h"

#include <gtest/gtest.h>

namespace troupe::broker {
namespace {

std::string Get(const EntryFields& f, const std::string& name) {
  const std::string* v = FindField(f, name);
  return v ? *v : "<missing>";
}

TEST(ReplyStream, TokenFinishAndErrorFields) {
  v1::Token t;
  t.set_index(3);
  t.set_token_id(1234);
  t.set_text(" Paris");
  EntryFields token = TokenFields("5-0", 77, t);
  EXPECT_EQ(Get(token, "type"), "token");
  EXPECT_EQ(Get(token, "entry"), "5-0");
  EXPECT_EQ(Get(token, "job_id"), "77");
  EXPECT_EQ(Get(token, "index"), "3");
  EXPECT_EQ(Get(token, "token_id"), "1234");
  EXPECT_EQ(Get(token, "text"), " Paris");
  EXPECT_EQ(Get(token, "eos"), "false");
  EXPECT_NE(Get(token, "token").find("\"token_id\":1234"), std::string::npos) << Get(token, "token");

  v1::Finish f;
  f.set_reason(v1::FINISH_LENGTH);
  f.set_generated_tokens(4);
  EntryFields finish = FinishFields("5-0", 77, f);
  EXPECT_EQ(Get(finish, "type"), "finish");
  EXPECT_EQ(Get(finish, "reason"), "length");
  EXPECT_EQ(Get(finish, "generated_tokens"), "4");
  EXPECT_NE(Get(finish, "finish").find("\"generated_tokens\":4"), std::string::npos);

  EntryFields error = ErrorFields("5-0", 77, "BAD_REQUEST", "no 'job' field");
  EXPECT_EQ(Get(error, "type"), "error");
  EXPECT_EQ(Get(error, "code"), "BAD_REQUEST");
  EXPECT_EQ(Get(error, "text"), "no 'job' field");

  EXPECT_TRUE(IsReplyOf(error, "5-0"));
  EXPECT_FALSE(IsReplyOf(error, "6-0"));
}

TEST(ReplyProgress, NothingPublishedPublishesEverythingInOrder) {
  ReplyProgress p;
  EXPECT_FALSE(p.done());
  EXPECT_TRUE(p.ShouldPublishPromptLogprobs());
  EXPECT_TRUE(p.ShouldPublishToken(0).value());
  p.PublishedToken();
  EXPECT_FALSE(p.ShouldPublishPromptLogprobs());
  EXPECT_FALSE(p.ShouldPublishToken(0).value());
  EXPECT_TRUE(p.ShouldPublishToken(1).value());
  // A gap would lose a token: refused.
  EXPECT_EQ(p.ShouldPublishToken(5).status().code(), StatusCode::kCorrupt);
}

TEST(ReplyProgress, AfterARestartSkipsWhatIsThere) {
  v1::Token t;
  t.set_index(4);
  const EntryFields last = TokenFields("1-0", 9, t);
  Result<ReplyProgress> p = ReplyProgress::FromLastEntry(&last);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->next_index(), 5u);
  EXPECT_FALSE(p->done());
  // The head replays the stream from token 0: 0..4 are skipped, 5 goes out.
  for (uint32_t i = 0; i <= 4; ++i) EXPECT_FALSE(p->ShouldPublishToken(i).value()) << i;
  EXPECT_TRUE(p->ShouldPublishToken(5).value());
  EXPECT_FALSE(p->ShouldPublishPromptLogprobs());
}

TEST(ReplyProgress, PromptLogprobsOnlyMeansTokensFromZero) {
  const EntryFields last = PromptLogprobsFields("1-0", 9, v1::PromptLogprobs());
  Result<ReplyProgress> p = ReplyProgress::FromLastEntry(&last);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->ShouldPublishPromptLogprobs());
  EXPECT_TRUE(p->ShouldPublishToken(0).value());
}

TEST(ReplyProgress, AFinalRecordMeansOnlyTheAckIsLeft) {
  for (const EntryFields& last : {FinishFields("1-0", 9, v1::Finish()), ErrorFields("1-0", 9, "CACHE_FULL", "x")}) {
    Result<ReplyProgress> p = ReplyProgress::FromLastEntry(&last);
    ASSERT_TRUE(p.ok());
    EXPECT_TRUE(p->done());
    EXPECT_FALSE(p->ShouldPublishToken(0).value());
    EXPECT_FALSE(p->ShouldPublishPromptLogprobs());
  }
}

TEST(ReplyProgress, ForeignEntriesAreCorrupt) {
  const EntryFields untyped{{"text", "hi"}};
  EXPECT_EQ(ReplyProgress::FromLastEntry(&untyped).status().code(), StatusCode::kCorrupt);
  const EntryFields unknown{{"type", "weird"}};
  EXPECT_EQ(ReplyProgress::FromLastEntry(&unknown).status().code(), StatusCode::kCorrupt);
  const EntryFields bad_index{{"type", "token"}, {"index", "x"}};
  EXPECT_EQ(ReplyProgress::FromLastEntry(&bad_index).status().code(), StatusCode::kCorrupt);
}

}  // namespace
}  // namespace troupe::broker
