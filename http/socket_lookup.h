// Finds this process's own sockets by address — for what cpp-httplib (0.11)
// does not expose: the socket of a request's connection (http/peer_watch.h)
// and the listening socket (whose accept backlog, fixed at 5 inside the
// library, HttpServer raises).
//
// Scans /proc/self/fd; Linux only. Thread-safe (reads only). A descriptor
// found may be closed by its owner at any time: use it only while that owner
// keeps it open (the thread serving the connection, the running server).
#pragma once

#include <string>

namespace troupe::http {

// The TCP socket connected local_addr:local_port <-> remote_addr:remote_port
// (IPv4, IPv6 or IPv4-mapped text forms), or -1.
int FindConnectedSocket(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port);

// The listening TCP socket bound to `port` (any address), or -1.
int FindListeningSocket(int port);

}  // namespace troupe::http
