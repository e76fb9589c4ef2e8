// Reject counters count per code, from many threads, and show up in a
// MetricsSnapshot; WireError names its code.
#include "messages/reject_counters.h"

#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "messages/wire_error.h"

namespace troupe {
namespace {

TEST(RejectCountersTest, CountsPerCode) {
  RejectCounters c;
  c.Count(v1::BAD_HEADER);
  c.Count(v1::BAD_HEADER);
  c.Count(v1::NON_FINITE);
  EXPECT_EQ(c.Get(v1::BAD_HEADER), 2u);
  EXPECT_EQ(c.Get(v1::NON_FINITE), 1u);
  EXPECT_EQ(c.Get(v1::OVERSIZED), 0u);
  EXPECT_EQ(c.Total(), 3u);
  const auto nonzero = c.NonZero();
  ASSERT_EQ(nonzero.size(), 2u);
  EXPECT_EQ(nonzero[0].first, v1::BAD_HEADER);
  EXPECT_EQ(nonzero[1].first, v1::NON_FINITE);
}

TEST(RejectCountersTest, OutOfRangeCodesGoToUnspecified) {
  RejectCounters c;
  c.Count(static_cast<v1::ErrorCode>(1000));
  c.Count(static_cast<v1::ErrorCode>(-3));
  EXPECT_EQ(c.Get(v1::ERROR_CODE_UNSPECIFIED), 2u);
  EXPECT_EQ(c.Get(static_cast<v1::ErrorCode>(1000)), 0u);
  EXPECT_EQ(c.Total(), 2u);
}

TEST(RejectCountersTest, ThreadSafe) {
  RejectCounters c;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&c] {
      for (int i = 0; i < 10000; ++i) c.Count(i % 2 ? v1::BAD_TENSOR : v1::INTERNAL);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(c.Get(v1::BAD_TENSOR), 20000u);
  EXPECT_EQ(c.Get(v1::INTERNAL), 20000u);
}

TEST(RejectCountersTest, AppendsToAMetricsSnapshot) {
  RejectCounters c;
  c.Count(v1::VERSION_MISMATCH);
  v1::MetricsSnapshot snapshot;
  (*snapshot.mutable_counters())["steps_total"] = 5;
  c.AppendTo(&snapshot);
  EXPECT_EQ(snapshot.counters().size(), 2u);
  EXPECT_EQ(snapshot.counters().at("messages_rejected_total{code=\"VERSION_MISMATCH\"}"), 1u);
}

TEST(WireErrorTest, NamesAndConversions) {
  const WireError e{v1::BAD_TENSOR, "tensor [2] f32 needs 8 bytes, frame has 4"};
  EXPECT_EQ(e.ToString(), "BAD_TENSOR: tensor [2] f32 needs 8 bytes, frame has 4");
  EXPECT_EQ(e.ToStatus().code(), StatusCode::kCorrupt);
  EXPECT_EQ(e.ToStatus().message(), e.ToString());
  EXPECT_EQ(e.ToProto().code(), v1::BAD_TENSOR);
  EXPECT_EQ(e.ToProto().text(), e.text);
  EXPECT_EQ(ErrorCodeName(static_cast<v1::ErrorCode>(999)), "ERROR_CODE_999");
  EXPECT_EQ((WireError{v1::CACHE_FULL, ""}).ToStatus().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(e.ToStatus().wire_code(), v1::BAD_TENSOR);  // the peer's code travels on
}

}  // namespace
}  // namespace troupe
