#include "client/job_client.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>
#include <sstream>

#include <zmq.hpp>

#include "messages/envelope_codec.h"
#include "messages/protocol.h"
#include "messages/wire_error.h"
#include "pipeline/text/stream_decoder.h"
#include "transport/keys.h"
#include "transport/link.h"
#include "transport/security.h"

namespace troupe::client {

struct JobClient::Impl {
  JobClientOptions options;
  zmq::context_t context{1};
  std::unique_ptr<transport::Connection> connection;
  uint64_t next_request = 0;
  // The job of Submit/Next: its request id, its id (0 until accepted), and
  // whether it still runs.
  uint64_t job_request = 0;
  uint64_t job_id = 0;
  bool job_running = false;
  uint32_t next_index = 0;  // the index the job's next Token must carry
  v1::JobSubmit submitted;  // the job of Submit, to send again (Resume)
  // The link dropped (a head restarted) and came back: the job is followed
  // again (Resume), at most kMaxResumes times per job.
  bool link_lost = false, link_back = false;
  int resumes = 0;
  static constexpr int kMaxResumes = 8;

  ~Impl() { connection.reset(); }

  Status Send(const v1::Envelope& env) {
    transport::Frames frames;
    frames.push_back(transport::CopyFrame(EncodeEnvelope(env)));
    // The DEALER queues while it connects; wait for room rather than fail.
    Status st = connection->Send(frames);
    if (transport::IsWouldBlock(st)) {
      TROUPE_RETURN_IF_ERROR(connection->WaitWritable(options.first_reply_ms));
      st = connection->Send(frames);
    }
    return st;
  }

  // Reads the link's events: a CURVE handshake the head's ZAP handler refused
  // (our key is not in its client allowlist, so no answer will ever come)
  // fails with UNAUTHENTICATED; a drop followed by a new handshake sets
  // link_back.
  Status CheckEvents() {
    if (!connection->monitor()) return Status::Ok();
    for (const transport::LinkEvent& ev : connection->DrainEvents()) {
      if (ev.kind == transport::LinkEventKind::kDisconnected) link_lost = true;
      if (ev.kind == transport::LinkEventKind::kHandshakeSucceeded && link_lost) link_back = true;
      if (ev.kind == transport::LinkEventKind::kHandshakeFailedAuth) {
        return WireError{v1::UNAUTHENTICATED, "the job endpoint " + options.endpoint +
                                                  " refused this client's CURVE key (not in the head's client "
                                                  "allowlist; pass --client-key with an allowed key)"}
            .ToStatus();
      }
    }
    return Status::Ok();
  }

