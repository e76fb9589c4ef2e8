#include "http/http_server.h"

#include <httplib.h>
#include <signal.h>
#include <sys/socket.h>

#include <chrono>
#include <ctime>
#include <iostream>
#include <random>
#include <sstream>

#include "http/access.h"
#include "http/connection_pool.h"
#include "http/openai_api.h"
#include "http/peer_watch.h"
#include "http/responses.h"
#include "http/socket_lookup.h"
#include "pipeline/log.h"
#include "pipeline/text/stream_decoder.h"
#include "pipeline/thread_name.h"

namespace troupe::http {
namespace {

using json = nlohmann::json;

std::string RandomHex() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  std::ostringstream s;
  s << std::hex << (rng() & 0xffffffffffULL);
  return s.str();
}

int64_t Now() { return static_cast<int64_t>(std::time(nullptr)); }

const char* StatusText(int status) {
  switch (status) {
    case 400: return "malformed HTTP request";
    case 404: return "not found";
    case 405: return "method not allowed";
    case 413: return "the request body is too large";
    case 414: return "the request URI is too long";
    case 416: return "range not satisfiable";
    case 431: return "request header fields too large";
    case 500: return "internal server error";
    case 503: return "service unavailable";
    default: return "error";
  }
}

// A streamed answer: what the content provider needs after the handler returned.
struct Stream {
  ApiKind kind;
  ResponseMeta meta;
  bool include_usage = false;
  bool logprobs = false;
  std::vector<std::shared_ptr<JobBackend>> backends;  // one per choice
  JobBackend::Event first;                            // choice 0's first event
  bool ended = false;                                 // finished, failed or cancelled: nothing left to cancel
  std::shared_ptr<KeyUsage::Lease> lease;             // the key's running jobs (null: no key or no limit)
};

}  // namespace

HttpServer::HttpServer(HttpServerOptions options) : options_(std::move(options)) {}

HttpServer::~HttpServer() { Stop(); }

Result<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options) {
  if (!options.connect) return Status::InvalidArgument("HttpServer: no job backend");
  // A client that vanishes must not kill the process with SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  std::unique_ptr<HttpServer> s(new HttpServer(std::move(options)));
  s->server_ = std::make_unique<httplib::Server>();
  httplib::Server& srv = *s->server_;
  HttpServer* self = s.get();
  srv.new_task_queue = [self] {
    auto* pool = new ConnectionPool(self->options_.max_connections, self->options_.max_connections_per_client);
    self->pool_ = pool;
    return pool;
  };
  srv.set_payload_max_length(s->options_.max_body_bytes);
  srv.set_keep_alive_timeout(5);
  const int read_ms = std::max(1, s->options_.read_timeout_ms);
  srv.set_read_timeout(read_ms / 1000, (read_ms % 1000) * 1000);
  srv.set_write_timeout(30, 0);
  s->Routes();
  const HttpServerOptions& o = s->options_;
  if (o.port < 0 || o.port > 65535) return Status::InvalidArgument("HTTP port " + std::to_string(o.port));
  int port = o.port;
  if (port == 0) {
    port = srv.bind_to_any_port(o.host);
  } else if (!srv.bind_to_port(o.host, port)) {
    port = -1;
  }
  if (port <= 0) {
    return Status::IoError("cannot listen for HTTP on " + o.host + ":" + std::to_string(o.port) +
                           " (address in use or not local?)");
  }
  // cpp-httplib listens with a backlog of 5: a burst of connections while the
  // listener thread waits for a core overflows it, and the kernel drops SYNs
  // (the client retries after 1 s). Listening again only raises the backlog.
  const int listener = FindListeningSocket(port);
  if (listener >= 0) ::listen(listener, SOMAXCONN);
  s->port_ = port;
  httplib::Server* raw = s->server_.get();
  s->thread_ = std::thread([raw] {
    NameThisThread("troupe-http");
    raw->listen_after_bind();
  });
  return s;
}

void HttpServer::Drain() { draining_ = true; }

void HttpServer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  Drain();
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
  pool_ = nullptr;  // destroyed by the listener on its way out
  server_.reset();
}

