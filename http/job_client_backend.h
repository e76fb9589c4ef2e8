// JobClientBackends: the HTTP API's way to a head's job endpoint — a fresh
// client::JobClient (its own DEALER connection) per request, behind the
// JobBackend interface of http/http_server.h, exactly the path `troupe
// submit` takes.
//
// Thread-safety: the factory may be called from any thread; each backend it
// makes is used by one request's thread.
#pragma once

#include "client/job_client.h"
#include "http/http_server.h"

namespace troupe::http {

// A factory whose backends connect with `options`; a backend's Connect
// failure comes back from the factory as its Status.
BackendFactory JobClientBackends(const client::JobClientOptions& options);

}  // namespace troupe::http
