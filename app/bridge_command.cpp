// `troupe bridge --from redis://HOST:PORT[/DB]?stream=S&group=G&consumer=C
// --endpoint EP [--concurrency N]`: takes jobs from a Redis stream and runs
// them on a cluster, publishing each answer to its reply stream (formats and
// guarantees: broker/broker_bridge.h; the README's `troupe bridge`).
//
// Prints one line to stdout once it consumes ("troupe bridge: consuming ..."),
// logs to stderr. SIGINT/SIGTERM: take no new jobs, finish the running ones
// (at most --drain-timeout seconds), exit 0; a second signal, or the timeout,
// exits at once, leaving the unfinished jobs pending for the next bridge
// (exactly as a crash would; nothing is lost). Exit code 1 when it cannot
// start (bad URL, Redis unreachable, a key that is not a stream).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "app/commands.h"
#include "broker/broker_bridge.h"
#include "cluster/stop_signals.h"

namespace troupe::app {
namespace {

struct BridgeFlags {
  std::string from;
  std::string endpoint;
  std::string server_key;
  std::string client_key;
  int concurrency = 8;
  double claim_idle_s = 60;
  double timeout_s = 120;
  double drain_timeout_s = 30;
};

std::string HostName() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "local";
  return buf;
}

void RunBridge(const BridgeFlags& f) {
  // Before any thread starts (the probe's ZeroMQ context has one), so all inherit the mask.
  const cluster::StopSignals signals = cluster::StopSignals::Block();
  Result<broker::RedisUrl> url = broker::ParseRedisUrl(f.from, HostName());
  if (!url.ok()) return Fail(url.status().message());
  broker::BridgeOptions options;
  options.redis = *url;
  options.head.endpoint = f.endpoint;
  options.head.server_key = f.server_key;
  options.head.client_key_file = f.client_key;
  options.head.idle_ms = static_cast<int>(f.timeout_s * 1000);
  options.head.first_reply_ms = std::min(options.head.idle_ms, 10000);
  options.concurrency = f.concurrency;
  options.claim_idle_ms = static_cast<int>(f.claim_idle_s * 1000);
  // A bad key file or endpoint fails here, not once per job.
  if (auto probe = client::JobClient::Connect(options.head); !probe.ok()) return Fail(probe.status().ToString());

  broker::BrokerBridge bridge(options);
  std::atomic<bool> stop{false};
  std::atomic<bool> finished{false};
  Status result;
  std::thread runner([&] {
    result = bridge.Run(stop, [&] {
      std::cout << "troupe bridge: consuming " << options.redis.ToString() << " into " << f.endpoint << std::endl;
    });
    finished = true;
  });
  while (!finished.load() && !signals.Wait(200)) {
  }
  if (!finished.load()) {
    stop = true;
    broker::BridgeLog("stopping: finishing " + std::to_string(bridge.running()) + " running jobs");
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int>(f.drain_timeout_s * 1000));
    bool again = false;
    while (!finished.load() && !again && std::chrono::steady_clock::now() < deadline) again = signals.Wait(200);
    if (!finished.load()) {
      // Like a crash, and as safe: the unfinished entries stay pending.
      broker::BridgeLog("leaving " + std::to_string(bridge.running()) + " running jobs pending for the next bridge");
      std::_Exit(0);
    }
  }
  runner.join();
  if (!result.ok()) return Fail("bridge: " + result.ToString());
}

}  // namespace

void RegisterBridge(CLI::App& app) {
  auto flags = std::make_shared<BridgeFlags>();
  CLI::App* cmd = app.add_subcommand("bridge", "Run jobs from a Redis stream on a cluster, answers back to Redis");
  cmd->add_option("--from", flags->from,
                  "redis://[[user]:password@]host[:port][/db][?stream=troupe:jobs&group=troupe&consumer=bridge-HOST]")
      ->required();
  cmd->add_option("--endpoint", flags->endpoint, "The head's job endpoint, e.g. tcp://127.0.0.1:5600")->required();
  cmd->add_option("--server-key", flags->server_key, "The head's CURVE public key (Z85), for a non-loopback endpoint");
  cmd->add_option("--client-key", flags->client_key, "This client's node.key (CURVE; default: a fresh key pair)");
  cmd->add_option("--concurrency", flags->concurrency, "Jobs run at once")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--claim-idle", flags->claim_idle_s,
                  "Seconds a pending entry of another (dead) bridge must be idle before this one takes it over")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  cmd->add_option("--timeout", flags->timeout_s, "Seconds without a message from the head before a job is retried")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  cmd->add_option("--drain-timeout", flags->drain_timeout_s,
                  "On SIGINT/SIGTERM, seconds to let running jobs finish before leaving them pending")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  cmd->callback([flags] { RunBridge(*flags); });
}

}  // namespace troupe::app