std::optional<ApiError> HttpServer::Authorize(const httplib::Request& req, std::optional<ApiKey>* key) const {
  key->reset();
  const std::shared_ptr<const KeyRing> ring = options_.keys ? options_.keys->current() : std::make_shared<KeyRing>();
  const bool configured = options_.keys && options_.keys->configured();
  const ApiKey* who = nullptr;
  if (auto e = RequireAccess(*ring, configured, req.get_header_value("Authorization"),
                             AccessFor(req.method, req.path, IsLoopbackHost(options_.host)), &who)) {
    return e;
  }
  if (who) *key = *who;
  return std::nullopt;
}

void HttpServer::Routes() {
  httplib::Server& srv = *server_;

  // Before a request's body is read: bound the connections of one client,
  // then check its key (and the key's max_request_bytes by Content-Length).
  srv.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    auto refuse = [&](const ApiError& e) {
      SendError(res, e);
      res.set_header("Connection", "close");  // its body was not read
      return httplib::Server::HandlerResponse::Handled;
    };
    ConnectionPool* pool = pool_.load();
    if (pool && !pool->Admit(req.remote_addr)) {
      ApiError e;
      e.status = 429;
      e.type = "rate_limit_error";
      e.code = "too_many_connections";
      e.message = "too many open connections from " + req.remote_addr + " (at most " +
                  std::to_string(options_.max_connections_per_client) + ")";
      return refuse(e);
    }
    std::optional<ApiKey> key;
    if (auto e = Authorize(req, &key)) return refuse(*e);
    if (key && req.has_header("Content-Length")) {
      const uint64_t bytes = req.get_header_value<uint64_t>("Content-Length");
      if (auto e = CheckRequestBytes(*key, bytes)) return refuse(*e);
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  srv.set_error_handler(
      httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // a handler's own error
        ApiError e;
        e.status = res.status;
        e.type = res.status >= 500 ? "server_error" : "invalid_request_error";
        if (res.status == 404) {
          e.message = "unknown route: " + req.method + " " + req.path;
          e.code = "not_found";
        } else if (res.status == 413) {
          e.message = "the request body exceeds " + std::to_string(options_.max_body_bytes) + " bytes";
          e.code = "request_too_large";
        } else {
          e.message = StatusText(res.status);
        }
        SendError(res, e);
        return httplib::Server::HandlerResponse::Handled;
      }));
  srv.set_exception_handler([](const httplib::Request&, httplib::Response& res, const std::exception_ptr& ep) {
    ApiError e;
    e.status = 500;
    e.type = "server_error";
    e.code = "INTERNAL";
    e.message = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& ex) {
      e.message = std::string("internal error: ") + ex.what();
    } catch (...) {
    }
    SendError(res, e);
  });

  srv.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, ModelList(options_.model_id, Now()));
  });
  srv.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (draining_) return SendError(res, Unavailable("the server is shutting down"));
    auto backend = options_.connect();
    if (!backend.ok()) return SendError(res, Unavailable(backend.status().ToString()));
    auto metrics = (*backend)->Metrics();
    if (!metrics.ok()) return SendError(res, Unavailable(metrics.status().message()));
    auto it = metrics->gauges().find(options_.node_id + "/route_ready");
    if (it == metrics->gauges().end() || it->second < 1) {
      const std::string why =
          metrics->route_problem().empty() ? "a shard span has no live node" : metrics->route_problem();
      ApiError e = Unavailable("no route through every layer of the model: " + why, "NO_ROUTE");
      json body = ErrorBody(e);
      body["status"] = "unavailable";
      body["reason"] = why;
      return SendJson(res, 503, body);
    }
    SendJson(res, 200, json{{"status", "ok"}, {"model", options_.model_id}});
  });
  srv.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    if (draining_) return SendError(res, Unavailable("the server is shutting down"));
    auto backend = options_.connect();
    if (!backend.ok()) return SendError(res, Unavailable(backend.status().ToString()));
    auto metrics = (*backend)->Metrics();
    if (!metrics.ok()) return SendError(res, ErrorFromStatus(metrics.status()));
    res.status = 200;
    res.set_content(PrometheusText(*metrics), "text/plain; version=0.0.4; charset=utf-8");
  });

  auto completion = [this](ApiKind kind) {
    return [this, kind](const httplib::Request& req, httplib::Response& res) {
      if (draining_) return SendError(res, Unavailable("the server is shutting down"));
      std::optional<ApiKey> key;
      if (auto e = Authorize(req, &key)) return SendError(res, *e);  // keys reloaded since pre-routing
      ParsedRequest parsed;
      if (auto e = ParseRequest(kind, req.body, &parsed)) return SendError(res, *e);
      std::shared_ptr<KeyUsage::Lease> lease;  // the key's running jobs, until the answer is over
      if (key) {
        const KeyLimits& limits = key->limits;
        v1::SamplingParams* sampling = parsed.job.mutable_sampling();
        // A key's max_tokens is also its default.
        if (limits.max_tokens > 0 && !parsed.max_tokens_given && sampling->max_tokens() > limits.max_tokens) {
          sampling->set_max_tokens(static_cast<int32_t>(limits.max_tokens));
        }
        RequestFacts facts;
        facts.body_bytes = req.body.size();
        facts.max_tokens = sampling->max_tokens();
        facts.max_tokens_given = parsed.max_tokens_given;
        facts.jobs = parsed.n;
        if (limits.max_prompt_tokens > 0 && options_.count_prompt_tokens) {
          facts.prompt_tokens = options_.count_prompt_tokens(parsed.job);
        }
        if (auto e = CheckRequestLimits(*key, facts)) return SendError(res, *e);
        lease = usage_.TryAcquire(key->name, parsed.n, limits.max_concurrent_jobs);
        if (!lease) return SendError(res, ConcurrencyRefused(*key, usage_.running(key->name), parsed.n));
      }
      auto connected = options_.connect();
      if (!connected.ok())
        return SendError(res, Unavailable("cannot reach the job endpoint: " + connected.status().ToString()));
      std::vector<std::shared_ptr<JobBackend>> backends{std::move(*connected)};
      auto job_id = backends[0]->Submit(parsed.job);
      if (!job_id.ok()) return SendError(res, ErrorFromStatus(job_id.status()));
      ResponseMeta meta;
      meta.id =
          std::string(kind == ApiKind::kChat ? "chatcmpl-" : "cmpl-") + RandomHex() + "-" + std::to_string(*job_id);
      meta.created = Now();
      meta.model = options_.model_id;
      auto draining = [this] { return draining_.load(); };
      auto failed = [this](const Status& st) {
        return draining_ ? Unavailable("the server is shutting down") : ErrorFromStatus(st);
      };
      // Choices 1..n-1, once the first has its first token: its prompt is
      // then in the shards' caches, and theirs copy it (prefix reuse).
      auto more_choices = [&]() -> std::optional<ApiError> {
        for (int i = 1; i < parsed.n; ++i) {
          v1::JobSubmit job = parsed.job;
          if (job.sampling().has_seed()) job.mutable_sampling()->set_seed(job.sampling().seed() + i);
          auto more = options_.connect();
          if (!more.ok()) return Unavailable("cannot reach the job endpoint: " + more.status().ToString());
          std::shared_ptr<JobBackend> b = std::move(*more);
          auto id = b->Submit(job);
          if (!id.ok()) return failed(id.status());
          backends.push_back(std::move(b));
        }
        return std::nullopt;
      };

      if (!parsed.stream) {
        // Nothing is written until the answer is done: watch the socket to
        // notice a client that leaves meanwhile, and cancel its job.
        std::optional<PeerWatch> peer =
            PeerWatch::Find(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
        auto left = [this, &peer] { return draining_.load() || (peer && peer->Gone()); };
        struct Answer {
          std::string text;
          std::vector<v1::Token> scored;  // tokens with logprobs (an eos token is no part of the answer)
          v1::Finish finish;
          v1::PromptLogprobs prompt;  // echo
          bool done = false;
        };
        std::vector<Answer> answers(parsed.n);
        std::vector<v1::Token> beam_sequences;
        // Reads choice i's events until its Finish (or, with first_only, its first token).
        auto read = [&](size_t i, bool first_only) -> std::optional<ApiError> {
          Answer& a = answers[i];
          while (!a.done) {
            auto ev = backends[i]->Next(left);
            if (!ev.ok()) return failed(ev.status());
            if (ev->has_prompt_logprobs) a.prompt = std::move(ev->prompt_logprobs);
            if (ev->has_token && ev->token.has_beam_sequence()) {  // one returned sequence, whole
              beam_sequences.push_back(std::move(ev->token));
            } else if (ev->has_token) {
              a.text += ev->token.text();
              if (ev->token.has_logprob() && !ev->token.eos()) a.scored.push_back(std::move(ev->token));
              if (first_only) return std::nullopt;
            }
            if (ev->has_finish) {
              a.finish = std::move(ev->finish);
              a.done = true;
            }
          }
          return std::nullopt;
        };
        if (parsed.n > 1) {
          if (auto e = read(0, true)) return SendError(res, *e);
          if (auto e = more_choices()) return SendError(res, *e);
        }
        std::vector<ChoiceAnswer> choices;
        if (parsed.beams) {  // one job, one choice per returned sequence, best first
          if (auto e = read(0, false)) return SendError(res, *e);
          uint64_t generated = 0;
          for (const v1::Token& t : beam_sequences) generated += t.beam_sequence().token_ids_size();
          for (const v1::Token& t : beam_sequences) {
            v1::Finish finish = answers[0].finish;
            finish.set_reason(t.eos() ? v1::FINISH_EOS : v1::FINISH_LENGTH);
            finish.set_generated_tokens(static_cast<uint32_t>(choices.empty() ? generated : 0));
            choices.push_back({t.text(), finish, json(nullptr)});
          }
          if (choices.empty()) return SendError(res, failed(Status::Internal("beam search returned no sequence")));
          return SendJson(res, 200, CompletionResponse(kind, meta, choices));
        }
        for (size_t i = 0; i < answers.size(); ++i) {
          if (auto e = read(i, false)) return SendError(res, *e);
          Answer& a = answers[i];
          if (parsed.drop_answer) {  // echo with max_tokens 0: the prompt only
            a.text.clear();
            a.scored.clear();
            a.finish.set_generated_tokens(0);
            a.finish.set_reason(v1::FINISH_LENGTH);
          }
          const v1::PromptLogprobs* prompt = parsed.echo ? &a.prompt : nullptr;
          if (parsed.echo) {
            std::string echoed = parsed.job.prompt();
            if (parsed.job.prompt_tokens_size() > 0) {  // a token-id prompt: its bytes
              std::string bytes;
              for (const v1::PromptToken& t : a.prompt.tokens()) bytes += t.token_bytes();
              echoed.clear();
              AppendUtf8Lossy(bytes, true, &echoed);
            }
            a.text = echoed + a.text;
          }
          choices.push_back({a.text, a.finish, parsed.logprobs ? LogprobsJson(kind, a.scored, prompt) : json(nullptr)});
        }
        return SendJson(res, 200, CompletionResponse(kind, meta, choices));
      }

      // The status line waits for the first token: until then every failure
      // is still an HTTP error.
      // (JOB_QUEUED notices while the job waits for KV cache are not the start.)
      auto first = backends[0]->Next(draining);
      while (first.ok() && first->has_queued) first = backends[0]->Next(draining);
      if (!first.ok()) return SendError(res, failed(first.status()));
      if (auto e = more_choices()) return SendError(res, *e);
      auto stream = std::make_shared<Stream>();
      stream->kind = kind;
      stream->meta = meta;
      stream->include_usage = parsed.include_usage;
      stream->logprobs = parsed.logprobs;
      stream->backends = backends;
      stream->first = std::move(*first);
      stream->lease = std::move(lease);
      res.status = 200;
      res.set_header("Cache-Control", "no-cache");
      res.set_header("X-Accel-Buffering", "no");
      res.set_chunked_content_provider(
          "text/event-stream",
          [this, stream](size_t, httplib::DataSink& sink) {
            Stream& s = *stream;
            auto write = [&](const std::string& data) { return sink.write(data.data(), data.size()); };
            auto cancel = [&] {
              for (auto& b : s.backends) b->Cancel();
              s.ended = true;
              return false;  // drop the connection
            };
            auto gone = [&] { return draining_.load() || !sink.is_writable(); };
            // A choice failed mid-stream: the error as an event (the other choices end with the stream).
            auto broken = [&](const Status& st) {
              for (auto& b : s.backends) b->Cancel();
              s.ended = true;
              if (!sink.is_writable()) return false;  // the client left; Next cancelled the job
              ApiError e = draining_ ? Unavailable("the server is shutting down") : ErrorFromStatus(st);
              write(SseEvent(ErrorBody(e)));
              sink.done();
              return true;
            };
            // The choices one after the other, each chunk naming its index.
            std::vector<v1::Finish> finishes;
            for (size_t i = 0; i < s.backends.size(); ++i) {
              const int index = static_cast<int>(i);
              if (s.kind == ApiKind::kChat &&
                  !write(SseEvent(StreamChunk(s.kind, s.meta, "", nullptr, true, nullptr, index)))) {
                return cancel();
              }
              JobBackend::Event ev;
              if (i == 0) {
                ev = std::move(s.first);
              } else {
                auto next = s.backends[i]->Next(gone);
                if (!next.ok()) return broken(next.status());
                ev = std::move(*next);
              }
              while (true) {
                // With logprobs every token gets a chunk (its text may be held back: "").
                const bool scored = s.logprobs && ev.has_token && ev.token.has_logprob() && !ev.token.eos();
                if (ev.has_token && (!ev.token.text().empty() || scored)) {
                  const json logprobs = scored ? LogprobsJson(s.kind, {ev.token}) : json(nullptr);
                  if (!write(SseEvent(StreamChunk(s.kind, s.meta, ev.token.text(), nullptr, false, logprobs, index)))) {
                    return cancel();
                  }
                }
                if (ev.has_finish) {
                  finishes.push_back(ev.finish);
                  if (!write(SseEvent(StreamChunk(s.kind, s.meta, "", &ev.finish, false, nullptr, index)))) {
                    return cancel();
                  }
                  break;
                }
                auto next = s.backends[i]->Next(gone);
                if (!next.ok()) return broken(next.status());
                ev = std::move(*next);
              }
            }
            s.ended = true;
            bool ok = true;
            if (s.include_usage) ok = write(SseEvent(UsageChunk(s.kind, s.meta, finishes)));
            if (ok) ok = write("data: [DONE]\n\n");
            if (ok) sink.done();
            return ok;
          },
          [stream](bool success) {
            // The provider never ran or broke off: make sure the jobs stop.
            if (!stream->ended) {
              stream->ended = true;
              for (auto& b : stream->backends) b->Cancel();
            }
          });
    };
  };
  srv.Post("/v1/completions", completion(ApiKind::kCompletion));
  srv.Post("/v1/chat/completions", completion(ApiKind::kChat));
  // The same without the /v1 prefix, as several OpenAI-compatible servers accept.
  srv.Post("/completions", completion(ApiKind::kCompletion));
  srv.Post("/chat/completions", completion(ApiKind::kChat));
  srv.Get("/models", [this](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, ModelList(options_.model_id, Now()));
  });
  AdminRoutes();
  ConsoleRoutes();
}

