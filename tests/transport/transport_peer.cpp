// transport_peer: the other process in the transport tests. One mode per run;
// it reports on stdout, one line per fact ("endpoint tcp://...", "ack 10000",
// "auth-refused 400"), and dies with its parent (PR_SET_PDEATHSIG).
//
//   --mode=send     connect, send --count steps of --bytes, then "END"; wait for
//                   the listener's "ACK n", print "ack n", exit 0 (3: no ack).
//                   --pause-at=1,2 waits for any reply before those steps.
//   --mode=flood    send steps forever, never waiting; reconnect whenever the
//                   handshake is refused or the link stays blocked.
//   --mode=oversize connect and send one step of --bytes (own limit raised), idle.
//   --mode=garbage  open raw TCP connections to --port forever, each sending
//                   random bytes or a CURVE greeting followed by a forged HELLO.
//   --mode=listen   bind --endpoint, print it; --no-read never receives.
// --heartbeat-ms=N turns ZMTP heartbeats on (timeout 3N).
// Security: --key-file=DIR/node.key (+ --server-key=Z85 to connect, or
// --allow=PATH to listen) switches CURVE on.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/transport/step_messages.h"
#include "transport/link.h"
#include "transport/zap_handler.h"

namespace troupe::transport::testing {
namespace {

using Flags = std::map<std::string, std::string>;

std::string Get(const Flags& f, const std::string& name, const std::string& fallback = "") {
  auto it = f.find(name);
  return it == f.end() ? fallback : it->second;
}
int64_t GetInt(const Flags& f, const std::string& name, int64_t fallback) {
  auto it = f.find(name);
  return it == f.end() ? fallback : std::stoll(it->second);
}

int Die(const Status& st) {
  std::cout << "error " << st.ToString() << std::endl;
  return 2;
}

void SleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

Result<SecurityConfig> Security(const Flags& f) {
  if (Get(f, "key-file").empty()) return PlainSecurity();
  SecurityConfig sec;
  sec.curve = true;
  TROUPE_ASSIGN_OR_RETURN(sec.keys, ReadSecretKeyFile(Get(f, "key-file")));
  if (!Get(f, "allow").empty()) {
    TROUPE_ASSIGN_OR_RETURN(sec.allowlist, LoadAllowlist(Get(f, "allow")));
  }
  return sec;
}

// Prints connection events the tests look for; true if the handshake failed.
bool ReportEvents(Connection& c) {
  bool failed = false;
  for (const LinkEvent& e : c.DrainEvents()) {
    if (e.kind == LinkEventKind::kHandshakeFailedAuth) {
      std::cout << "auth-refused " << e.value << std::endl;
      failed = true;
    } else if (e.kind == LinkEventKind::kHandshakeFailed) {
      std::cout << "handshake-failed " << e.value << std::endl;
      failed = true;
    } else if (e.kind == LinkEventKind::kDisconnected) {
      failed = true;
    } else if (e.kind == LinkEventKind::kHandshakeSucceeded) {
      std::cout << "handshake-ok" << std::endl;
    }
  }
  return failed;
}

// Sends with backpressure: waits while the link is at its high-water mark.
Status SendBlocking(Connection& c, Frames& frames) {
  while (true) {
    Status st = c.Send(frames);
    if (!IsWouldBlock(st)) return st;
    ReportEvents(c);
    (void)c.WaitWritable(100);
  }
}

Result<std::unique_ptr<Connection>> ConnectFromFlags(zmq::context_t& ctx, const Flags& f, LinkOptions options = {}) {
  TROUPE_ASSIGN_OR_RETURN(SecurityConfig sec, Security(f));
  options.heartbeat_interval_ms = static_cast<int>(GetInt(f, "heartbeat-ms", options.heartbeat_interval_ms));
  options.heartbeat_timeout_ms = 3 * options.heartbeat_interval_ms;
  return Connection::Connect(ctx, Get(f, "endpoint"), Get(f, "id", "peer"), sec, Get(f, "server-key"), options);
}

int RunSend(const Flags& f) {
  zmq::context_t ctx;
  auto conn = ConnectFromFlags(ctx, f);
  if (!conn.ok()) return Die(conn.status());
  Connection& c = **conn;
  const int64_t count = GetInt(f, "count", 1000);
  const size_t bytes = static_cast<size_t>(GetInt(f, "bytes", kRowBf16Bytes));
  std::vector<int64_t> pauses;
  std::istringstream ps(Get(f, "pause-at"));
  for (std::string p; std::getline(ps, p, ',');) pauses.push_back(std::stoll(p));
  for (int64_t seq = 0; seq < count; ++seq) {
    for (int64_t p : pauses) {
      if (p != seq) continue;
      auto reply = c.Receive(30000);
      if (!reply.ok()) return Die(reply.status());
      std::cout << "resume " << seq << std::endl;
    }
    Frames step = MakeStep(static_cast<uint64_t>(seq), bytes);
    Status st = SendBlocking(c, step);
    if (!st.ok()) return Die(st);
  }
  Frames end = TextMessage("END");
  Status st = SendBlocking(c, end);
  if (!st.ok()) return Die(st);
  auto ack = c.Receive(static_cast<int>(GetInt(f, "ack-timeout-ms", 60000)));
  ReportEvents(c);
  if (!ack.ok()) {
    std::cout << "no-ack " << ack.status().ToString() << std::endl;
    return 3;
  }
  std::cout << "ack " << MessageText(*ack).substr(4) << std::endl;
  return 0;
}

// Floods with messages and, since libzmq gives up on a connection whose
// handshake was refused, with fresh connections (each one a new handshake for
// the listener to refuse).
int RunFlood(const Flags& f) {
  zmq::context_t ctx;
  const size_t bytes = static_cast<size_t>(GetInt(f, "bytes", kRowBf16Bytes));
  std::cout << "flooding" << std::endl;
  uint64_t seq = 0;
  while (true) {
    auto conn = ConnectFromFlags(ctx, f);
    if (!conn.ok()) return Die(conn.status());
    Connection& c = **conn;
    int blocked = 0;
    while (blocked < 50) {
      Frames step = MakeStep(seq++, bytes);
      if (IsWouldBlock(c.Send(step))) {
        ++blocked;
        SleepMs(2);
      } else {
        blocked = 0;
      }
      if (seq % 16 == 0 && ReportEvents(c)) break;
    }
  }
}

int RunOversize(const Flags& f) {
  zmq::context_t ctx;
  LinkOptions options;
  options.max_message_size = int64_t{1} << 30;
  auto conn = ConnectFromFlags(ctx, f, options);
  if (!conn.ok()) return Die(conn.status());
  const size_t bytes = static_cast<size_t>(GetInt(f, "bytes", 1 << 20));
  Frames step = MakeStep(0, bytes);
  Status st = SendBlocking(**conn, step);
  if (!st.ok()) return Die(st);
  std::cout << "sent" << std::endl;
  while (true) {
    ReportEvents(**conn);
    SleepMs(50);
  }
}

// A 64-byte ZMTP 3.0 greeting announcing CURVE, as a client.
std::string CurveGreeting() {
  std::string g(64, '\0');
  g[0] = '\xff';
  g[9] = '\x7f';
  g[10] = 3;
  g[11] = 0;
  std::string mech = "CURVE";
  g.replace(12, mech.size(), mech);
  return g;
}

int RunGarbage(const Flags& f) {
  const int port = static_cast<int>(GetInt(f, "port", 0));
  std::mt19937 rng(static_cast<unsigned>(GetInt(f, "seed", 1)));
  std::cout << "garbage" << std::endl;
  for (uint64_t n = 0;; ++n) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      std::string bytes;
      if (n % 2 == 1) {
        bytes = CurveGreeting();
        // A HELLO command frame (short, command flag) with a forged body.
        bytes += std::string("\x04\xc8\x05HELLO", 8);
        bytes.resize(bytes.size() + 194);
        for (size_t i = 72; i < bytes.size(); ++i) bytes[i] = static_cast<char>(rng());
      } else {
        bytes.resize(512);
        for (char& c : bytes) c = static_cast<char>(rng());
      }
      (void)!write(fd, bytes.data(), bytes.size());
      SleepMs(2);
    }
    close(fd);
    if (n == 0) std::cout << "connected-once" << std::endl;
  }
}

