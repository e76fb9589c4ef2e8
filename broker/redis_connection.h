// RedisConnection: one connection to a Redis server (hiredis, blocking), with
// the URL's AUTH and SELECT done on connecting.
//
// Command() sends one command and waits for its reply, at most `timeout_ms`
// (a blocking command such as XREADGROUP BLOCK must ask for less). Failures:
//   kUnavailable  the server cannot be reached or the connection broke
//                 (the next Command() connects again first)
//   kInternal     the server answered with an error reply; the message is
//                 "redis <COMMAND>: <the server's text>" (e.g. "BUSYGROUP ...")
//
// Thread-safety: one thread at a time (a hiredis context is not shared);
// give each thread its own connection.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "broker/redis_reply.h"
#include "broker/redis_url.h"
#include "pipeline/status.h"

struct redisContext;

namespace troupe::broker {

class RedisConnection {
 public:
  static Result<std::unique_ptr<RedisConnection>> Connect(const RedisUrl& url, int timeout_ms);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  Result<RedisReply> Command(const std::vector<std::string>& argv);

 private:
  RedisConnection(RedisUrl url, int timeout_ms) : url_(std::move(url)), timeout_ms_(timeout_ms) {}
  Status Open();
  void Close();

  RedisUrl url_;
  int timeout_ms_;
  redisContext* context_ = nullptr;  // owned; null while disconnected
};

}  // namespace troupe::broker
