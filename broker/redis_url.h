// RedisUrl: where `troupe bridge --from URL` finds its jobs — a Redis server,
// the stream the jobs arrive on, and the consumer group it reads them as.
//
//   redis://[[user]:password@]host[:port][/db][?stream=S&group=G&consumer=C]
//
//   host      required (a name or an IPv4 address; IPv6 in brackets)
//   port      6379
//   db        0 (SELECT db after connecting)
//   password  none (AUTH password; with a user, AUTH user password: Redis 6 ACLs)
//   stream    troupe:jobs     the stream of job entries (broker/job_entry.h)
//   group     troupe          the consumer group; created at the stream's
//                             start ("0") when missing, so jobs added before
//                             the first bridge ran are not skipped
//   consumer  bridge-<host>   this bridge's name in the group; a restarted
//                             bridge takes back its own pending entries at
//                             once, so give each bridge a stable, distinct name
//
// Percent escapes (%3A) are decoded in user, password and query values. Any
// other query key is refused, so a typo cannot silently fall back to a default.
//
// Pure: no sockets. ParseRedisUrl never throws; every failure is an
// InvalidArgument Status naming the URL's bad part.
#pragma once

#include <string>

#include "pipeline/status.h"

namespace troupe::broker {

struct RedisUrl {
  std::string host;
  int port = 6379;
  int db = 0;
  std::string user;      // empty: the default user
  std::string password;  // empty: no AUTH
  std::string stream = "troupe:jobs";
  std::string group = "troupe";
  std::string consumer;  // ParseRedisUrl fills in "bridge-" + default_host_name when absent

  // "redis://host:port/db?stream=...&group=...&consumer=..." without the
  // password (for logs).
  std::string ToString() const;
};

// Parses `url`; `local_host_name` names the default consumer ("bridge-" + it).
Result<RedisUrl> ParseRedisUrl(const std::string& url, const std::string& local_host_name);

}  // namespace troupe::broker
