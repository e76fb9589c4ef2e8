// MetricsServer: GET /metrics of one node in Prometheus text format, on a
// port of its own (node config metrics_listen) — how a shard or stage node,
// which has no HTTP API, is scraped. Anything else is 404. `render` is
// called on the server's thread for each scrape. Start binds (port 0: one
// the OS picks) and fails naming the address; the destructor stops it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "pipeline/status.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace troupe::http {

class MetricsServer {
 public:
  static Result<std::unique_ptr<MetricsServer>> Start(const std::string& host, int port,
                                                      const std::function<std::string()>& render);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  int port() const { return port_; }

 private:
  MetricsServer() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace troupe::http