  // The next envelope answering `request_id`, waiting at most `timeout_ms`;
  // `cancelled` (optional) is asked every 100 ms and ends the wait with
  // kCancelled. With `watch_link`, a link that dropped and came back ends the
  // wait with kUnavailable (link_back set: the caller resumes its job).
  Result<v1::Envelope> Receive(uint64_t request_id, int timeout_ms, const std::function<bool()>& cancelled = nullptr,
                               bool watch_link = false) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      if (cancelled && cancelled()) return Status::Cancelled("the caller gave up waiting");
      const bool watch = cancelled || connection->monitor();
      const int slice = watch ? static_cast<int>(std::min<int64_t>(left.count(), 100)) : static_cast<int>(left.count());
      Result<transport::Frames> frames = connection->Receive(slice);
      TROUPE_RETURN_IF_ERROR(CheckEvents());
      if (watch_link && link_back) return Status::Unavailable("the link to " + options.endpoint + " is back");
      if (!frames.ok()) {
        if (transport::IsWouldBlock(frames.status())) continue;  // the deadline ends the loop
        return frames.status();
      }
      if (frames->empty()) continue;
      WireResult<v1::Envelope> env = DecodeEnvelope((*frames)[0].data(), (*frames)[0].size(), size_t{4} << 20);
      if (!env.ok()) return Status::Corrupt("bad answer from " + options.endpoint + ": " + env.error().ToString());
      if (env->request_id() != request_id && !env->has_error()) continue;  // a stale answer
      return std::move(*env);
    }
    return Status::DeadlineExceeded("no answer from " + options.endpoint + " within " +
                                    std::to_string(timeout_ms / 1000.0).substr(0, 4) + " s (is the cluster running?)");
  }

  // After the link came back (a restarted head knows nothing of this
  // client): an accepted job is attached again from its next token; a submit
  // not answered yet is sent again when it names its job id (the head answers
  // a job id it knows as an attach, so the job never runs twice), else the
  // wait fails with UNAVAILABLE saying so.
  Status Resume() {
    link_back = link_lost = false;
    if (++resumes > kMaxResumes) {
      return WireError{v1::UNAVAILABLE, "the link to the head at " + options.endpoint + " was lost " +
                                            std::to_string(kMaxResumes) + " times during one job"}
          .ToStatus();
    }
    job_request = next_request++;
    v1::Envelope env = NewEnvelope(job_request);
    if (job_id != 0) {
      v1::JobAttach* a = env.mutable_job_attach();
      a->set_job_id(job_id);
      a->set_stream(true);
      a->set_from_index(next_index);
    } else if (submitted.job_id() != 0) {
      *env.mutable_job_submit() = submitted;
    } else {
      return WireError{v1::UNAVAILABLE, "the link to the head at " + options.endpoint +
                                            " was lost before the job was accepted; it may have been (give the "
                                            "job an id, --job-id, to make sending it again safe)"}
          .ToStatus();
    }
    return Send(env);
  }

  // One request, one answer: `env` sent under a fresh request id; the
  // answer, or the head's Error as a Status.
  Result<v1::Envelope> Ask(v1::Envelope env) {
    const uint64_t request = next_request++;
    env.set_request_id(request);
    TROUPE_RETURN_IF_ERROR(Send(env));
    TROUPE_ASSIGN_OR_RETURN(v1::Envelope answer, Receive(request, options.first_reply_ms));
    if (answer.has_error()) return StatusFromError(answer.error());
    return answer;
  }
};

namespace {

// How long a job whose head said it stops waits for the head to come back.
constexpr int kHeadBackMs = 60000;

std::string RandomClientId() {
  std::random_device rd;
  std::ostringstream s;
  s << "client-" << std::hex << rd() << rd();
  return s.str();
}

}  // namespace

JobClient::JobClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
JobClient::~JobClient() = default;

Result<std::unique_ptr<JobClient>> JobClient::Connect(const JobClientOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  transport::SecurityConfig security = transport::PlainSecurity();
  if (!options.server_key.empty()) {
    // The key itself, or the head's node.pub.
    TROUPE_ASSIGN_OR_RETURN(impl->options.server_key, transport::PublicKeyFromArgument(options.server_key));
    security.curve = true;
    if (!options.client_key_file.empty()) {
      TROUPE_ASSIGN_OR_RETURN(security.keys, transport::ReadSecretKeyFile(options.client_key_file));
    } else {
      TROUPE_ASSIGN_OR_RETURN(security.keys, transport::GenerateKeyPair());
    }
    // A client accepts no connections; the allowlist only has to be valid.
    TROUPE_RETURN_IF_ERROR(security.allowlist.Add(impl->options.server_key));
  }
  transport::LinkOptions link;
  // To tell a refused key from a silent head, and to follow a job again
  // when the head restarts.
  link.monitor = true;
  TROUPE_ASSIGN_OR_RETURN(impl->connection,
                          transport::Connection::Connect(impl->context, options.endpoint, RandomClientId(), security,
                                                         impl->options.server_key, link));
  std::random_device rd;
  impl->next_request = (static_cast<uint64_t>(rd()) << 20) | 1;
  return std::unique_ptr<JobClient>(new JobClient(std::move(impl)));
}

Result<v1::Finish> JobClient::Run(const v1::JobSubmit& job, const std::function<void(const v1::Token&)>& on_token,
                                  const std::function<void(const v1::JobStatus&)>& on_queued) {
  TROUPE_RETURN_IF_ERROR(Submit(job).status());
  return ToTheEnd(on_token, on_queued);
}

