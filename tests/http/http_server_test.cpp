// HttpServer over real loopback sockets, with a stand-in JobBackend (no
// cluster): idle connections, the per-client bound, read timeouts, and a
// non-streaming client that leaves. The server against a real cluster and the
// official client is tested in tests/python/test_http_api.py.
#include "http/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "messages/wire_error.h"

namespace troupe::http {
namespace {

using namespace std::chrono_literals;

// Stand-in for the job endpoint: accepts every job, then produces nothing
// until the server cancels it (records that it did).
struct Jobs {
  std::atomic<int> submitted{0};
  std::atomic<int> cancelled{0};
};

class StandInBackend : public JobBackend {
 public:
  explicit StandInBackend(std::shared_ptr<Jobs> jobs) : jobs_(std::move(jobs)) {}
  Result<uint64_t> Submit(const v1::JobSubmit&) override { return static_cast<uint64_t>(++jobs_->submitted); }
  Result<Event> Next(const std::function<bool()>& cancelled) override {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (cancelled && cancelled()) {
        Cancel();
        return WireError{v1::CANCELLED, "the client left"}.ToStatus();
      }
      std::this_thread::sleep_for(10ms);
    }
    return Status::DeadlineExceeded("the stand-in waited 30 s");
  }
  void Cancel() override {
    if (!done_) jobs_->cancelled++;
    done_ = true;
  }
  Result<v1::MetricsSnapshot> Metrics() override { return v1::MetricsSnapshot(); }
  Result<v1::JobStatus> JobStatusOf(uint64_t) override { return Status::Unsupported("the stand-in has no jobs"); }
  Result<v1::JobStatus> CancelJob(uint64_t) override { return Status::Unsupported("the stand-in has no jobs"); }

 private:
  std::shared_ptr<Jobs> jobs_;
  bool done_ = false;
};

// A TCP connection to 127.0.0.1:port from source address `from`.
int Connect(int port, const char* from = "127.0.0.1") {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  inet_pton(AF_INET, from, &src.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof(src)) != 0) ADD_FAILURE() << "bind " << from;
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof(dst)) != 0) ADD_FAILURE() << "connect";
  return fd;
}

void Send(int fd, const std::string& data) {
  ASSERT_EQ(send(fd, data.data(), data.size(), MSG_NOSIGNAL), ssize_t(data.size()));
}

// Everything the server sends until it closes or `timeout` passes.
std::string ReadAll(int fd, std::chrono::milliseconds timeout) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// Whether the server closed `fd` within `timeout` (after any answer it sent).
bool ClosedWithin(int fd, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    const ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
  }
}

const std::string kStalledHead =
    "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n";
const std::string kModels = "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer(HttpServerOptions o) {
    o.model_id = "stand-in";
    o.connect = [jobs = jobs_]() -> Result<std::unique_ptr<JobBackend>> {
      return std::unique_ptr<JobBackend>(new StandInBackend(jobs));
    };
    auto s = HttpServer::Start(std::move(o));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
  }
  void TearDown() override {
    for (int fd : fds_) close(fd);
    if (server_) server_->Stop();
  }
  int Open(const char* from = "127.0.0.1") {
    fds_.push_back(Connect(server_->port(), from));
    return fds_.back();
  }

  std::shared_ptr<Jobs> jobs_ = std::make_shared<Jobs>();
  std::unique_ptr<HttpServer> server_;
  std::vector<int> fds_;
};

// Fault found by trying it: 200 connections that send a request head and no
// body took every worker, and a normal request waited >= 20 s. (Opening them
// also overflowed the library's accept backlog of 5: dropped SYNs, 1 s each.)
TEST_F(HttpServerTest, TwoHundredIdleConnectionsDoNotStopTheServer) {
  StartServer(HttpServerOptions());
  for (int i = 0; i < 200; ++i) Send(Open(), kStalledHead);
  std::this_thread::sleep_for(200ms);  // let the server take them all in
  const auto t0 = std::chrono::steady_clock::now();
  int fd = Open();
  Send(fd, kModels);
  std::string reply = ReadAll(fd, 5s);
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply.substr(0, 200);
  EXPECT_NE(reply.find("stand-in"), std::string::npos);
  EXPECT_LT(waited, 2s);
}

TEST_F(HttpServerTest, AConnectionThatSendsNothingIsClosedAfterTheReadTimeout) {
  HttpServerOptions o;
  o.read_timeout_ms = 500;
  StartServer(o);
  int idle = Open();  // not even a request head
  int stalled = Open();
  Send(stalled, kStalledHead);  // a head, and no body
  // The read timeout, then at most the keep-alive wait (5 s) after an error answer.
  EXPECT_TRUE(ClosedWithin(idle, 8s));
  EXPECT_TRUE(ClosedWithin(stalled, 8s));
  EXPECT_EQ(jobs_->submitted, 0);  // a request whose body never came is never run
}

TEST_F(HttpServerTest, OneClientGetsABoundedNumberOfConnectionsAndOthersAreServed) {
  HttpServerOptions o;
  o.max_connections_per_client = 4;
  StartServer(o);
  for (int i = 0; i < 4; ++i) Send(Open("127.0.0.2"), kStalledHead);
  std::this_thread::sleep_for(200ms);
  // The fifth connection of 127.0.0.2 is refused, naming the limit, and closed.
  int fifth = Open("127.0.0.2");
  Send(fifth, kModels);
  std::string refused = ReadAll(fifth, 5s);
  EXPECT_EQ(refused.rfind("HTTP/1.1 429", 0), 0u) << refused.substr(0, 200);
  EXPECT_NE(refused.find("too many open connections from 127.0.0.2"), std::string::npos) << refused;
  // Another client is served meanwhile.
  int other = Open("127.0.0.1");
  Send(other, kModels);
  EXPECT_EQ(ReadAll(other, 5s).rfind("HTTP/1.1 200", 0), 0u);
  // Once 127.0.0.2 closes its connections it is served again.
  for (size_t i = 0; i < 5; ++i) {
    close(fds_[i]);
    fds_[i] = -1;
  }
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  std::string again;
  while (std::chrono::steady_clock::now() < deadline) {
    int fd = Open("127.0.0.2");
    Send(fd, kModels);
    again = ReadAll(fd, 5s);
    if (again.rfind("HTTP/1.1 200", 0) == 0) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(again.rfind("HTTP/1.1 200", 0), 0u) << again.substr(0, 200);
}

// Fault found by trying it: a client that left a non-streaming request kept
// its job running to the end.
TEST_F(HttpServerTest, ANonStreamingClientThatLeavesHasItsJobCancelled) {
  StartServer(HttpServerOptions());
  const std::string body = R"({"prompt": "Hello", "max_tokens": 8})";
  int fd = Open();
  Send(fd, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n\r\n" + body);
  const auto until_submitted = std::chrono::steady_clock::now() + 5s;
  while (jobs_->submitted == 0 && std::chrono::steady_clock::now() < until_submitted) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(jobs_->submitted, 1);
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(jobs_->cancelled, 0);  // the client is still there: the job runs
  close(fd);
  fds_.clear();
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (jobs_->cancelled == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(jobs_->cancelled, 1);
}

}  // namespace
}  // namespace troupe::http
