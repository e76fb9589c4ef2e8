// JobClient: the client side of a head's job gateway — what `troupe submit`,
// `troupe status` and `cluster up`'s readiness probe use. A DEALER (random
// routing id) to the gateway's ROUTER: plain on loopback, CURVE when a server
// key is given (with the client's own key file, or a fresh key pair that the
// gateway's allowlist must then know).
//
// Timeouts keep a dead cluster from hanging the caller: the first answer must
// come within `first_reply_ms`, and later messages of a running job no more
// than `idle_ms` apart.
//
// Failures: a gateway Error comes back as a Status whose message is the
// error's code name and text ("CACHE_FULL: shard 'shard-1' ..."); timeouts
// as kOutOfRange naming the endpoint. Thread-safety: one thread at a time.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "messages/troupe.pb.h"
#include "pipeline/status.h"

namespace troupe::actors {

struct JobClientOptions {
  std::string endpoint;         // the head's job endpoint, "tcp://127.0.0.1:5600"
  std::string server_key;       // Z85: use CURVE with this server key
  std::string client_key_file;  // node.key of this client (CURVE); empty = a fresh pair
  int first_reply_ms = 10000;
  int idle_ms = 120000;
};

class JobClient {
 public:
  static Result<std::unique_ptr<JobClient>> Connect(const JobClientOptions& options);
  ~JobClient();
  JobClient(const JobClient&) = delete;
  JobClient& operator=(const JobClient&) = delete;

  // Submits `job` and waits for its end, calling on_token for every Token.
  // Returns the Finish record.
  Result<v1::Finish> Run(const v1::JobSubmit& job, const std::function<void(const v1::Token&)>& on_token);

  // The merged metrics of the cluster ("<node>/<name>" keys).
  Result<v1::MetricsSnapshot> Metrics();

  struct Impl;

 private:
  explicit JobClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace troupe::actors
