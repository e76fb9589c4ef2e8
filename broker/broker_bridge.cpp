#include "broker/broker_bridge.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <iostream>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "broker/job_runner.h"
#include "broker/redis_connection.h"
#include "broker/stream_entry.h"

namespace troupe::broker {

void BridgeLog(const std::string& message) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::cerr << "troupe bridge: " << message << std::endl;
}

namespace {

using Clock = std::chrono::steady_clock;

// The heartbeat, atomic in Redis: reset the idle time of the entries among
// ARGV[3..] that are still pending for consumer ARGV[2] of group ARGV[1] —
// never taking back one another bridge has claimed meanwhile.
constexpr const char* kHeartbeatScript = R"lua(
local mine = {}
for i = 3, #ARGV do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if p[1] and p[1][2] == ARGV[2] then mine[#mine + 1] = ARGV[i] end
end
local n = #mine
if n > 0 then
  mine[n + 1] = 'JUSTID'  -- JUSTID: the delivery count stays as it is
  redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, unpack(mine))
end
return n
)lua";

// The entries handed to workers: queued, then running, until a worker is done
// with them. `held` (queued + running) is what the reader heartbeats and
// never dispatches twice.
struct WorkQueue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<StreamEntry> queued;
  std::set<std::string> held;
  bool closed = false;

  // False when `entry` is held already.
  bool Push(StreamEntry entry) {
    std::lock_guard<std::mutex> lock(mu);
    if (!held.insert(entry.id).second) return false;
    queued.push_back(std::move(entry));
    cv.notify_all();
    return true;
  }
  // Blocks for the next entry; false once closed (queued entries stay pending).
  bool Pop(StreamEntry* out) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [this] { return closed || !queued.empty(); });
    if (closed) return false;
    *out = std::move(queued.front());
    queued.pop_front();
    return true;
  }
  void Done(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu);
    held.erase(id);
    cv.notify_all();
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu);
    closed = true;
    for (const StreamEntry& e : queued) held.erase(e.id);
    queued.clear();
    cv.notify_all();
  }
  size_t HeldCount() {
    std::lock_guard<std::mutex> lock(mu);
    return held.size();
  }
  std::vector<std::string> Held() {
    std::lock_guard<std::mutex> lock(mu);
    return {held.begin(), held.end()};
  }
  // Waits until fewer than `limit` entries are held, at most `ms`.
  void WaitBelow(size_t limit, int ms) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::milliseconds(ms), [&] { return held.size() < limit; });
  }
};

}  // namespace