Result<v1::Finish> JobClient::ToTheEnd(const std::function<void(const v1::Token&)>& on_token,
                                       const std::function<void(const v1::JobStatus&)>& on_queued) {
  while (true) {
    TROUPE_ASSIGN_OR_RETURN(Event ev, Next(nullptr));
    if (ev.has_finish) return std::move(ev.finish);
    if (ev.has_token && on_token) on_token(ev.token);
    if (ev.has_queued && on_queued) on_queued(ev.queued);
  }
}

Result<v1::Finish> JobClient::Attach(uint64_t job_id, uint32_t from_index,
                                     const std::function<void(const v1::Token&)>& on_token,
                                     const std::function<void(const v1::JobStatus&)>& on_queued) {
  TROUPE_RETURN_IF_ERROR(Follow(job_id, from_index).status());
  return ToTheEnd(on_token, on_queued);
}

Result<v1::NodeDrainStatus> JobClient::DrainNode(const std::string& node_id, double timeout_seconds) {
  v1::Envelope env = NewEnvelope();
  env.mutable_node_drain()->set_node_id(node_id);
  env.mutable_node_drain()->set_timeout_seconds(timeout_seconds);
  TROUPE_ASSIGN_OR_RETURN(v1::Envelope answer, impl_->Ask(std::move(env)));
  if (!answer.has_node_drain_status()) return Status::Corrupt("unexpected answer to a node drain");
  return answer.node_drain_status();
}

Result<v1::JobStatus> JobClient::JobStatusOf(uint64_t job_id) {
  v1::Envelope env = NewEnvelope();
  env.mutable_job_status_query()->set_job_id(job_id);
  TROUPE_ASSIGN_OR_RETURN(v1::Envelope answer, impl_->Ask(std::move(env)));
  if (!answer.has_job_status()) return Status::Corrupt("unexpected answer to a job status query");
  return answer.job_status();
}

Result<v1::JobStatus> JobClient::CancelJob(uint64_t job_id) {
  Impl& m = *impl_;
  const uint64_t request = m.next_request++;
  v1::Envelope env = NewEnvelope(request);
  env.mutable_job_cancel()->set_job_id(job_id);
  TROUPE_RETURN_IF_ERROR(m.Send(env));
  while (true) {
    TROUPE_ASSIGN_OR_RETURN(v1::Envelope answer, m.Receive(request, m.options.first_reply_ms));
    if (answer.has_job_status()) return answer.job_status();
    if (answer.has_error() && answer.request_id() == request) return StatusFromError(answer.error());
  }
}

Result<v1::MetricsSnapshot> JobClient::Metrics() {
  v1::Envelope env = NewEnvelope();
  env.mutable_metrics_query();
  TROUPE_ASSIGN_OR_RETURN(v1::Envelope answer, impl_->Ask(std::move(env)));
  if (!answer.has_metrics_snapshot()) return Status::Corrupt("unexpected answer to a metrics query");
  return answer.metrics_snapshot();
}

Result<std::string> JobClient::Console(const std::string& view, uint64_t session_id, double seconds) {
  v1::Envelope env = NewEnvelope();
  v1::ConsoleQuery* q = env.mutable_console_query();
  q->set_view(view);
  q->set_session_id(session_id);
  q->set_seconds(seconds);
  TROUPE_ASSIGN_OR_RETURN(v1::Envelope answer, impl_->Ask(std::move(env)));
  if (!answer.has_console_view()) return Status::Corrupt("unexpected answer to a console query");
  return answer.console_view().json();
}

Result<v1::KeptSessionList> JobClient::KeptSessions() {
  v1::Envelope env = NewEnvelope();
  env.mutable_kept_session_query();
  TROUPE_ASSIGN_OR_RETURN(v1::Envelope answer, impl_->Ask(std::move(env)));
  if (!answer.has_kept_session_list()) return Status::Corrupt("unexpected answer to a kept session query");
  return answer.kept_session_list();
}

