// transport_bench: per-hop cost of moving a step between two processes over
// one DEALER -> ROUTER link — round-trip latency (median, p99) and one-way
// throughput — for the frame sizes Troupe sends, in plain mode and CURVE.
//
//   ninja transport_bench && bin/transport_bench [--transport tcp|ipc] [--quick] [--idle-us N]
//
// --idle-us N sleeps N microseconds before each round trip, as a node of a
// ring idles between its steps while the other nodes compute: the hop then
// pays for waking threads (and, on a VM, vCPUs) that have gone to sleep,
// which a back-to-back ping-pong never does.
//
// The driver starts a copy of itself as the listening process (--role server)
// for each configuration. A message is a 48-byte header frame (a stand-in for
// the Protobuf step header) plus one tensor frame sent without copying:
//   f32  [1,576]   2304 B     bf16 [1,576]   1152 B
//   int8 [1,576]    612 B (576 int8 + 18 fp16 scales)     f32 [64,576] 147456 B
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "transport/link.h"
#include "transport/zap_handler.h"

extern char** environ;

namespace troupe::transport {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kEcho = 'E';  // header[0]: send it back
constexpr char kSink = 'S';  // count it
constexpr char kEnd = 'X';   // reply "ACK <count>"
constexpr size_t kHeaderBytes = 48;

struct Size {
  const char* name;
  size_t bytes;
};
constexpr Size kSizes[] = {
    {"f32  [1,576]", 2304}, {"bf16 [1,576]", 1152}, {"int8 [1,576]", 612}, {"f32 [64,576]", 64 * 576 * 4}};

Frames Message(char kind, const std::shared_ptr<std::vector<uint8_t>>& payload) {
  Frames f;
  std::string header(kHeaderBytes, '\0');
  header[0] = kind;
  f.push_back(CopyFrame(header));
  if (payload) f.push_back(SharedFrame(payload, payload->data(), payload->size()));
  return f;
}

// ---------------------------------------------------------------- server

int RunServer(const std::string& endpoint, const std::string& key_dir) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  zmq::context_t ctx;
  SecurityConfig sec = PlainSecurity();
  std::unique_ptr<ZapHandler> zap;
  if (!key_dir.empty()) {
    auto config = CurveSecurityFromFiles(key_dir + "/server/node.key", key_dir + "/client/node.pub");
    if (!config.ok()) {
      std::cout << "error " << config.status().ToString() << std::endl;
      return 1;
    }
    sec = *config;
    zap = std::move(ZapHandler::Start(ctx, sec.allowlist).value());
  }
  LinkOptions options;
  auto l = Listener::Bind(ctx, endpoint, sec, options);
  if (!l.ok()) {
    std::cout << "error " << l.status().ToString() << std::endl;
    return 1;
  }
  std::cout << "endpoint " << (*l)->endpoint() << std::endl;
  uint64_t sunk = 0;
  while (true) {
    auto in = (*l)->Receive(-1);
    if (!in.ok()) continue;
    const char kind = static_cast<const char*>(in->frames[0].data())[0];
    if (kind == kSink) {
      ++sunk;
      continue;
    }
    Frames reply;
    if (kind == kEnd) {
      reply.push_back(CopyFrame("ACK " + std::to_string(sunk)));
      sunk = 0;
    } else {
      reply = std::move(in->frames);
    }
    while (IsWouldBlock((*l)->Send(in->peer, reply))) {
    }
  }
}

// ---------------------------------------------------------------- driver

