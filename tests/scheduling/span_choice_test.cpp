#include "scheduling/span_choice.h"

#include <gtest/gtest.h>

namespace troupe::scheduling {
namespace {

std::vector<uint32_t> Counts(int64_t n, const std::vector<LayerSpan>& spans) {
  std::vector<uint32_t> c(n, 0);
  for (const LayerSpan& s : spans)
    for (int64_t l = s.begin; l < s.end; ++l) c[l]++;
  return c;
}

void ExpectSpan(const LayerSpan& got, int64_t begin, int64_t end) {
  EXPECT_EQ(got.begin, begin);
  EXPECT_EQ(got.end, end);
}

TEST(SpanChoiceTest, AnEmptyClusterGetsAsManyLayersAsFitFromZero) {
  ExpectSpan(ChooseSpan(Counts(30, {}), {}, 100), 0, 30);
  ExpectSpan(ChooseSpan(Counts(30, {}), {}, 12), 0, 12);
}

TEST(SpanChoiceTest, AGapIsClosedExactlyWhenTheNodeHoldsIt) {
  const std::vector<LayerSpan> live = {{0, 10}, {20, 30}};
  ExpectSpan(ChooseSpan(Counts(30, live), live, 12), 10, 20);
  ExpectSpan(ChooseSpan(Counts(30, live), live, 10), 10, 20);
  // More room: still the gap (a span ending off a boundary would not route).
  ExpectSpan(ChooseSpan(Counts(30, live), live, 15), 10, 20);
}

TEST(SpanChoiceTest, ANodeSmallerThanTheGapStartsAtItsBoundary) {
  const std::vector<LayerSpan> live = {{0, 10}, {20, 30}};
  ExpectSpan(ChooseSpan(Counts(30, live), live, 4), 10, 14);
  // The next one continues from the new boundary.
  const std::vector<LayerSpan> more = {{0, 10}, {20, 30}, {10, 14}};
  ExpectSpan(ChooseSpan(Counts(30, more), more, 6), 14, 20);
}

TEST(SpanChoiceTest, TheWeakestSpanGetsTheReplica) {
  const std::vector<LayerSpan> live = {{0, 10}, {10, 20}, {20, 30}, {0, 10}, {20, 30}};
  ExpectSpan(ChooseSpan(Counts(30, live), live, 10), 10, 20);
}

TEST(SpanChoiceTest, AllLayersCoveredEquallyTakesTheLowestStart) {
  const std::vector<LayerSpan> live = {{0, 15}, {15, 30}};
  ExpectSpan(ChooseSpan(Counts(30, live), live, 15), 0, 15);
  // Room for all: a whole replica raises every layer.
  ExpectSpan(ChooseSpan(Counts(30, live), live, 30), 0, 30);
}

// Two nodes on 0-15 both drained to move to 15-30 at once: each starts
// again to a tie (0-15 and 15-30 served once each). Without a preference
// both take 0-15 (the lowest begin) and find the cluster lopsided again;
// the span it set out for wins the tie, and only a tie.
TEST(SpanChoiceTest, TheSpanANodeMovedForWinsATieButNothingBetter) {
  const std::vector<LayerSpan> live = {{0, 15}, {15, 30}};
  ExpectSpan(ChooseSpan(Counts(30, live), live, 15), 0, 15);
  ExpectSpan(ChooseSpan(Counts(30, live), live, 15, LayerSpan{15, 30}), 15, 30);
  // 15-30 served twice: the preference does not take the node away from the weaker span.
  const std::vector<LayerSpan> lopsided = {{0, 15}, {15, 30}, {15, 30}};
  ExpectSpan(ChooseSpan(Counts(30, lopsided), lopsided, 15, LayerSpan{15, 30}), 0, 15);
  // A preferred span that is no candidate (wider than the node holds) changes nothing.
  ExpectSpan(ChooseSpan(Counts(30, live), live, 15, LayerSpan{0, 30}), 0, 15);
}

TEST(SpanChoiceTest, TheGapWinsOverAWiderSpanAroundIt) {
  const std::vector<LayerSpan> live = {{0, 10}};
  ExpectSpan(ChooseSpan(Counts(30, live), live, 30), 10, 30);
}

TEST(SpanChoiceTest, LayersThatFitCountTheCacheAndOverhead) {
  const std::vector<uint64_t> layers(30, uint64_t{10} << 20);  // 10 MiB each
  const uint64_t cache = uint64_t{64} << 20;
  auto fit = LayersThatFit(layers, cache + kNodeOverheadBytes + (uint64_t{125} << 20), cache);
  ASSERT_TRUE(fit.ok());
  EXPECT_EQ(*fit, 12);
  auto all = LayersThatFit(layers, uint64_t{64} << 30, cache);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, 30);
  auto none = LayersThatFit(layers, cache + kNodeOverheadBytes + (uint64_t{5} << 20), cache);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("holds no layer"), std::string::npos) << none.status().message();
}

TEST(SpanChoiceTest, ANodeMovesWhenThatRaisesTheWeakestCoverage) {
  // Three on the first half, one on the second: one of the three moves over.
  const std::vector<LayerSpan> live = {{0, 15}, {0, 15}, {0, 15}, {15, 30}};
  auto move = BetterSpan(Counts(30, live), live, {0, 15}, 15);
  ASSERT_TRUE(move.has_value());
  ExpectSpan(*move, 15, 30);
  // The lone node on the second half stays: leaving would open a gap.
  EXPECT_FALSE(BetterSpan(Counts(30, live), live, {15, 30}, 15).has_value());
  // A gap left by a dead node is filled from a span served twice.
  const std::vector<LayerSpan> gap = {{0, 10}, {0, 10}, {10, 20}};
  auto fill = BetterSpan(Counts(30, gap), gap, {0, 10}, 10);
  ASSERT_TRUE(fill.has_value());
  ExpectSpan(*fill, 20, 30);
}

TEST(SpanChoiceTest, ANodeStaysWhenAMoveWouldOnlyTie) {
  // 2 and 1: moving one of the two gives 1 and 2, no better.
  const std::vector<LayerSpan> live = {{0, 15}, {0, 15}, {15, 30}};
  EXPECT_FALSE(BetterSpan(Counts(30, live), live, {0, 15}, 15).has_value());
  // Balanced: nobody moves.
  const std::vector<LayerSpan> even = {{0, 15}, {15, 30}, {0, 15}, {15, 30}};
  for (const LayerSpan& s : even) EXPECT_FALSE(BetterSpan(Counts(30, even), even, s, 15).has_value());
  // A gap no node can fill without opening another: stay.
  const std::vector<LayerSpan> thin = {{0, 10}, {10, 20}};
  EXPECT_FALSE(BetterSpan(Counts(30, thin), thin, {0, 10}, 10).has_value());
  // Counts that do not include the node (it is draining, say): no judgement.
  const std::vector<LayerSpan> others = {{15, 30}};
  EXPECT_FALSE(BetterSpan(Counts(30, others), others, {0, 15}, 15).has_value());
}

}  // namespace
}  // namespace troupe::scheduling