Status BrokerBridge::Run(const std::atomic<bool>& stop, const std::function<void()>& on_ready) {
  const RedisUrl& url = options_.redis;
  TROUPE_ASSIGN_OR_RETURN(std::unique_ptr<RedisConnection> redis,
                          RedisConnection::Connect(url, options_.redis_timeout_ms));
  // The group, at the stream's start; also after a Redis restart that lost it.
  auto create_group = [&]() -> Status {
    Result<RedisReply> created = redis->Command({"XGROUP", "CREATE", url.stream, url.group, "0", "MKSTREAM"});
    if (!created.ok() && created.status().message().find("BUSYGROUP") == std::string::npos) {
      return created.status();  // e.g. WRONGTYPE: the key holds something else than a stream
    }
    return Status::Ok();
  };
  TROUPE_RETURN_IF_ERROR(create_group());
  if (on_ready) on_ready();

  const size_t concurrency = static_cast<size_t>(std::max(1, options_.concurrency));
  WorkQueue work;
  std::vector<std::thread> workers;
  for (size_t i = 0; i < concurrency; ++i) {
    workers.emplace_back([this, &work, &stop] {
      JobRunner runner(options_, stop);
      StreamEntry entry;
      while (work.Pop(&entry)) {
        ++running_;
        runner.Handle(entry);
        --running_;
        work.Done(entry.id);
      }
    });
  }

  auto dispatch = [&work](std::vector<StreamEntry> entries) {
    for (StreamEntry& e : entries) work.Push(std::move(e));
  };
  const std::string group = url.group;
  const std::string consumer = url.consumer;
  const auto maintenance_every = std::chrono::milliseconds(std::max(100, options_.claim_idle_ms / 4));
  Clock::time_point last_maintenance = Clock::now() - maintenance_every;
  bool recovering = true;  // first this consumer's own pending entries (a restart)
  std::string recover_after = "0";
  std::string claim_cursor = "0-0";
  int failures = 0;

  // One round of the reader; a Redis failure is returned and retried.
  auto round = [&]() -> Status {
    const size_t held = work.HeldCount();
    const size_t free = held < concurrency ? concurrency - held : 0;
    if (Clock::now() - last_maintenance >= maintenance_every) {
      last_maintenance = Clock::now();
      std::vector<std::string> ids = work.Held();
      if (!ids.empty()) {  // heartbeat: keep our running entries from being claimed
        std::vector<std::string> argv{"EVAL", kHeartbeatScript, "1", url.stream, group, consumer};
        argv.insert(argv.end(), ids.begin(), ids.end());
        TROUPE_RETURN_IF_ERROR(redis->Command(argv).status());
      }
      if (free > 0 && !stop.load()) {
        TROUPE_ASSIGN_OR_RETURN(RedisReply r, redis->Command({"XAUTOCLAIM", url.stream, group, consumer,
                                                              std::to_string(options_.claim_idle_ms), claim_cursor,
                                                              "COUNT", std::to_string(free)}));
        TROUPE_ASSIGN_OR_RETURN(AutoClaim claimed, ParseAutoClaim(r));
        claim_cursor = claimed.next_cursor;
        for (const StreamEntry& e : claimed.entries) BridgeLog("took over pending entry " + e.id);
        dispatch(std::move(claimed.entries));
        return Status::Ok();
      }
    }
    if (stop.load()) {
      work.WaitBelow(1, 200);
      return Status::Ok();
    }
    if (free == 0) {
      work.WaitBelow(concurrency, 200);
      return Status::Ok();
    }
    const std::string n = std::to_string(free);
    if (recovering) {
      TROUPE_ASSIGN_OR_RETURN(RedisReply r, redis->Command({"XREADGROUP", "GROUP", group, consumer, "COUNT", n,
                                                            "STREAMS", url.stream, recover_after}));
      TROUPE_ASSIGN_OR_RETURN(std::vector<StreamEntry> mine, ParseReadGroup(r));
      if (mine.empty()) {
        recovering = false;
      } else {
        recover_after = mine.back().id;
        for (const StreamEntry& e : mine) BridgeLog("resuming own pending entry " + e.id);
        dispatch(std::move(mine));
      }
      return Status::Ok();
    }
    TROUPE_ASSIGN_OR_RETURN(RedisReply r, redis->Command({"XREADGROUP", "GROUP", group, consumer, "COUNT", n, "BLOCK",
                                                          "500", "STREAMS", url.stream, ">"}));
    TROUPE_ASSIGN_OR_RETURN(std::vector<StreamEntry> fresh, ParseReadGroup(r));
    dispatch(std::move(fresh));
    return Status::Ok();
  };

  bool closed = false;
  while (true) {
    if (stop.load() && !closed) {
      work.Close();  // no new jobs; the running ones finish
      closed = true;
    }
    if (closed && work.HeldCount() == 0) break;
    Status st = round();
    if (st.ok()) {
      failures = 0;
      continue;
    }
    BridgeLog(st.ToString() + "; retrying");
    if (st.message().find("NOGROUP") != std::string::npos) {
      BridgeLog("creating group " + url.group + " again: " + create_group().ToString());
    }
    const int delay = std::min(200 << std::min(failures++, 5), 5000);
    for (int waited = 0; waited < delay && !(stop.load() && !closed); waited += 100) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  for (std::thread& t : workers) t.join();
  return Status::Ok();
}

}  // namespace troupe::broker
