// ConnectionPool: the worker threads of the HTTP server (a cpp-httplib
// TaskQueue) — one thread per open connection, started on demand — and the
// per-client bound on connections.
//
// cpp-httplib serves each accepted connection on one worker thread from its
// first byte to its close. A fixed pool lets a few hundred idle connections
// (a request head and no body) take every worker while the rest wait in a
// queue; here a connection gets a thread of its own at once, up to
// `max_threads` (beyond that it waits for one to free up). Idle threads exit
// after `idle_exit`. A connection is counted against its client (the remote
// IP address) once its first request head has arrived — Admit(), called from
// the server's pre-routing handler on that connection's thread; the count
// drops when the connection closes. Past `max_per_client` Admit refuses.
//
// Thread-safety: enqueue/shutdown from the listener thread; Admit from a
// worker; counts and stats from any thread.
#pragma once

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace troupe::http {

class ConnectionPool : public httplib::TaskQueue {
 public:
  ConnectionPool(size_t max_threads, size_t max_per_client,
                 std::chrono::milliseconds idle_exit = std::chrono::seconds(30));
  ~ConnectionPool() override;  // shutdown()

  void enqueue(std::function<void()> fn) override;
  // Runs what is queued, then joins every worker.
  void shutdown() override;

  // On a worker, for the connection it serves: counts the connection against
  // `client` (once per connection; later calls are no-ops returning true).
  // False when `client` already holds max_per_client connections; the
  // connection is then not counted and should be answered and closed.
  bool Admit(const std::string& client);

  size_t connections_of(const std::string& client) const;
  size_t threads() const;

 private:
  void Work();
  void Finished();    // the current worker's connection closed
  void ReapLocked();  // joins workers that exited (mu_ held)

  const size_t max_threads_, max_per_client_;
  const std::chrono::milliseconds idle_exit_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::map<std::thread::id, std::thread> workers_;  // running, or exited and not yet joined
  std::vector<std::thread::id> exited_;             // left Work(); joined by ReapLocked
  size_t idle_ = 0;                                 // workers waiting for a connection
  bool shutdown_ = false;
  std::map<std::string, size_t> per_client_;
};

}  // namespace troupe::http