namespace {

// A JobStatus as the admin routes answer it (as `troupe job status --json`).
json JobStatusJson(const v1::JobStatus& s) {
  const char* state = s.state() == v1::JOB_QUEUED      ? "queued"
                      : s.state() == v1::JOB_RUNNING   ? "running"
                      : s.state() == v1::JOB_COMPLETED ? "completed"
                      : s.state() == v1::JOB_ABORTED   ? "aborted"
                                                       : "unknown";
  json j{{"job_id", s.job_id()},
         {"state", state},
         {"queue_position", s.queue_position()},
         {"tokens", s.tokens()},
         {"priority", s.priority()}};
  if (s.state() == v1::JOB_COMPLETED) j["finish_reason"] = FinishReasonName(s.finish_reason());
  if (s.state() == v1::JOB_ABORTED) {
    j["error"] = {{"code", v1::ErrorCode_Name(s.failure().code())}, {"text", s.failure().text()}};
  }
  return j;
}

}  // namespace

void HttpServer::AdminRoutes() {
  // Pre-routing let only admin keys through to /admin/; Authorize again in
  // case the keys were reloaded meanwhile.
  server_->Post("/admin/keys/reload", [this](const httplib::Request& req, httplib::Response& res) {
    std::optional<ApiKey> key;
    if (auto e = Authorize(req, &key)) return SendError(res, *e);
    if (!options_.keys) return SendError(res, Unavailable("no keys are configured", "INTERNAL"));
    const std::string who = key ? key->name : "?";
    if (Status st = options_.keys->Reload(); !st.ok()) {
      logging::Info(logging::Cat("key reload asked by '", who, "' failed, the old keys stay: ", st.message()));
      ApiError e;
      e.status = 400;
      e.code = "invalid_key_file";
      e.message = "the keys were not reloaded (the old ones stay in force): " + st.message();
      return SendError(res, e);
    }
    std::shared_ptr<const KeyRing> ring = options_.keys->current();
    logging::Info(logging::Cat("keys reloaded by '", who, "': ", options_.keys->Describe()));
    SendJson(res, 200, json{{"reloaded", true}, {"keys", ring->size()}, {"admin_keys", ring->admins()}});
  });
  // Any job of the head's job book, by id: its status, or cancel it (the
  // answer is its status after). 404 for a job the head does not know.
  // `console`: the job id as a decimal string (JavaScript numbers lose ids above 2^53).
  auto job_route = [this](bool cancel, bool console = false) {
    return [this, cancel, console](const httplib::Request& req, httplib::Response& res) {
      std::optional<ApiKey> key;
      if (auto e = Authorize(req, &key)) return SendError(res, *e);
      uint64_t job_id = 0;
      try {
        job_id = std::stoull(req.matches[1].str());
      } catch (const std::exception&) {
        ApiError e;
        e.status = 400;
        e.code = "invalid_job_id";
        e.message = "job id '" + req.matches[1].str() + "' is not a number in [1, 2^64)";
        return SendError(res, e);
      }
      auto backend = options_.connect();
      if (!backend.ok()) return SendError(res, Unavailable(backend.status().ToString()));
      auto status = cancel ? (*backend)->CancelJob(job_id) : (*backend)->JobStatusOf(job_id);
      if (!status.ok()) return SendError(res, ErrorFromStatus(status.status()));
      if (cancel) {
        logging::Info(logging::Cat("job ", job_id, " cancelled by '", (key ? key->name : "?"), "'"));
      }
      json answer = JobStatusJson(*status);
      if (console) answer["job_id"] = std::to_string(status->job_id());
      SendJson(res, 200, answer);
    };
  };
  server_->Get(R"(/admin/jobs/(\d+))", job_route(false));
  server_->Post(R"(/admin/jobs/(\d+)/cancel)", job_route(true));
  server_->Post(R"(/api/v1/jobs/(\d+)/cancel)",
                job_route(true, /*console=*/true));  // the console's (admin too: AccessFor)
  // Drain a shard node: no new session goes to it, its running jobs move to
  // replicas (the same tokens) or finish there, then it leaves. Optional
  // body {"timeout_seconds": N} bounds the wait (default: the node's own).
  auto drain = [this](const httplib::Request& req, httplib::Response& res) {
    std::optional<ApiKey> key;
    if (auto e = Authorize(req, &key)) return SendError(res, *e);
    double timeout = 0;
    if (!req.body.empty()) {
      json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
      const bool ok = body.is_object() && (!body.contains("timeout_seconds") ||
                                           (body["timeout_seconds"].is_number() && body["timeout_seconds"] >= 0));
      if (!ok) {
        ApiError e;
        e.status = 400;
        e.code = "invalid_request";
        e.message = "the body must be a JSON object with an optional \"timeout_seconds\" >= 0";
        return SendError(res, e);
      }
      timeout = body.value("timeout_seconds", 0.0);
    }
    auto backend = options_.connect();
    if (!backend.ok()) return SendError(res, Unavailable(backend.status().ToString()));
    const std::string node = req.matches[1].str();
    auto drained = (*backend)->DrainNode(node, timeout);
    if (!drained.ok()) return SendError(res, ErrorFromStatus(drained.status()));
    logging::Info(logging::Cat("node '", node, "' drained by '", (key ? key->name : "?"), "': ", drained->text()));
    SendJson(res, 200,
             json{{"node", drained->node_id()},
                  {"moved", drained->moved()},
                  {"staying", drained->staying()},
                  {"text", drained->text()}});
  };
  server_->Post(R"(/admin/nodes/([^/]+)/drain)", drain);
  server_->Post(R"(/api/v1/nodes/([^/]+)/drain)", drain);  // the console's (admin too: AccessFor)
}

}  // namespace troupe::http
