// Between the wire's ErrorCode and pipeline's StatusCode (messages/wire_error.h):
// a peer's code travels on unchanged; a local Status gets the code its
// StatusCode maps to.
#include "messages/wire_error.h"

#include <gtest/gtest.h>

namespace troupe {
namespace {

v1::Error Error(v1::ErrorCode code, const std::string& text) {
  v1::Error e;
  e.set_code(code);
  e.set_text(text);
  return e;
}

TEST(WireErrorTest, ToStatusMapsEveryCode) {
  struct Case {
    v1::ErrorCode wire;
    StatusCode status;
  };
  const Case cases[] = {
      {v1::BAD_HEADER, StatusCode::kCorrupt},
      {v1::BAD_FRAMES, StatusCode::kCorrupt},
      {v1::BAD_TENSOR, StatusCode::kCorrupt},
      {v1::NON_FINITE, StatusCode::kCorrupt},
      {v1::UNKNOWN_TYPE, StatusCode::kUnsupported},
      {v1::VERSION_MISMATCH, StatusCode::kUnsupported},
      {v1::WRONG_MODEL, StatusCode::kUnsupported},
      {v1::OVERSIZED, StatusCode::kOutOfRange},
      {v1::CACHE_FULL, StatusCode::kResourceExhausted},
      {v1::BAD_REQUEST, StatusCode::kInvalidArgument},
      {v1::SESSION_EXISTS, StatusCode::kInvalidArgument},
      {v1::UNKNOWN_SESSION, StatusCode::kNotFound},
      {v1::UNKNOWN_JOB, StatusCode::kNotFound},
      {v1::NO_ROUTE, StatusCode::kNotFound},
      {v1::TIMEOUT, StatusCode::kDeadlineExceeded},
      {v1::CANCELLED, StatusCode::kCancelled},
      {v1::UNAVAILABLE, StatusCode::kUnavailable},
      {v1::UNAUTHENTICATED, StatusCode::kIoError},
      {v1::INTERNAL, StatusCode::kInternal},
      {v1::ERROR_CODE_UNSPECIFIED, StatusCode::kInternal},
  };
  for (const Case& c : cases) {
    Status st = WireError{c.wire, "why"}.ToStatus();
    EXPECT_EQ(st.code(), c.status) << ErrorCodeName(c.wire);
    EXPECT_EQ(st.message(), ErrorCodeName(c.wire) + ": why");
    EXPECT_EQ(st.wire_code(), static_cast<int>(c.wire));
  }
}

TEST(WireErrorTest, StatusFromErrorKeepsThePeersCode) {
  Status st = StatusFromError(Error(v1::NO_ROUTE, "no shard serves layer 10"));
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_EQ(st.message(), "NO_ROUTE: no shard serves layer 10");  // what the CLI prints
  EXPECT_EQ(WireCodeOf(st), v1::NO_ROUTE);
  // Every known code comes back as it went out, passed up unchanged.
  for (int c = 0; c <= 100; ++c) {
    if (!v1::ErrorCode_IsValid(c) || c == v1::ERROR_CODE_UNSPECIFIED) continue;
    const auto code = static_cast<v1::ErrorCode>(c);
    Status passed_up = StatusFromError(Error(code, "x"));
    EXPECT_EQ(WireCodeOf(passed_up), code) << ErrorCodeName(code);
  }
}

TEST(WireErrorTest, WireCodeOfALocalStatusFollowsItsCode) {
  EXPECT_EQ(WireCodeOf(Status::ResourceExhausted("kv")), v1::CACHE_FULL);
  EXPECT_EQ(WireCodeOf(Status::InvalidArgument("bad")), v1::BAD_REQUEST);
  EXPECT_EQ(WireCodeOf(Status::OutOfRange("the prompt has 9000 tokens; the model's context is 8192")), v1::BAD_REQUEST);
  EXPECT_EQ(WireCodeOf(Status::DeadlineExceeded("late")), v1::TIMEOUT);
  EXPECT_EQ(WireCodeOf(Status::Cancelled("gave up")), v1::CANCELLED);
  EXPECT_EQ(WireCodeOf(Status::Unavailable("backed up")), v1::UNAVAILABLE);
  EXPECT_EQ(WireCodeOf(Status::Internal("bug")), v1::INTERNAL);
  EXPECT_EQ(WireCodeOf(Status::Corrupt("bytes")), v1::INTERNAL);
  EXPECT_EQ(WireCodeOf(Status::IoError("disk")), v1::INTERNAL);
  EXPECT_EQ(WireCodeOf(Status::NotFound("file")), v1::INTERNAL);
}

TEST(WireErrorTest, AnUnknownCarriedCodeFallsBackToTheStatusCode) {
  Status st = StatusFromError(Error(static_cast<v1::ErrorCode>(999), "from a newer peer"));
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_EQ(st.message(), "ERROR_CODE_999: from a newer peer");
  EXPECT_EQ(WireCodeOf(st), v1::INTERNAL);
  EXPECT_EQ(WireCodeOf(Status(StatusCode::kUnavailable, "x", 999)), v1::UNAVAILABLE);
}

}  // namespace
}  // namespace troupe
