// RedisReply: one reply of a Redis server (RESP2), as plain data — what
// broker/redis_connection.h returns, copied out of hiredis so that no
// hiredis type or ownership rule leaks beyond that file. Parsers of stream
// replies (broker/stream_entry.h) work on it without a server.
#pragma once

#include <string>
#include <vector>

namespace troupe::broker {

struct RedisReply {
  enum class Type { kNil, kInteger, kString, kStatus, kError, kArray };
  Type type = Type::kNil;
  long long integer = 0;             // kInteger
  std::string str;                   // kString, kStatus, kError
  std::vector<RedisReply> elements;  // kArray

  static RedisReply Nil() { return {}; }
  static RedisReply String(std::string s) {
    RedisReply r;
    r.type = Type::kString;
    r.str = std::move(s);
    return r;
  }
  static RedisReply Array(std::vector<RedisReply> e) {
    RedisReply r;
    r.type = Type::kArray;
    r.elements = std::move(e);
    return r;
  }
  bool is_nil() const { return type == Type::kNil; }
  bool is_array() const { return type == Type::kArray; }
  bool is_string() const { return type == Type::kString; }
};

}  // namespace troupe::broker
