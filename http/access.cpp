#include "http/access.h"

namespace troupe::http {
namespace {

ApiError Unauthorized(const std::string& message) {
  ApiError e;
  e.status = 401;
  e.code = "invalid_api_key";
  e.message = message;
  return e;
}

ApiError Forbidden(const std::string& message) {
  ApiError e;
  e.status = 403;
  e.code = "admin_key_required";
  e.message = message;
  return e;
}

ApiError LimitError(int status, const ApiKey& key, const char* limit, int64_t value, const std::string& what) {
  ApiError e;
  e.status = status;
  e.type = status == 429 ? "rate_limit_error" : "invalid_request_error";
  e.code = "limit_exceeded";
  e.param = limit;
  e.message = "key '" + key.name + "': " + limit + " is " + std::to_string(value) + "; " + what;
  return e;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

Access AccessFor(std::string_view method, std::string_view path, bool loopback) {
  if (path == "/health") return Access::kOpen;
  if (method == "GET" && (path == "/" || path.rfind("/console.", 0) == 0)) return Access::kOpen;
  if (path == "/admin" || path.rfind("/admin/", 0) == 0) return Access::kAdmin;
  if (path == "/api" || path.rfind("/api/", 0) == 0) {
    return loopback && method == "GET" ? Access::kOpen : Access::kAdmin;  // actions: always the admin key
  }
  return Access::kUser;
}

bool IsLoopbackHost(std::string_view host) {
  return host.rfind("127.", 0) == 0 || host == "::1" || host == "[::1]" || host == "localhost";
}

std::optional<ApiError> RequireAccess(const KeyRing& ring, bool configured, std::string_view authorization, Access need,
                                      const ApiKey** who) {
  *who = nullptr;
  if (need == Access::kOpen) return std::nullopt;
  if (!configured && need == Access::kUser) return std::nullopt;
  if (need == Access::kAdmin && ring.admins() == 0) {
    return Forbidden(
        "this action needs an admin key, and the server has none configured (admin_key_file, or role=admin in "
        "api_key_file)");
  }
  authorization = Trim(authorization);
  if (authorization.empty()) {
    return Unauthorized(
        "You didn't provide an API key. Send it in an Authorization header: \"Authorization: Bearer YOUR_KEY\"");
  }
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.size() <= kBearer.size() || authorization.substr(0, kBearer.size()) != kBearer) {
    return Unauthorized("the Authorization header must be \"Bearer YOUR_KEY\"");
  }
  const ApiKey* key = ring.Find(Trim(authorization.substr(kBearer.size())));
  if (!key) return Unauthorized("Incorrect API key provided: it is not one of this server's keys");
  if (need == Access::kAdmin && key->role != KeyRole::kAdmin) {
    return Forbidden("key '" + key->name + "' is a user key; this action needs an admin key");
  }
  *who = key;
  return std::nullopt;
}

std::optional<ApiError> CheckRequestBytes(const ApiKey& key, uint64_t body_bytes) {
  const int64_t max = key.limits.max_request_bytes;
  if (max > 0 && body_bytes > static_cast<uint64_t>(max)) {
    return LimitError(413, key, "max_request_bytes", max,
                      "the request body has " + std::to_string(body_bytes) + " bytes");
  }
  return std::nullopt;
}

std::optional<ApiError> CheckRequestLimits(const ApiKey& key, const RequestFacts& facts) {
  if (auto e = CheckRequestBytes(key, facts.body_bytes)) return e;
  const KeyLimits& l = key.limits;
  if (l.max_tokens > 0 && facts.max_tokens_given && facts.max_tokens > l.max_tokens) {
    return LimitError(400, key, "max_tokens", l.max_tokens,
                      "the request asks for max_tokens " + std::to_string(facts.max_tokens));
  }
  if (l.max_prompt_tokens > 0 && facts.prompt_tokens > l.max_prompt_tokens) {
    return LimitError(400, key, "max_prompt_tokens", l.max_prompt_tokens,
                      "the prompt has " + std::to_string(facts.prompt_tokens) + " tokens");
  }
  return std::nullopt;
}

ApiError ConcurrencyRefused(const ApiKey& key, int64_t running, int64_t wanted) {
  return LimitError(429, key, "max_concurrent_jobs", key.limits.max_concurrent_jobs,
                    std::to_string(running) + " job(s) running, this request would add " + std::to_string(wanted));
}

}  // namespace troupe::http
