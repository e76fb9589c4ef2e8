#include "http/socket_lookup.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <functional>

namespace troupe::http {
namespace {

// The text address and port of `addr`; false for non-IP families.
bool AddressOf(const sockaddr_storage& addr, std::string* ip, int* port) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text));
    *port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof(text));
    *port = ntohs(a->sin6_port);
  } else {
    return false;
  }
  *ip = text;
  return true;
}

bool Matches(const sockaddr_storage& addr, const std::string& ip, int port) {
  std::string got;
  int got_port = -1;
  if (!AddressOf(addr, &got, &got_port) || got_port != port) return false;
  return got == ip || got == "::ffff:" + ip || "::ffff:" + got == ip;
}

// The first open descriptor for which `match` holds, or -1.
int FindFd(const std::function<bool(int)>& match) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  int found = -1;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    if (match(static_cast<int>(fd))) {
      found = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
  return found;
}

bool LocalMatches(int fd, const std::string& ip, int port) {
  sockaddr_storage local{};
  socklen_t n = sizeof(local);
  return getsockname(fd, reinterpret_cast<sockaddr*>(&local), &n) == 0 && Matches(local, ip, port);
}

}  // namespace

int FindConnectedSocket(const std::string& local_addr, int local_port, const std::string& remote_addr,
                        int remote_port) {
  if (local_port <= 0 || remote_port <= 0) return -1;
  return FindFd([&](int fd) {
    if (!LocalMatches(fd, local_addr, local_port)) return false;
    sockaddr_storage remote{};
    socklen_t n = sizeof(remote);
    return getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &n) == 0 && Matches(remote, remote_addr, remote_port);
  });
}

int FindListeningSocket(int port) {
  if (port <= 0) return -1;
  return FindFd([&](int fd) {
    int listening = 0;
    socklen_t len = sizeof(listening);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) return false;
    sockaddr_storage local{};
    socklen_t n = sizeof(local);
    std::string ip;
    int got_port = -1;
    return getsockname(fd, reinterpret_cast<sockaddr*>(&local), &n) == 0 && AddressOf(local, &ip, &got_port) &&
           got_port == port;
  });
}

}  // namespace troupe::http
