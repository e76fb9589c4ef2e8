// Status and Result<T> (pipeline/status.h): codes, names, ToString, the
// carried wire code, and the two early-return macros.
#include "pipeline/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

namespace troupe {
namespace {

TEST(Status, DefaultIsOk) {
  Status st;
  EXPECT_TRUE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kOk);
  EXPECT_EQ(st.message(), "");
  EXPECT_EQ(st.wire_code(), 0);
  EXPECT_EQ(st.ToString(), "OK");
  EXPECT_TRUE(Status::Ok().ok());
}

TEST(Status, EveryFactoryHasItsCodeAndName) {
  struct Case {
    Status status;
    StatusCode code;
    const char* name;
  };
  const Case cases[] = {
      {Status::InvalidArgument("m"), StatusCode::kInvalidArgument, "INVALID_ARGUMENT"},
      {Status::NotFound("m"), StatusCode::kNotFound, "NOT_FOUND"},
      {Status::Corrupt("m"), StatusCode::kCorrupt, "CORRUPT"},
      {Status::Unsupported("m"), StatusCode::kUnsupported, "UNSUPPORTED"},
      {Status::IoError("m"), StatusCode::kIoError, "IO_ERROR"},
      {Status::OutOfRange("m"), StatusCode::kOutOfRange, "OUT_OF_RANGE"},
      {Status::Internal("m"), StatusCode::kInternal, "INTERNAL"},
      {Status::ResourceExhausted("m"), StatusCode::kResourceExhausted, "RESOURCE_EXHAUSTED"},
      {Status::Unavailable("m"), StatusCode::kUnavailable, "UNAVAILABLE"},
      {Status::DeadlineExceeded("m"), StatusCode::kDeadlineExceeded, "DEADLINE_EXCEEDED"},
      {Status::Cancelled("m"), StatusCode::kCancelled, "CANCELLED"},
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(c.status.ok()) << c.name;
    EXPECT_EQ(c.status.code(), c.code) << c.name;
    EXPECT_STREQ(status_code_name(c.code), c.name);
    EXPECT_EQ(c.status.message(), "m") << c.name;
    EXPECT_EQ(c.status.ToString(), std::string(c.name) + ": m");
    EXPECT_EQ(c.status.wire_code(), 0) << c.name << ": made here, nothing carried";
  }
  EXPECT_STREQ(status_code_name(StatusCode::kOk), "OK");
  EXPECT_STREQ(status_code_name(static_cast<StatusCode>(999)), "UNKNOWN");
}

TEST(Status, ToStringNamesTheProblem) {
  EXPECT_EQ(Status::Corrupt("model.gguf: tensor 'x' data runs past the end of the file").ToString(),
            "CORRUPT: model.gguf: tensor 'x' data runs past the end of the file");
}

TEST(Status, CarriesAWireCodeUnchanged) {
  // 24 is CACHE_FULL on the wire; pipeline/ only stores it.
  Status st(StatusCode::kResourceExhausted, "CACHE_FULL: shard 'shard-1' is full", 24);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(st.wire_code(), 24);
  EXPECT_EQ(st.ToString(), "CACHE_FULL: shard 'shard-1' is full");  // the wire code names it
  Status copy = st;
  EXPECT_EQ(copy.wire_code(), 24);
  Status moved = std::move(copy);
  EXPECT_EQ(moved.wire_code(), 24);
}

Status FailIf(bool fail, StatusCode code = StatusCode::kUnavailable, int wire_code = 0) {
  if (fail) return Status(code, "failed", wire_code);
  return Status::Ok();
}

Result<int> Half(int n) {
  if (n % 2 != 0) return Status::InvalidArgument(std::to_string(n) + " is odd");
  return n / 2;
}

Status Chain(bool fail, int* reached) {
  *reached = 0;
  TROUPE_RETURN_IF_ERROR(FailIf(fail, StatusCode::kCancelled, 28));
  *reached = 1;
  return Status::Ok();
}

TEST(StatusMacros, ReturnIfErrorPassesTheSameStatusUp) {
  int reached = -1;
  EXPECT_TRUE(Chain(false, &reached).ok());
  EXPECT_EQ(reached, 1);
  Status st = Chain(true, &reached);
  EXPECT_EQ(reached, 0);
  EXPECT_EQ(st.code(), StatusCode::kCancelled);
  EXPECT_EQ(st.message(), "failed");
  EXPECT_EQ(st.wire_code(), 28);
}

Result<int> Quarter(int n) {
  TROUPE_ASSIGN_OR_RETURN(int half, Half(n));
  TROUPE_ASSIGN_OR_RETURN(auto quarter, Half(half));
  return quarter;
}

Status QuarterInto(int n, int* out) {
  TROUPE_ASSIGN_OR_RETURN(*out, Quarter(n));
  return Status::Ok();
}

TEST(StatusMacros, AssignOrReturnUnwrapsOrReturns) {
  Result<int> q = Quarter(12);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(*q, 3);
  Result<int> odd = Quarter(6);  // 6 / 2 = 3 is odd
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(odd.status().message(), "3 is odd");
  int out = -1;
  EXPECT_TRUE(QuarterInto(8, &out).ok());
  EXPECT_EQ(out, 2);
  EXPECT_EQ(QuarterInto(7, &out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(out, 2);  // untouched on failure
}

TEST(Result, HoldsAValueOrAStatus) {
  Result<std::string> v = std::string("ok");
  EXPECT_TRUE(v.ok());
  EXPECT_TRUE(v.status().ok());
  EXPECT_EQ(v.value(), "ok");
  EXPECT_EQ(v->size(), 2u);
  Result<std::string> e = Status::DeadlineExceeded("no answer within 10 s");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kDeadlineExceeded);
  // Move-only values move out.
  Result<std::unique_ptr<int>> p = std::make_unique<int>(7);
  std::unique_ptr<int> taken = std::move(p).value();
  EXPECT_EQ(*taken, 7);
}

}  // namespace
}  // namespace troupe