struct Server {
  pid_t pid = -1;
  std::string endpoint;
  ~Server() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

// Starts this binary as the server and reads its endpoint.
bool StartServer(const std::string& bind, const std::string& key_dir, Server* s) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return false;
  std::string self = std::filesystem::read_symlink("/proc/self/exe");
  std::vector<std::string> args = {self, "--role", "server", "--endpoint", bind};
  if (!key_dir.empty()) {
    args.push_back("--keys");
    args.push_back(key_dir);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  int rc = posix_spawn(&s->pid, self.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    return false;
  }
  std::string line;
  char c;
  while (read(out[0], &c, 1) == 1 && c != '\n') line += c;
  close(out[0]);
  if (line.rfind("endpoint ", 0) != 0) {
    std::cerr << "server: " << line << "\n";
    return false;
  }
  s->endpoint = line.substr(9);
  return true;
}

void SendBlocking(Connection& c, Frames& f) {
  while (true) {
    Status st = c.Send(f);
    if (st.ok()) return;
    if (!IsWouldBlock(st)) {
      std::cerr << st.ToString() << "\n";
      std::exit(1);
    }
    (void)c.WaitWritable(100);
  }
}

struct Figures {
  double median_us = 0, p99_us = 0;
  double msgs_per_s = 0, mb_per_s = 0;
};

Figures Measure(Connection& c, size_t bytes, int round_trips, int one_way, int idle_us) {
  auto payload = std::make_shared<std::vector<uint8_t>>(bytes, 0x3c);
  Figures fig;
  std::vector<double> rtt;
  for (int i = -round_trips / 10; i < round_trips; ++i) {  // first 10% warm up
    if (idle_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(idle_us));
    Frames m = Message(kEcho, payload);
    auto t0 = Clock::now();
    SendBlocking(c, m);
    auto back = c.Receive(10000);
    auto t1 = Clock::now();
    if (!back.ok()) {
      std::cerr << "echo lost: " << back.status().ToString() << "\n";
      std::exit(1);
    }
    if (i >= 0) rtt.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::sort(rtt.begin(), rtt.end());
  fig.median_us = rtt[rtt.size() / 2];
  fig.p99_us = rtt[std::min(rtt.size() - 1, rtt.size() * 99 / 100)];

  auto t0 = Clock::now();
  for (int i = 0; i < one_way; ++i) {
    Frames m = Message(kSink, payload);
    SendBlocking(c, m);
  }
  Frames end = Message(kEnd, nullptr);
  SendBlocking(c, end);
  auto ack = c.Receive(60000);
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!ack.ok() || FrameView((*ack)[0]) != "ACK " + std::to_string(one_way)) {
    std::cerr << "throughput run lost messages\n";
    std::exit(1);
  }
  fig.msgs_per_s = one_way / s;
  fig.mb_per_s = fig.msgs_per_s * static_cast<double>(bytes + kHeaderBytes) / 1e6;
  return fig;
}

int RunDriver(const std::string& transport, bool quick, int idle_us) {
  std::string tmp = (std::filesystem::temp_directory_path() / "troupe-bench-XXXXXX").string();
  if (mkdtemp(tmp.data()) == nullptr) return 1;
  if (!GenerateKeyFiles(tmp + "/server").ok() || !GenerateKeyFiles(tmp + "/client").ok()) return 1;
  auto server_pub = ReadPublicKeyFile(tmp + "/server/node.pub");
  auto client_keys = ReadSecretKeyFile(tmp + "/client/node.key");

  std::printf("transport_bench: %s, one DEALER->ROUTER hop between two processes, %d us idle before each round trip\n",
              transport.c_str(), idle_us);
  std::printf("%-6s %-13s %10s %10s %10s %12s %10s\n", "mode", "frame", "rtt p50", "rtt p99", "hop p50", "msgs/s",
              "MB/s");
  for (bool curve : {false, true}) {
    for (const Size& size : kSizes) {
      const bool big = size.bytes > 100000;
      const int rounds = (quick ? 500 : 5000) / (big ? 5 : 1) / (idle_us >= 1000 ? 5 : 1);
      const int one_way = (quick ? 5000 : 50000) / (big ? 10 : 1);
      Server server;
      std::string bind = transport == "ipc" ? "ipc://" + tmp + "/bench.sock" : "tcp://127.0.0.1:*";
      if (!StartServer(bind, curve ? tmp : "", &server)) return 1;
      zmq::context_t ctx;
      SecurityConfig sec = PlainSecurity();
      std::string server_key;
      if (curve) {
        sec.curve = true;
        sec.keys = *client_keys;
        server_key = *server_pub;
      }
      auto c = Connection::Connect(ctx, server.endpoint, "bench", sec, server_key);
      if (!c.ok()) {
        std::cerr << c.status().ToString() << "\n";
        return 1;
      }
      Figures f = Measure(**c, size.bytes, rounds, one_way, idle_us);
      std::printf("%-6s %-13s %8.1fus %8.1fus %8.1fus %12.0f %10.1f\n", curve ? "curve" : "plain", size.name,
                  f.median_us, f.p99_us, f.median_us / 2, f.msgs_per_s, f.mb_per_s);
      std::fflush(stdout);
    }
  }
  std::filesystem::remove_all(tmp);
  return 0;
}

}  // namespace
}  // namespace troupe::transport

int main(int argc, char** argv) {
  CLI::App app{"Troupe transport benchmark: per-hop latency and throughput of step messages"};
  std::string role = "driver", endpoint, keys, transport = "tcp";
  bool quick = false;
  int idle_us = 0;
  app.add_option("--role", role, "driver (default) or server (started by the driver)");
  app.add_option("--endpoint", endpoint, "server: where to bind");
  app.add_option("--keys", keys, "server: key directory (CURVE)");
  app.add_option("--transport", transport, "tcp or ipc")->check(CLI::IsMember({"tcp", "ipc"}));
  app.add_flag("--quick", quick, "fewer iterations");
  app.add_option("--idle-us", idle_us, "microseconds to sleep before each round trip (a ring node's idle time)")
      ->check(CLI::Range(0, 1000000));
  CLI11_PARSE(app, argc, argv);
  if (role == "server") return troupe::transport::RunServer(endpoint, keys);
  return troupe::transport::RunDriver(transport, quick, idle_us);
}