Status JobClient::CloseKeptSession(const std::string& name) {
  if (!IsValidUtf8(name)) return Status::InvalidArgument("the session name is not valid UTF-8");
  v1::Envelope env = NewEnvelope();
  env.mutable_kept_session_close()->set_name(name);
  TROUPE_ASSIGN_OR_RETURN(v1::Envelope answer, impl_->Ask(std::move(env)));
  if (!answer.has_kept_session_closed()) return Status::Corrupt("unexpected answer to a kept session close");
  return Status::Ok();
}

// Protobuf `string` fields must hold UTF-8 (a receiver drops the whole
// message otherwise): refuse such a job here, naming the field.
static Status CheckUtf8(const v1::JobSubmit& job) {
  auto check = [](const std::string& s, const std::string& what) {
    return IsValidUtf8(s) ? Status::Ok() : Status::InvalidArgument(what + " is not valid UTF-8");
  };
  TROUPE_RETURN_IF_ERROR(check(job.prompt(), "the prompt"));
  TROUPE_RETURN_IF_ERROR(check(job.system(), "the system message"));
  TROUPE_RETURN_IF_ERROR(check(job.session(), "the session name"));
  for (int i = 0; i < job.chat_size(); ++i) {
    TROUPE_RETURN_IF_ERROR(check(job.chat(i).role(), "chat message " + std::to_string(i) + "'s role"));
    TROUPE_RETURN_IF_ERROR(check(job.chat(i).content(), "chat message " + std::to_string(i)));
  }
  for (const std::string& stop : job.sampling().stop()) TROUPE_RETURN_IF_ERROR(check(stop, "a stop string"));
  return Status::Ok();
}

Result<uint64_t> JobClient::Submit(const v1::JobSubmit& job) {
  Impl& m = *impl_;
  if (m.job_running) return Status::Internal("a job is running on this client already");
  TROUPE_RETURN_IF_ERROR(CheckUtf8(job));
  m.job_request = m.next_request++;
  m.job_id = 0;
  m.next_index = 0;
  m.submitted = job;
  m.resumes = 0;
  m.link_lost = m.link_back = false;
  v1::Envelope env = NewEnvelope(m.job_request);
  *env.mutable_job_submit() = job;
  TROUPE_RETURN_IF_ERROR(m.Send(env));
  while (true) {
    Result<v1::Envelope> got = m.Receive(m.job_request, m.options.first_reply_ms, nullptr, /*watch_link=*/true);
    if (!got.ok() && m.link_back) {
      TROUPE_RETURN_IF_ERROR(m.Resume());
      continue;
    }
    TROUPE_ASSIGN_OR_RETURN(v1::Envelope answer, std::move(got));
    switch (answer.body_case()) {
      case v1::Envelope::kJobStatus:
        m.job_id = answer.job_status().job_id();
        m.job_running = true;
        return m.job_id;
      case v1::Envelope::kError: return StatusFromError(answer.error());
      case v1::Envelope::kFinish:  // never before the acceptance
        return Status::Corrupt("a job finished before it was accepted");
      default: break;
    }
  }
}

Result<uint64_t> JobClient::Follow(uint64_t job_id, uint32_t from_index) {
  Impl& m = *impl_;
  if (m.job_running) return Status::Internal("a job is running on this client already");
  m.job_request = m.next_request++;
  m.job_id = 0;
  m.next_index = from_index;
  m.submitted.Clear();
  m.resumes = 0;
  m.link_lost = m.link_back = false;
  v1::Envelope env = NewEnvelope(m.job_request);
  v1::JobAttach* a = env.mutable_job_attach();
  a->set_job_id(job_id);
  a->set_stream(true);
  a->set_from_index(from_index);
  TROUPE_RETURN_IF_ERROR(m.Send(env));
  while (true) {
    Result<v1::Envelope> got = m.Receive(m.job_request, m.options.first_reply_ms, nullptr, /*watch_link=*/true);
    if (!got.ok() && m.link_back) {
      m.job_id = job_id;  // (Resume attaches it again)
      TROUPE_RETURN_IF_ERROR(m.Resume());
      m.job_id = 0;
      continue;
    }
    TROUPE_ASSIGN_OR_RETURN(v1::Envelope answer, std::move(got));
    if (answer.has_job_status()) {
      m.job_id = answer.job_status().job_id();
      m.job_running = true;
      return m.job_id;
    }
    if (answer.has_error()) return StatusFromError(answer.error());
  }
}