int RunListen(const Flags& f) {
  zmq::context_t ctx;
  auto sec = Security(f);
  if (!sec.ok()) return Die(sec.status());
  std::unique_ptr<ZapHandler> zap;
  if (sec->curve) {
    auto started = ZapHandler::Start(ctx, sec->allowlist);
    if (!started.ok()) return Die(started.status());
    zap = std::move(*started);
  }
  LinkOptions options;
  options.send_hwm = static_cast<int>(GetInt(f, "hwm", options.send_hwm));
  options.receive_hwm = options.send_hwm;
  options.kernel_buffer_bytes = static_cast<int>(GetInt(f, "kernel-buffer", 0));
  auto listener = Listener::Bind(ctx, Get(f, "endpoint", "tcp://127.0.0.1:*"), *sec, options);
  if (!listener.ok()) return Die(listener.status());
  std::cout << "endpoint " << (*listener)->endpoint() << std::endl;
  const bool read = Get(f, "no-read").empty();
  while (true) {
    if (!read) {
      SleepMs(100);
      continue;
    }
    auto in = (*listener)->Receive(100);
    if (!in.ok()) continue;
    (void)(*listener)->Send(in->peer, in->frames);  // echo
  }
}

}  // namespace
}  // namespace troupe::transport::testing

int main(int argc, char** argv) {
  using namespace troupe::transport::testing;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) return 4;  // the parent is already gone
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) continue;
    size_t eq = a.find('=');
    if (eq == std::string::npos) {
      flags[a.substr(2)] = "1";
    } else {
      flags[a.substr(2, eq - 2)] = a.substr(eq + 1);
    }
  }
  const std::string mode = Get(flags, "mode");
  if (mode == "send") return RunSend(flags);
  if (mode == "flood") return RunFlood(flags);
  if (mode == "oversize") return RunOversize(flags);
  if (mode == "garbage") return RunGarbage(flags);
  if (mode == "listen") return RunListen(flags);
  std::cerr << "transport_peer: unknown --mode=" << mode << "\n";
  return 1;
}
