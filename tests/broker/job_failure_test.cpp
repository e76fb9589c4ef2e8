#include "broker/job_failure.h"

#include <gtest/gtest.h>

#include "messages/wire_error.h"

namespace troupe::broker {
namespace {

TEST(JobFailure, BusyAndASilentHeadAreRetried) {
  EXPECT_TRUE(ClassifyJobFailure(WireError{v1::BUSY, "queue full (1024 jobs)"}.ToStatus()).retry);
  EXPECT_TRUE(ClassifyJobFailure(Status::DeadlineExceeded("no answer from tcp://x within 10 s")).retry);
  EXPECT_TRUE(ClassifyJobFailure(Status::Unavailable("connection refused")).retry);
}

TEST(JobFailure, TheHeadsErrorsAreFinal) {
  const JobFailure f = ClassifyJobFailure(WireError{v1::CACHE_FULL, "shard 'shard-1' is full"}.ToStatus());
  EXPECT_FALSE(f.retry);
  EXPECT_EQ(f.code, "CACHE_FULL");
  EXPECT_EQ(f.text, "shard 'shard-1' is full");
  // UNAVAILABLE from the head (a node died without a replica) ends the job.
  EXPECT_FALSE(ClassifyJobFailure(WireError{v1::UNAVAILABLE, "node gone"}.ToStatus()).retry);
  EXPECT_FALSE(ClassifyJobFailure(WireError{v1::BAD_REQUEST, "max_tokens"}.ToStatus()).retry);
}

TEST(JobFailure, LocalRefusalsAreFinal) {
  const JobFailure f = ClassifyJobFailure(Status::InvalidArgument("the prompt is not valid UTF-8"));
  EXPECT_FALSE(f.retry);
  EXPECT_EQ(f.code, "BAD_REQUEST");
  EXPECT_EQ(f.text, "the prompt is not valid UTF-8");
}

TEST(JobFailure, BackoffGrowsToTenSeconds) {
  EXPECT_EQ(RetryDelayMs(0), 500);
  EXPECT_EQ(RetryDelayMs(1), 1000);
  EXPECT_EQ(RetryDelayMs(4), 8000);
  EXPECT_EQ(RetryDelayMs(5), 10000);
  EXPECT_EQ(RetryDelayMs(1000), 10000);
}

}  // namespace
}  // namespace troupe::broker
