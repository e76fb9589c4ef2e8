#include "tests/transport/tamper_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace troupe::transport::testing {
namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

bool WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

TamperProxy::TamperProxy(int target_port) : target_port_(target_port) {
  if (pipe2(stop_pipe_, O_CLOEXEC) != 0) return;
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = Loopback(0);
  socklen_t len = sizeof(addr);
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(listen_fd_, 16) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return;
  }
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { Run(); });
}

TamperProxy::~TamperProxy() {
  if (thread_.joinable()) {
    (void)!write(stop_pipe_[1], "x", 1);
    thread_.join();
  }
  for (int fd : {listen_fd_, stop_pipe_[0], stop_pipe_[1]}) {
    if (fd >= 0) close(fd);
  }
}

void TamperProxy::Run() {
  struct Pair {
    int client;
    int server;
  };
  std::vector<Pair> pairs;
  auto close_pair = [&](size_t i) {
    close(pairs[i].client);
    close(pairs[i].server);
    pairs.erase(pairs.begin() + static_cast<long>(i));
  };
  char buf[65536];
  while (true) {
    std::vector<pollfd> fds = {{stop_pipe_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    for (const Pair& p : pairs) {
      fds.push_back({p.client, POLLIN, 0});
      fds.push_back({p.server, POLLIN, 0});
    }
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents) break;
    if (fds[1].revents & POLLIN) {
      int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      int server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in target = Loopback(target_port_);
      if (client >= 0 && connect(server, reinterpret_cast<sockaddr*>(&target), sizeof(target)) == 0) {
        pairs.push_back({client, server});
      } else {
        if (client >= 0) close(client);
        close(server);
      }
      continue;  // the pair list changed
    }
    for (size_t i = pairs.size(); i-- > 0;) {
      for (int dir = 0; dir < 2; ++dir) {
        const pollfd& f = fds[2 + 2 * i + dir];
        if (!(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t n = read(f.fd, buf, sizeof(buf));
        if (n <= 0) {
          close_pair(i);
          break;
        }
        if (dir == 0 && armed_.exchange(false)) {
          buf[n - 1] ^= 0x01;
          tampered_size_.store(static_cast<int>(n));
          tampered_.fetch_add(1);
        }
        int to = dir == 0 ? pairs[i].server : pairs[i].client;
        if (!WriteAll(to, buf, static_cast<size_t>(n))) {
          close_pair(i);
          break;
        }
      }
    }
  }
  for (size_t i = pairs.size(); i-- > 0;) close_pair(i);
}

}  // namespace troupe::transport::testing
