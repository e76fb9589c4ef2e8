#include "broker/redis_connection.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

namespace troupe::broker {
namespace {

RedisReply Copy(const redisReply* r) {
  RedisReply out;
  switch (r->type) {
    case REDIS_REPLY_STRING: out.type = RedisReply::Type::kString; break;
    case REDIS_REPLY_STATUS: out.type = RedisReply::Type::kStatus; break;
    case REDIS_REPLY_ERROR: out.type = RedisReply::Type::kError; break;
    case REDIS_REPLY_INTEGER: out.type = RedisReply::Type::kInteger; break;
    case REDIS_REPLY_ARRAY: out.type = RedisReply::Type::kArray; break;
    default: out.type = RedisReply::Type::kNil; break;
  }
  if (r->str) out.str.assign(r->str, r->len);
  out.integer = r->integer;
  if (r->type == REDIS_REPLY_ARRAY) {
    out.elements.reserve(r->elements);
    for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(Copy(r->element[i]));
  }
  return out;
}

timeval ToTimeval(int ms) { return timeval{ms / 1000, (ms % 1000) * 1000}; }

}  // namespace

Result<std::unique_ptr<RedisConnection>> RedisConnection::Connect(const RedisUrl& url, int timeout_ms) {
  std::unique_ptr<RedisConnection> c(new RedisConnection(url, timeout_ms));
  TROUPE_RETURN_IF_ERROR(c->Open());
  return c;
}

RedisConnection::~RedisConnection() { Close(); }

void RedisConnection::Close() {
  if (context_) redisFree(context_);
  context_ = nullptr;
}

Status RedisConnection::Open() {
  Close();
  const std::string where = "redis " + url_.host + ":" + std::to_string(url_.port);
  context_ = redisConnectWithTimeout(url_.host.c_str(), url_.port, ToTimeval(timeout_ms_));
  if (!context_ || context_->err) {
    const std::string why = context_ ? context_->errstr : "out of memory";
    Close();
    return Status::Unavailable(where + ": cannot connect: " + why);
  }
  if (redisSetTimeout(context_, ToTimeval(timeout_ms_)) != REDIS_OK) {
    Close();
    return Status::Unavailable(where + ": cannot set the socket timeout");
  }
  std::vector<std::vector<std::string>> setup;
  if (!url_.password.empty()) {
    setup.push_back(url_.user.empty() ? std::vector<std::string>{"AUTH", url_.password}
                                      : std::vector<std::string>{"AUTH", url_.user, url_.password});
  }
  if (url_.db != 0) setup.push_back({"SELECT", std::to_string(url_.db)});
  for (const auto& argv : setup) {
    Result<RedisReply> r = Command(argv);
    if (!r.ok()) {
      Close();
      return r.status();
    }
  }
  return Status::Ok();
}

Result<RedisReply> RedisConnection::Command(const std::vector<std::string>& argv) {
  if (!context_) TROUPE_RETURN_IF_ERROR(Open());
  std::vector<const char*> args;
  std::vector<size_t> lens;
  for (const std::string& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* reply =
      static_cast<redisReply*>(redisCommandArgv(context_, static_cast<int>(args.size()), args.data(), lens.data()));
  if (!reply) {
    const std::string why = context_->errstr;
    Close();
    return Status::Unavailable("redis " + url_.host + ":" + std::to_string(url_.port) + ": " + argv[0] + ": " + why);
  }
  RedisReply out = Copy(reply);
  freeReplyObject(reply);
  if (out.type == RedisReply::Type::kError) return Status::Internal("redis " + argv[0] + ": " + out.str);
  return out;
}

}  // namespace troupe::broker
