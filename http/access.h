// Access: who may make an HTTP request, and within which limits — the one
// place the API's key checks live (the admin check too: the console and
// drain endpoints reuse RequireAccess with Access::kAdmin).
//
//   Access::kOpen   GET /health: anyone (liveness probes carry no key)
//   Access::kUser   everything else under /v1 (and /metrics, /models ...):
//                   any key in force, user or admin
//   Access::kAdmin  /admin/...: an admin key; the console's actions (POST
//                   /api/v1/...) too, and its views (GET /api/v1/...) unless
//                   the API listens on loopback (then open); the console's
//                   page itself (/, /console.*) is open
//
// With no key source configured the API is open (kUser needs nothing), but
// kAdmin still needs an admin key, so admin actions stay shut.
//
// Errors are OpenAI error objects (http/openai_api.h):
//   401 invalid_request_error / invalid_api_key   no key, a malformed
//       Authorization header, or a key not in force
//   403 invalid_request_error / admin_key_required   a user key on an admin route,
//       or no admin key configured at all
//   429 rate_limit_error / limit_exceeded        max_concurrent_jobs reached
//   413 invalid_request_error / limit_exceeded   max_request_bytes passed
//   400 invalid_request_error / limit_exceeded   max_tokens or
//       max_prompt_tokens passed
// A limit's message names the key, the limit and its value; `param` is the
// limit's name. Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "http/api_keys.h"
#include "http/openai_api.h"

namespace troupe::http {

enum class Access { kOpen, kUser, kAdmin };

// What a route needs: kOpen for GET /health and the console's page, kAdmin
// for paths under /admin/, for POSTs under /api/ (the console's drain and
// cancel) and — unless `loopback` (the API listens on a loopback address
// only) — for GETs under /api/; kUser otherwise.
Access AccessFor(std::string_view method, std::string_view path, bool loopback = false);

// Whether `host` (a bind address) is loopback: 127.0.0.0/8, ::1, localhost.
bool IsLoopbackHost(std::string_view host);

// Checks the request's Authorization header value (empty when absent)
// against `ring`. `configured`: whether any key source exists (else the API
// is open). On success sets *who to the key (nullptr when the API is open
// and no key was needed) and returns nullopt.
std::optional<ApiError> RequireAccess(const KeyRing& ring, bool configured, std::string_view authorization, Access need,
                                      const ApiKey** who);

// The facts of one request the limits look at.
struct RequestFacts {
  uint64_t body_bytes = 0;
  int64_t max_tokens = 0;  // the request's (after defaults)
  bool max_tokens_given = false;
  int64_t prompt_tokens = -1;  // -1 = unknown (not counted: the head decides)
  int64_t jobs = 1;            // choices
};

// max_request_bytes alone (before the body is parsed, from Content-Length).
std::optional<ApiError> CheckRequestBytes(const ApiKey& key, uint64_t body_bytes);
// Every limit but the concurrency one, in the order bytes, max_tokens,
// prompt tokens.
std::optional<ApiError> CheckRequestLimits(const ApiKey& key, const RequestFacts& facts);
// The error for a key at its max_concurrent_jobs with `running` jobs.
ApiError ConcurrencyRefused(const ApiKey& key, int64_t running, int64_t wanted);

}  // namespace troupe::http
