// Counter-based randomness: deterministic, in range, uniform, keyed by both
// seed and step.
#include "pipeline/sampling/counter_rng.h"

#include <set>

#include <gtest/gtest.h>

namespace troupe {
namespace {

TEST(CounterRngTest, DeterministicAndInRange) {
  for (uint64_t step = 0; step < 1000; ++step) {
    const double u = UniformAt(17, step);
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
    EXPECT_EQ(u, UniformAt(17, step));
  }
}

TEST(CounterRngTest, SeedAndStepAreNotInterchangeable) {
  EXPECT_NE(BitsAt(1, 2), BitsAt(2, 1));
  EXPECT_NE(BitsAt(0, 0), BitsAt(0, 1));
  EXPECT_NE(BitsAt(0, 0), BitsAt(1, 0));
  std::set<uint64_t> values;
  for (uint64_t seed = 0; seed < 64; ++seed) {
    for (uint64_t step = 0; step < 64; ++step) values.insert(BitsAt(seed, step));
  }
  EXPECT_EQ(values.size(), 64u * 64u);
}

TEST(CounterRngTest, RoughlyUniform) {
  const int n = 100000;
  int buckets[10] = {};
  double sum = 0.0;
  for (int step = 0; step < n; ++step) {
    const double u = UniformAt(3, static_cast<uint64_t>(step));
    sum += u;
    ++buckets[static_cast<int>(u * 10)];
  }
  EXPECT_NEAR(sum / n, 0.5, 0.005);
  for (int b : buckets) EXPECT_NEAR(b, n / 10, 500);  // ~5 sigma
}

}  // namespace
}  // namespace troupe
