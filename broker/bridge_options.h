// BridgeOptions: what `troupe bridge` is told — where the jobs are, where the
// head is, and how many jobs run at once. Plain data.
#pragma once

#include "broker/redis_url.h"
#include "client/job_client.h"

namespace troupe::broker {

struct BridgeOptions {
  RedisUrl redis;
  client::JobClientOptions head;  // the head's job endpoint, keys and timeouts
  int concurrency = 8;            // jobs run at once (one worker and JobClient each)
  int claim_idle_ms = 60000;      // a pending entry idle this long is taken over
  int redis_timeout_ms = 5000;    // any Redis command
};

// One line "troupe bridge: <message>" to stderr; safe from any thread.
void BridgeLog(const std::string& message);

}  // namespace troupe::broker
