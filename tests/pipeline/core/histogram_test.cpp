#include "pipeline/histogram.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace troupe {
namespace {

TEST(HistogramTest, CountsEachValueInTheFirstBucketThatHoldsIt) {
  Histogram h({1, 5, 10});
  for (double v : {0.5, 1.0, 1.5, 5.0, 7.0, 100.0}) h.Observe(v);
  const Histogram::Snapshot s = h.Read();
  EXPECT_EQ(s.bounds, (std::vector<double>{1, 5, 10}));
  EXPECT_EQ(s.counts, (std::vector<uint64_t>{2, 2, 1, 1}));  // <=1, <=5, <=10, +Inf
  EXPECT_EQ(s.count, 6u);
  EXPECT_DOUBLE_EQ(s.sum, 115.0);
}

TEST(HistogramTest, ObservesFromManyThreadsWithoutLosingAny) {
  Histogram h(Histogram::MillisecondBounds());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&h] {
      for (int i = 0; i < 10000; ++i) h.Observe(0.5);
    });
  }
  for (auto& t : threads) t.join();
  const Histogram::Snapshot s = h.Read();
  EXPECT_EQ(s.count, 40000u);
  EXPECT_DOUBLE_EQ(s.sum, 20000.0);
  EXPECT_EQ(Histogram::PowersOfTwo(3), (std::vector<double>{1, 2, 4, 8}));
}

}  // namespace
}  // namespace troupe