Result<JobClient::Event> JobClient::Next(const std::function<bool()>& cancelled) {
  Impl& m = *impl_;
  if (!m.job_running) return Status::Internal("no job is running on this client");
  // A head that stops says UNAVAILABLE (retryable) to its watchers: the
  // job waits in its journal, so wait (a while) for the head to come back.
  std::optional<Status> stopped;
  while (true) {
    const int wait_ms = stopped ? std::min(m.options.idle_ms, kHeadBackMs) : m.options.idle_ms;
    Result<v1::Envelope> answer = m.Receive(m.job_request, wait_ms, cancelled, /*watch_link=*/true);
    if (!answer.ok() && m.link_back) {
      TROUPE_RETURN_IF_ERROR(m.Resume());
      stopped.reset();
      continue;
    }
    if (!answer.ok() && stopped && answer.status().code() == StatusCode::kDeadlineExceeded) {
      m.job_running = false;
      return *stopped;
    }
    if (!answer.ok()) {
      if (answer.status().code() == StatusCode::kCancelled) {
        Cancel();
        // Reported as the head reports a cancelled job.
        return WireError{v1::CANCELLED, "job " + std::to_string(m.job_id) + " was cancelled by its client"}.ToStatus();
      }
      m.job_running = false;
      return answer.status();
    }
    Event ev;
    switch (answer->body_case()) {
      case v1::Envelope::kJobStatus:
        if (answer->job_status().state() != v1::JOB_QUEUED) break;
        ev.has_queued = true;  // still waiting for KV cache
        ev.queued = std::move(*answer->mutable_job_status());
        return ev;
      case v1::Envelope::kToken:
        // Tokens come in order, numbered from 0: a gap means the stream lost some.
        if (answer->token().index() < m.next_index) break;  // had it already (a resumed stream)
        if (answer->token().index() != m.next_index) {
          return Status::Corrupt("token " + std::to_string(answer->token().index()) + " of job " +
                                 std::to_string(m.job_id) + " arrived where token " + std::to_string(m.next_index) +
                                 " was due");
        }
        ++m.next_index;
        ev.has_token = true;
        ev.token = std::move(*answer->mutable_token());
        return ev;
      case v1::Envelope::kPromptLogprobs:
        ev.has_prompt_logprobs = true;
        ev.prompt_logprobs = std::move(*answer->mutable_prompt_logprobs());
        return ev;
      case v1::Envelope::kFinish:
        m.job_running = false;
        ev.has_finish = true;
        ev.finish = std::move(*answer->mutable_finish());
        return ev;
      case v1::Envelope::kError:
        if (answer->error().code() == v1::UNAVAILABLE && answer->error().retryable() && m.job_id != 0) {
          stopped = StatusFromError(answer->error());
          break;
        }
        m.job_running = false;
        return StatusFromError(answer->error());
      default: break;
    }
  }
}

void JobClient::Cancel() {
  Impl& m = *impl_;
  if (!m.job_running) return;
  m.job_running = false;
  if (m.job_id == 0) return;  // never accepted: nothing runs
  v1::Envelope env = NewEnvelope(m.next_request++);
  env.mutable_job_cancel()->set_job_id(m.job_id);
  if (!m.Send(env).ok()) return;
  // The job's own request ends with the head's CANCELLED error (or its
  // Finish, when it ended meanwhile).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (std::chrono::steady_clock::now() < deadline) {
    Result<v1::Envelope> answer = m.Receive(m.job_request, 200);
    if (!answer.ok()) {
      if (answer.status().code() == StatusCode::kDeadlineExceeded) continue;
      return;
    }
    if (answer->has_error() || answer->has_finish()) return;
  }
}

}  // namespace troupe::client
