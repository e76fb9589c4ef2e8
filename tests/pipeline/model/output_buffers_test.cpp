#include "pipeline/model/output_buffers.h"

#include <gtest/gtest.h>

namespace troupe {
namespace {

TEST(OutputBuffersTest, ABufferComesBackOnlyOnceEveryViewOfItIsGone) {
  OutputBuffers pool(/*cols=*/1000);
  at::Tensor a = pool.Take(3);
  EXPECT_EQ(a.size(0), 3);
  EXPECT_EQ(a.size(1), 1000);
  EXPECT_TRUE(a.is_contiguous());
  const float* first = a.data_ptr<float>();
  at::Tensor row = a.slice(0, 1, 2);  // what a stage hands on
  a.reset();
  at::Tensor b = pool.Take(2);  // the first is still referred to by `row`
  EXPECT_NE(b.data_ptr<float>(), first);
  b.reset();
  row.reset();
  at::Tensor c = pool.Take(4);  // free again, and 4 rows fit its 4 (3 rounded up)
  EXPECT_EQ(c.data_ptr<float>(), first);
  EXPECT_EQ(c.size(0), 4);
  EXPECT_EQ(pool.pooled(), 2u);
}

TEST(OutputBuffersTest, LargeRequestsAndAFullPoolArePlainAllocations) {
  OutputBuffers pool(/*cols=*/8, /*max_pooled_rows=*/16, /*max_buffers=*/2);
  at::Tensor big = pool.Take(17);
  EXPECT_EQ(big.size(0), 17);
  EXPECT_EQ(pool.pooled(), 0u);
  at::Tensor x = pool.Take(1), y = pool.Take(1), z = pool.Take(1);  // all held
  EXPECT_EQ(pool.pooled(), 2u);
  EXPECT_NE(x.data_ptr<float>(), y.data_ptr<float>());
  EXPECT_NE(z.data_ptr<float>(), x.data_ptr<float>());
  EXPECT_NE(z.data_ptr<float>(), y.data_ptr<float>());
  x.reset();
  at::Tensor w = pool.Take(8);  // x's buffer is free but too small: a new one takes its place
  EXPECT_EQ(w.size(0), 8);
  EXPECT_EQ(pool.pooled(), 2u);
  const float* wp = w.data_ptr<float>();
  w.reset();
  at::Tensor v = pool.Take(5);
  EXPECT_EQ(v.data_ptr<float>(), wp);
}

}  // namespace
}  // namespace troupe
