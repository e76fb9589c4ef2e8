#include "http/peer_watch.h"

#include <poll.h>

#include "http/socket_lookup.h"

namespace troupe::http {

std::optional<PeerWatch> PeerWatch::Find(const std::string& local_addr, int local_port, const std::string& remote_addr,
                                         int remote_port) {
  const int fd = FindConnectedSocket(local_addr, local_port, remote_addr, remote_port);
  if (fd < 0) return std::nullopt;
  return PeerWatch(fd);
}

bool PeerWatch::Gone() const {
  pollfd p{fd_, POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace troupe::http
