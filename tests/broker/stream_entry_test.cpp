#include "broker/stream_entry.h"

#include <gtest/gtest.h>

namespace troupe::broker {
namespace {

RedisReply S(const std::string& s) { return RedisReply::String(s); }
RedisReply A(std::vector<RedisReply> e) { return RedisReply::Array(std::move(e)); }

TEST(StreamEntry, ReadGroupGivesEntriesAndDeletedOnes) {
  // [[stream, [[id, [f, v, f, v]], [id, nil]]]]
  RedisReply reply =
      A({A({S("troupe:jobs"),
            A({A({S("1-0"), A({S("job"), S("{}"), S("reply"), S("r")})}), A({S("2-0"), RedisReply::Nil()})})})});
  Result<std::vector<StreamEntry>> entries = ParseReadGroup(reply);
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].id, "1-0");
  EXPECT_FALSE((*entries)[0].deleted);
  ASSERT_NE(FindField((*entries)[0].fields, "reply"), nullptr);
  EXPECT_EQ(*FindField((*entries)[0].fields, "reply"), "r");
  EXPECT_EQ(FindField((*entries)[0].fields, "nope"), nullptr);
  EXPECT_TRUE((*entries)[1].deleted);
}

TEST(StreamEntry, NilIsNothingNew) {
  Result<std::vector<StreamEntry>> entries = ParseReadGroup(RedisReply::Nil());
  ASSERT_TRUE(entries.ok());
  EXPECT_TRUE(entries->empty());
}

TEST(StreamEntry, AutoClaimOfRedis6And7) {
  RedisReply v6 = A({S("0-0"), A({A({S("5-0"), A({S("job"), S("{}")})})})});
  Result<AutoClaim> a = ParseAutoClaim(v6);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->next_cursor, "0-0");
  ASSERT_EQ(a->entries.size(), 1u);

  RedisReply v7 = A({S("7-0"), A({}), A({S("6-0")})});
  Result<AutoClaim> b = ParseAutoClaim(v7);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->next_cursor, "7-0");
  ASSERT_EQ(b->entries.size(), 1u);
  EXPECT_EQ(b->entries[0].id, "6-0");
  EXPECT_TRUE(b->entries[0].deleted);
}

TEST(StreamEntry, MisshapenRepliesAreCorrupt) {
  EXPECT_EQ(ParseEntries(S("x")).status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(ParseEntries(A({A({S("1-0")})})).status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(ParseEntries(A({A({S("1-0"), A({S("odd")})})})).status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(ParseAutoClaim(A({S("0-0")})).status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(ParseReadGroup(A({A({S("k")})})).status().code(), StatusCode::kCorrupt);
}

}  // namespace
}  // namespace troupe::broker
