#include "broker/redis_url.h"

#include <gtest/gtest.h>

namespace troupe::broker {
namespace {

TEST(RedisUrl, DefaultsForAHostAlone) {
  Result<RedisUrl> u = ParseRedisUrl("redis://localhost", "box");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->host, "localhost");
  EXPECT_EQ(u->port, 6379);
  EXPECT_EQ(u->db, 0);
  EXPECT_EQ(u->password, "");
  EXPECT_EQ(u->stream, "troupe:jobs");
  EXPECT_EQ(u->group, "troupe");
  EXPECT_EQ(u->consumer, "bridge-box");
}

TEST(RedisUrl, EveryPart) {
  Result<RedisUrl> u =
      ParseRedisUrl("redis://alice:s%40cret@10.0.0.5:7000/3?stream=q%3Ajobs&group=g1&consumer=b7", "box");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->user, "alice");
  EXPECT_EQ(u->password, "s@cret");
  EXPECT_EQ(u->host, "10.0.0.5");
  EXPECT_EQ(u->port, 7000);
  EXPECT_EQ(u->db, 3);
  EXPECT_EQ(u->stream, "q:jobs");
  EXPECT_EQ(u->group, "g1");
  EXPECT_EQ(u->consumer, "b7");
  // The password never reaches a log.
  EXPECT_EQ(u->ToString(), "redis://alice:***@10.0.0.5:7000/3?stream=q:jobs&group=g1&consumer=b7");
}

TEST(RedisUrl, PasswordWithoutUserAndIpv6) {
  Result<RedisUrl> u = ParseRedisUrl("redis://:pw@[::1]:6380", "box");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->user, "");
  EXPECT_EQ(u->password, "pw");
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 6380);
  EXPECT_EQ(u->ToString().find("pw"), std::string::npos);
}

TEST(RedisUrl, RefusesWhatItCannotRead) {
  const char* bad[][2] = {
      {"http://localhost", "redis://"},
      {"redis://", "no host"},
      {"redis://:6379", "no host"},
      {"redis://h:0", "port '0'"},
      {"redis://h:99999", "port '99999'"},
      {"redis://h:x1", "port 'x1'"},
      {"redis://h:", "empty port"},
      {"redis://h/abc", "database 'abc'"},
      {"redis://h?strem=x", "unknown query parameter 'strem'"},
      {"redis://h?stream", "has no value"},
      {"redis://h?stream=", "empty stream"},
      {"redis://h?stream=%zz", "bad percent escape"},
      {"redis://h?group=%4", "bad percent escape"},
      {"redis://secret@h", "[user]:password@"},
      {"redis://[::1", "unclosed"},
  };
  for (const auto& [url, why] : bad) {
    Result<RedisUrl> u = ParseRedisUrl(url, "box");
    ASSERT_FALSE(u.ok()) << url;
    EXPECT_EQ(u.status().code(), StatusCode::kInvalidArgument) << url;
    EXPECT_NE(u.status().message().find(why), std::string::npos) << url << ": " << u.status().message();
  }
}

}  // namespace
}  // namespace troupe::broker
