// PeerWatch: tells whether the client of an HTTP request has gone away (closed
// or shut down its side of the connection) while the server is still working
// on the answer — so that a non-streaming request whose client left stops its
// job instead of running it to the end.
//
// cpp-httplib (0.11) does not hand a handler its socket; the request names the
// connection's addresses, and Find() looks the socket up by that 4-tuple
// (http/socket_lookup.h), which is unique to one TCP connection.
//
// Thread-safety: one watch per request, used by the thread serving it (which
// keeps the connection, hence the descriptor, open meanwhile).
#pragma once

#include <optional>
#include <string>

namespace troupe::http {

class PeerWatch {
 public:
  // The watch of the connection local_addr:local_port <-> remote_addr:remote_port;
  // nullopt when no such socket is open in this process.
  static std::optional<PeerWatch> Find(const std::string& local_addr, int local_port, const std::string& remote_addr,
                                       int remote_port);

  // True once the peer has closed or half-closed the connection, or it failed.
  // A client that half-closes after sending its request counts as gone.
  bool Gone() const;
  int fd() const { return fd_; }

 private:
  explicit PeerWatch(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace troupe::http
