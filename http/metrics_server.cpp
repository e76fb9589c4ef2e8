#include "http/metrics_server.h"

#include <httplib.h>

#include "pipeline/thread_name.h"

namespace troupe::http {

Result<std::unique_ptr<MetricsServer>> MetricsServer::Start(const std::string& host, int port,
                                                            const std::function<std::string()>& render) {
  std::unique_ptr<MetricsServer> m(new MetricsServer());
  m->server_ = std::make_unique<httplib::Server>();
  m->server_->Get("/metrics", [render](const httplib::Request&, httplib::Response& res) {
    res.set_content(render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  m->port_ = port == 0 ? m->server_->bind_to_any_port(host) : (m->server_->bind_to_port(host, port) ? port : -1);
  if (m->port_ <= 0) {
    return Status::Unavailable("metrics: cannot listen on " + host + ":" + std::to_string(port));
  }
  httplib::Server* server = m->server_.get();
  m->thread_ = std::thread([server] {
    NameThisThread("troupe-metrics");
    server->listen_after_bind();
  });
  return m;
}

MetricsServer::~MetricsServer() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace troupe::http
