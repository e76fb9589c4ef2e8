// TamperProxy: a man in the middle for tests. Listens on 127.0.0.1 (an
// OS-chosen port) and relays every TCP connection to a target port; when
// armed, it flips one bit in the last byte of the next chunk it relays from
// client to server, then disarms. Runs on its own thread; the destructor
// closes every connection and joins it.
#pragma once

#include <atomic>
#include <thread>

namespace troupe::transport::testing {

class TamperProxy {
 public:
  explicit TamperProxy(int target_port);
  ~TamperProxy();
  TamperProxy(const TamperProxy&) = delete;
  TamperProxy& operator=(const TamperProxy&) = delete;

  int port() const { return port_; }  // 0 if the proxy could not listen
  void ArmTamper() { armed_.store(true); }
  int tampered() const { return tampered_.load(); }
  int tampered_size() const { return tampered_size_.load(); }  // bytes in the tampered chunk

 private:
  void Run();
  int target_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  int stop_pipe_[2] = {-1, -1};
  std::atomic<bool> armed_{false};
  std::atomic<int> tampered_{0};
  std::atomic<int> tampered_size_{0};
  std::thread thread_;
};

}  // namespace troupe::transport::testing
