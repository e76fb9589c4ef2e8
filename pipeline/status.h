// Status and Result<T>: errors as values for everything under pipeline/.
//
// A Status is either ok() or carries a code and a message that names the
// problem (and, for files, the file). Result<T> holds a T or a non-ok Status.
// Neither throws; callers test ok() and pass failures up unchanged.
//
// One code per kind of failure, so that callers decide by code, never by
// reading the message: kResourceExhausted (full) is not kUnavailable (busy
// now, retry) is not kDeadlineExceeded (waited too long) is not kOutOfRange
// (a position or size that can never fit).
//
// A Status that came off the wire (a peer's Error) also carries the peer's
// v1::ErrorCode as an opaque integer, wire_code(): pipeline/ cannot include
// Protobuf, so messages/wire_error.h writes and reads it (StatusFromError,
// WireCodeOf). 0 (ERROR_CODE_UNSPECIFIED) when the Status was made here.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace troupe {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // the caller passed something unusable
  kNotFound,           // a file, tensor, key or token that is not there
  kCorrupt,            // a file or message whose bytes contradict its format
  kUnsupported,        // well-formed but outside what Troupe implements
  kIoError,            // the operating system refused (open, mmap, read)
  kOutOfRange,         // a position or size limit was passed: a prompt longer
                       // than the context, metadata too large to hold
  kInternal,           // a bug or an exception from a library below us
  kResourceExhausted,  // a cache is full: a KV cache that cannot be
                       // allocated, a session outgrowing its reserved positions
  kUnavailable,        // not now, retry later: would block (backpressure),
                       // nothing to receive yet, a peer or node gone or busy
  kDeadlineExceeded,   // a wait ran past its limit (no answer in time)
  kCancelled,          // the caller, or the client behind it, gave up
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  // A peer's failure: `wire_code` is its v1::ErrorCode (see messages/wire_error.h).
  Status(StatusCode code, std::string message, int wire_code)
      : code_(code), message_(std::move(message)), wire_code_(wire_code) {}

  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status Corrupt(std::string m) { return {StatusCode::kCorrupt, std::move(m)}; }
  static Status Unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status DeadlineExceeded(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }
  static Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // The peer's v1::ErrorCode when this Status came off the wire, else 0.
  int wire_code() const { return wire_code_; }
  // "CORRUPT: model.gguf: tensor 'x' data runs past the end of the file"; a
  // peer's failure is its message alone, which starts with the wire code's
  // name ("CACHE_FULL: shard 'shard-1' is full").
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  int wire_code_ = 0;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}                                              // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).ok()); }  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace troupe

// Returns early from the enclosing function when `expr` (a Status) is not ok.
#define TROUPE_RETURN_IF_ERROR(expr) \
  do {                               \
    ::troupe::Status _st = (expr);   \
    if (!_st.ok()) return _st;       \
  } while (0)

#define TROUPE_CONCAT_INNER(a, b) a##b
#define TROUPE_CONCAT(a, b) TROUPE_CONCAT_INNER(a, b)
// `TROUPE_ASSIGN_OR_RETURN(auto x, MakeX());` — unwraps a Result or returns its Status.
#define TROUPE_ASSIGN_OR_RETURN(decl, expr) TROUPE_ASSIGN_OR_RETURN_IMPL(TROUPE_CONCAT(_res_, __LINE__), decl, expr)
#define TROUPE_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  decl = std::move(tmp).value()
