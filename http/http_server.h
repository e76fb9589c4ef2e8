// HttpServer: the OpenAI-compatible HTTP API of a head node (cpp-httplib).
//
//   GET  /v1/models             the served model
//   POST /v1/completions        text completion (http/openai_api.h: fields)
//   POST /v1/chat/completions   chat completion (multi-turn)
//   GET  /health                200 {"status": "ok"} while the ring can serve
//                               a job, else 503 {"status": "unavailable",
//                               "reason": why no route exists (missing
//                               layers, refused or failing links), "error"}
//   GET  /metrics               the cluster's merged metrics (what `troupe
//                               status` shows), Prometheus text format
//   GET  /, /console.js, ...    the admin console (http/console_api.cpp)
//   GET  /api/v1/...            its JSON views of the cluster
//
// `stream: true` answers with Server-Sent Events as OpenAI does: one
// `data: {chunk}` per token, flushed at once, a last chunk with the
// finish_reason (and a usage chunk with stream_options.include_usage), then
// `data: [DONE]`. The status line waits for the first token, so a refused or
// failed job still gets its HTTP error; a failure after that arrives as a
// `data: {"error": ...}` event.
//
// Every handler is a client of the head's job endpoint through a JobBackend
// (http/job_client_backend.h: a client::JobClient on the head's own job
// endpoint; tests give a stand-in): the HTTP API takes
// exactly the path `troupe submit` does. One backend per request; a client
// that disconnects mid-stream has its job cancelled (its KV cache is freed).
//
// Keys (http/access.h, http/key_store.h): with `keys` configured every
// route but GET /health needs `Authorization: Bearer KEY` (401
// invalid_api_key), /admin/ routes an admin key (403 admin_key_required),
// and each key's limits hold (429 / 413 / 400 limit_exceeded). The check
// runs before the body is read. Without keys the API is open, admin routes
// shut.
//
// Errors are OpenAI error objects ({"error": {"message", "type", "param",
// "code"}}): 400 bad JSON / fields, 401/403 keys, 404 unknown route, 413 body
// over max_body_bytes, 429 a key's limit or a full queue, 503 cluster cannot
// serve (NO_ROUTE, UNAVAILABLE, draining), 500 otherwise. Bad input never
// stops the server.
//
// Connections: each open connection has a worker thread of its own
// (http/connection_pool.h), so idle or slow clients never hold up the rest;
// a connection that sends nothing for `read_timeout_ms` (while the server
// waits for a request head or body) is closed; one client address holds at
// most `max_connections_per_client` connections, past which a request gets
// 429 and its connection is closed. A non-streaming request whose client
// closes its connection has its job cancelled, as a stream's does
// (http/peer_watch.h).
//
// Threads: cpp-httplib's listener thread plus up to `max_connections`
// workers. Start/Drain/Stop from one thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "client/job_client.h"
#include "http/key_store.h"
#include "http/key_usage.h"
#include "http/openai_api.h"
#include "messages/troupe.pb.h"
#include "pipeline/status.h"

namespace httplib {
class Server;
struct Request;
}  // namespace httplib

namespace troupe::http {

class ConnectionPool;

// One job at a time (see client::JobClient); dropping it ends its job.
class JobBackend {
 public:
  virtual ~JobBackend() = default;
  // Sends the job; its id once the head accepted it, else the refusal.
  virtual Result<uint64_t> Submit(const v1::JobSubmit& job) = 0;
  using Event = client::JobClient::Event;  // the next Token, or the Finish
  // The next Token or the Finish; `cancelled` is asked while waiting and,
  // when true, cancels the job (which then fails).
  virtual Result<Event> Next(const std::function<bool()>& cancelled) = 0;
  virtual void Cancel() = 0;
  virtual Result<v1::MetricsSnapshot> Metrics() = 0;
  // Any job's status, and cancelling any job (the admin routes); errors as
  // the head reports them (UNKNOWN_JOB).
  virtual Result<v1::JobStatus> JobStatusOf(uint64_t job_id) = 0;
  virtual Result<v1::JobStatus> CancelJob(uint64_t job_id) = 0;
  // One admin-console view as JSON (client::JobClient::Console).
  virtual Result<std::string> Console(const std::string& view, uint64_t session_id, double seconds) {
    return Status::Unsupported("this backend has no console views");
  }
  // Drains a shard node (the admin route; client::JobClient::DrainNode).
  virtual Result<v1::NodeDrainStatus> DrainNode(const std::string& node_id, double timeout_seconds) {
    return Status::Unsupported("this backend drains no nodes");
  }
};

using BackendFactory = std::function<Result<std::unique_ptr<JobBackend>>()>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;                  // 0: chosen by the OS (see HttpServer::port)
  std::string model_id;          // what /v1/models lists and responses name
  std::string node_id = "head";  // the gauge "<node_id>/route_ready" decides /health
  size_t max_body_bytes = size_t{4} << 20;
  size_t max_connections = 1024;            // worker threads; more connections wait for one
  size_t max_connections_per_client = 256;  // per remote address
  int read_timeout_ms = 10000;              // silence while reading a request before the connection closes
  BackendFactory connect;
  std::shared_ptr<KeyStore> keys;  // null: the API is open (admin routes shut)
  // Prompt tokens of a job (for a key's max_prompt_tokens); -1 when they
  // cannot be counted (the head then refuses the job itself). Null: not counted.
  std::function<int64_t(const v1::JobSubmit&)> count_prompt_tokens;
};

class HttpServer {
 public:
  // Binds and starts serving; fails naming the address when the bind fails.
  static Result<std::unique_ptr<HttpServer>> Start(HttpServerOptions options);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  const std::string& host() const { return options_.host; }

  // New requests get 503 and running jobs are cancelled at their next wait.
  void Drain();
  // Drain, stop listening, wait for the workers. Idempotent.
  void Stop();

 private:
  explicit HttpServer(HttpServerOptions options);
  void Routes();
  void AdminRoutes();
  void ConsoleRoutes();  // http/console_api.cpp
  // The key a request authenticates with (RequireAccess, http/access.h):
  // nullopt and *key set (empty when the API is open), or the error.
  std::optional<ApiError> Authorize(const httplib::Request& req, std::optional<ApiKey>* key) const;

  HttpServerOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> draining_{false};
  std::atomic<ConnectionPool*> pool_{nullptr};  // set when the listener starts
  KeyUsage usage_;                              // jobs running per key
  int port_ = 0;
  bool stopped_ = false;
};

}  // namespace troupe::http
