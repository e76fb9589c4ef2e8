// RouteThrough: hops in ring order, keys passed on, int8 on slow links only.
#include "scheduling/session_messages.h"

#include <gtest/gtest.h>

namespace troupe::scheduling {
namespace {

std::vector<Span> TwoShards(double rtt_a, double rtt_b) {
  Span a{"a", "tcp://a", 0, 10, "KA", rtt_a};
  Span b{"b", "tcp://b", 10, 30, "", rtt_b};
  return {a, b};
}

TEST(SessionMessagesTest, RouteThroughGoesRoundTheRing) {
  const auto route = RouteThrough("head", "tcp://h", TwoShards(1, 1));
  ASSERT_EQ(route.size(), 5u);
  EXPECT_EQ(route[0].stage(), v1::STAGE_EMBEDDING);
  EXPECT_EQ(route[1].node_id(), "a");
  EXPECT_EQ(route[1].public_key(), "KA");
  EXPECT_EQ(route[2].layer_begin(), 10u);
  EXPECT_EQ(route[3].stage(), v1::STAGE_LM_HEAD);
  EXPECT_EQ(route[4].stage(), v1::STAGE_SAMPLER);
  for (const v1::RouteHop& h : route) EXPECT_EQ(h.encoding(), v1::DTYPE_UNSPECIFIED) << h.node_id();  // f32
}

TEST(SessionMessagesTest, Int8OnlyOverLinksToOrFromASlowShard) {
  // b is slow: the link a -> b and the link b -> head (LM head) carry int8.
  auto route = RouteThrough("head", "tcp://h", TwoShards(1, 80), 20);
  EXPECT_EQ(route[1].encoding(), v1::DTYPE_UNSPECIFIED);
  EXPECT_EQ(route[2].encoding(), v1::DTYPE_INT8_BLOCK32);
  EXPECT_EQ(route[3].encoding(), v1::DTYPE_INT8_BLOCK32);
  EXPECT_EQ(route[4].encoding(), v1::DTYPE_UNSPECIFIED);  // logits never
  // a is slow: head -> a and a -> b.
  route = RouteThrough("head", "tcp://h", TwoShards(80, 1), 20);
  EXPECT_EQ(route[1].encoding(), v1::DTYPE_INT8_BLOCK32);
  EXPECT_EQ(route[2].encoding(), v1::DTYPE_INT8_BLOCK32);
  EXPECT_EQ(route[3].encoding(), v1::DTYPE_UNSPECIFIED);
  // Threshold 0: never; unmeasured links (-1): not slow.
  route = RouteThrough("head", "tcp://h", TwoShards(80, -1), 0);
  for (const v1::RouteHop& h : route) EXPECT_EQ(h.encoding(), v1::DTYPE_UNSPECIFIED);
}

TEST(SessionMessagesTest, StageNodesTakeTheEmbeddingAndLmHeadHops) {
  Span embed{"e", "tcp://e", 0, 0, "KE", 1};
  Span head{"l", "tcp://l", 0, 0, "KL", 80};
  auto route = RouteThrough("head", "tcp://h", TwoShards(1, 1), 20, &embed, &head);
  ASSERT_EQ(route.size(), 5u);
  EXPECT_EQ(route[0].node_id(), "e");
  EXPECT_EQ(route[0].stage(), v1::STAGE_EMBEDDING);
  EXPECT_EQ(route[0].public_key(), "KE");
  EXPECT_EQ(route[3].node_id(), "l");
  EXPECT_EQ(route[3].stage(), v1::STAGE_LM_HEAD);
  EXPECT_EQ(route[3].public_key(), "KL");
  EXPECT_EQ(route[3].encoding(), v1::DTYPE_INT8_BLOCK32);  // the LM head node is behind a slow link
  EXPECT_EQ(route[4].node_id(), "head");                   // the sampler stays on the head
  EXPECT_EQ(route[4].stage(), v1::STAGE_SAMPLER);
}

}  // namespace
}  // namespace troupe::scheduling
