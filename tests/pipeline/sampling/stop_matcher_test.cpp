// StopMatcher: stop strings split across pieces, false starts, overlapping
// prefixes, text after the stop, and Flush.
#include "pipeline/sampling/stop_matcher.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace troupe {
namespace {

// Feeds `pieces` and returns everything released (plus Flush() if no stop).
std::string Stream(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const std::string& p : pieces) out += m.Feed(p).text;
  if (!m.stopped()) out += m.Flush();
  return out;
}

TEST(StopMatcherTest, NoStopsReleasesEverythingAtOnce) {
  StopMatcher m({});
  EXPECT_EQ(m.Feed("abc").text, "abc");
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.Flush(), "");
  StopMatcher empty_stop({""});
  EXPECT_EQ(empty_stop.Feed("abc").text, "abc");
}

TEST(StopMatcherTest, StopSplitAcrossPieces) {
  StopMatcher m({"</s>"});
  auto r = m.Feed("Hello <");
  EXPECT_EQ(r.text, "Hello ");
  EXPECT_FALSE(r.stopped);
  r = m.Feed("/");
  EXPECT_EQ(r.text, "");
  EXPECT_FALSE(r.stopped);
  r = m.Feed("s>tail");
  EXPECT_EQ(r.text, "");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(m.matched(), "</s>");
  // Nothing after the stop, ever.
  r = m.Feed("more");
  EXPECT_EQ(r.text, "");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(m.Flush(), "");
}

TEST(StopMatcherTest, TextBeforeStopInSamePieceIsReleased) {
  StopMatcher m({"</s>"});
  const auto r = m.Feed("ab</s>cd</s>");
  EXPECT_EQ(r.text, "ab");
  EXPECT_TRUE(r.stopped);
}

TEST(StopMatcherTest, FalseStartIsReleasedWhenItStopsMatching) {
  StopMatcher m({"</s>"});
  EXPECT_EQ(m.Feed("a<").text, "a");
  EXPECT_EQ(m.Feed("/").text, "");
  EXPECT_EQ(m.Feed("b").text, "</b");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcherTest, OverlappingPrefixes) {
  // "abaabab": the first "aba" is a false start, the match begins at index 3.
  StopMatcher m({"abab"});
  std::string out;
  for (char c : std::string("abaabab")) out += m.Feed(std::string(1, c)).text;
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(out, "aba");

  // Self-overlapping stop "aaa" in "aaaa" stops at the first.
  StopMatcher a({"aaa"});
  EXPECT_EQ(a.Feed("xaa").text, "x");
  const auto r = a.Feed("aa");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "");
}

TEST(StopMatcherTest, EarliestStopWinsThenFirstListed) {
  StopMatcher m({"yz", "xyz"});
  const auto r = m.Feed("axyzq");
  EXPECT_EQ(r.text, "a");
  EXPECT_EQ(m.matched(), "xyz");

  StopMatcher same_start({"abc", "ab"});
  const auto s = same_start.Feed("zabc");
  EXPECT_EQ(s.text, "z");
  EXPECT_EQ(same_start.matched(), "abc");

  // Held for the longer stop "END!" while the shorter one completes.
  StopMatcher nested({"END!", "ND"});
  EXPECT_EQ(nested.Feed("xE").text, "x");
  const auto n = nested.Feed("N");
  EXPECT_FALSE(n.stopped);
  const auto d = nested.Feed("D");
  EXPECT_TRUE(d.stopped);
  EXPECT_EQ(d.text, "E");
  EXPECT_EQ(nested.matched(), "ND");
}

TEST(StopMatcherTest, FlushReturnsHeldTailAtEnd) {
  StopMatcher m({"<|end|>"});
  EXPECT_EQ(m.Feed("x <|en").text, "x ");
  EXPECT_EQ(m.Flush(), "<|en");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcherTest, EverySplitGivesTheSameText) {
  const std::string text = "the end</s> after";
  for (size_t a = 0; a <= text.size(); ++a) {
    for (size_t b = a; b <= text.size(); ++b) {
      StopMatcher m({"</s>", "<|im_end|>"});
      const std::string out = Stream(m, {text.substr(0, a), text.substr(a, b - a), text.substr(b)});
      EXPECT_EQ(out, "the end") << "split at " << a << ", " << b;
      EXPECT_TRUE(m.stopped());
    }
  }
  const std::string clean = "no stop <here> </ s";
  for (size_t a = 0; a <= clean.size(); ++a) {
    StopMatcher m({"</s>"});
    EXPECT_EQ(Stream(m, {clean.substr(0, a), clean.substr(a)}), clean) << a;
  }
}

TEST(StopMatcherTest, MultibyteStopString) {
  StopMatcher m({"\xE3\x80\x82"});  // "。"
  EXPECT_EQ(m.Feed("ok\xE3").text, "ok");
  EXPECT_EQ(m.Feed("\x80").text, "");
  const auto r = m.Feed("\x82rest");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "");
}

}  // namespace
}  // namespace troupe
