#include "scheduling/job_book.h"

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <iterator>
#include <utility>

#include "messages/envelope_codec.h"

namespace troupe::scheduling {
namespace {

// The job an output envelope is about; 0 for none.
uint64_t JobOf(const v1::Envelope& env) {
  switch (env.body_case()) {
    case v1::Envelope::kJobStatus: return env.job_status().job_id();
    case v1::Envelope::kToken: return env.token().job_id();
    case v1::Envelope::kPromptLogprobs: return env.prompt_logprobs().job_id();
    case v1::Envelope::kFinish: return env.finish().job_id();
    case v1::Envelope::kError: return env.error().has_job_id() ? env.error().job_id() : 0;
    default: return 0;
  }
}

}  // namespace

JobBook::JobBook(BookConfig config, std::unique_ptr<JobJournal> journal)
    : config_(std::move(config)), journal_(std::move(journal)) {}

Result<std::vector<JournaledJob>> JobBook::Recover(double now) {
  if (Status st = journal_->Expire(now - config_.retention_seconds).status(); !st.ok()) return st;
  TROUPE_ASSIGN_OR_RETURN(std::vector<JournaledJob> all, journal_->Load());
  std::vector<JournaledJob> unfinished;
  for (JournaledJob& j : all) {
    Entry& e = jobs_[j.job_id];
    e.submit = j.submit;
    e.seed = j.seed;
    if (j.finished) {
      e.ended = true;
      e.ended_at = j.finished_at;
      e.end = std::move(j.final);
      e.tokens = e.end.has_finish() ? e.end.finish().generated_tokens() : 0;
    } else {
      ++live_;
      unfinished.push_back(std::move(j));
    }
  }
  return unfinished;
}

bool JobBook::Ended(uint64_t job_id) const {
  auto it = jobs_.find(job_id);
  return it != jobs_.end() && it->second.ended;
}

bool JobBook::SameJob(uint64_t job_id, const v1::JobSubmit& submit) const {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return false;
  // Whether the answer streams is the watcher's choice, not the job's.
  v1::JobSubmit a = it->second.submit, b = submit;
  a.clear_stream();
  b.clear_stream();
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

uint64_t JobBook::NewId() {
  while (jobs_.count(++next_id_) || next_id_ == 0) {
  }
  return next_id_;
}

Status JobBook::Accept(uint64_t job_id, const v1::JobSubmit& submit, uint64_t seed, Watcher submitter, double now) {
  if (jobs_.count(job_id)) return Status::InvalidArgument("job " + std::to_string(job_id) + " is in the book already");
  TROUPE_RETURN_IF_ERROR(journal_->Accept(job_id, submit, seed, now));
  Entry& e = jobs_[job_id];
  e.submit = submit;
  e.submit.set_job_id(job_id);
  e.seed = seed;
  e.accepted_at = now;
  e.watchers.push_back(std::move(submitter));
  ++live_;
  return Status::Ok();
}

std::vector<JobBook::Summary> JobBook::Summaries(size_t ended) const {
  std::vector<Summary> live, done;
  for (const auto& [id, e] : jobs_) {
    Summary s;
    s.job_id = id;
    s.ended = e.ended;
    s.end_state = !e.ended ? v1::JOB_STATE_UNSPECIFIED : e.end.has_finish() ? v1::JOB_COMPLETED : v1::JOB_ABORTED;
    s.tokens = e.tokens;
    s.max_tokens = e.submit.sampling().has_max_tokens() ? e.submit.sampling().max_tokens() : 0;
    s.priority = e.submit.priority();
    s.accepted_at = e.accepted_at;
    s.ended_at = e.ended_at;
    (e.ended ? done : live).push_back(s);
  }
  std::sort(done.begin(), done.end(), [](const Summary& a, const Summary& b) { return a.ended_at > b.ended_at; });
  if (done.size() > ended) done.resize(ended);
  live.insert(live.end(), done.begin(), done.end());
  return live;
}

Reply JobBook::To(const Watcher& w, v1::Envelope envelope) {
  envelope.set_request_id(w.request_id);
  return Reply{w.origin, std::move(envelope)};
}

bool JobBook::Wants(const Watcher& w, const v1::Envelope& env) {
  if (!w.stream) return false;
  if (env.has_token()) return env.token().index() >= w.from_index;
  return w.from_index == 0;  // the prompt's logprobs come before token 0
}

v1::Envelope JobBook::StatusOf(uint64_t job_id, uint64_t request_id, const std::optional<LiveState>& live) const {
  const Entry& e = jobs_.at(job_id);
  v1::Envelope env = NewEnvelope(request_id);
  v1::JobStatus* s = env.mutable_job_status();
  s->set_job_id(job_id);
  s->set_priority(e.submit.priority());
  s->set_tokens(e.tokens);
  if (e.ended) {
    if (e.end.has_finish()) {
      s->set_state(v1::JOB_COMPLETED);
      s->set_finish_reason(e.end.finish().reason());
      s->set_session_id(e.end.finish().session_id());
    } else {
      s->set_state(v1::JOB_ABORTED);
      *s->mutable_failure() = e.end.error();
    }
  } else {
    const LiveState l = live.value_or(LiveState{v1::JOB_QUEUED, 0, 0});
    s->set_state(l.state);
    s->set_session_id(l.session_id);
    if (l.state == v1::JOB_QUEUED) s->set_queue_position(l.queue_position);
  }
  return env;
}

Actions JobBook::Attach(uint64_t job_id, Watcher watcher, const std::optional<LiveState>& live) {
  Actions out;
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return out;
  Entry& e = it->second;
  out.push_back(Reply{watcher.origin, StatusOf(job_id, watcher.request_id, live)});
  if (!e.ended) {
    for (const v1::Envelope& env : e.stream) {
      if (Wants(watcher, env)) out.push_back(To(watcher, env));
    }
    e.watchers.push_back(std::move(watcher));
    return out;
  }
  if (watcher.stream) {
    Result<std::optional<v1::JobRecord>> record = journal_->Record(job_id);
    if (record.ok() && *record) {
      for (const v1::Envelope& env : (*record)->stream()) {
        if (Wants(watcher, env)) out.push_back(To(watcher, env));
      }
    } else {
      // The end alone: its stream is not readable (the journal says why).
      ++journal_errors_;
      out.push_back(
          Reply{watcher.origin,
                ErrorEnvelope(v1::INTERNAL,
                              "job " + std::to_string(job_id) + "'s stream cannot be read back: " +
                                  (record.ok() ? std::string("not in the journal") : record.status().message()),
                              config_.node_id, 0, watcher.request_id, job_id)});
      return out;
    }
  }
  out.push_back(To(watcher, e.end));
  return out;
}

Actions JobBook::Output(v1::Envelope envelope, double now) {
  Actions out;
  if (closing_) return out;
  const uint64_t job_id = JobOf(envelope);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end() || it->second.ended) return out;
  Entry& e = it->second;
  switch (envelope.body_case()) {
    case v1::Envelope::kJobStatus: {
      v1::JobStatus* s = envelope.mutable_job_status();
      s->set_tokens(e.tokens);
      s->set_priority(e.submit.priority());
      for (const Watcher& w : e.watchers) out.push_back(To(w, envelope));
      return out;
    }
    case v1::Envelope::kToken:
      if (envelope.token().index() != e.tokens) return out;  // out of order or repeated: never twice
      ++e.tokens;
      break;
    case v1::Envelope::kPromptLogprobs:
      if (!e.stream.empty()) return out;  // the prompt's logprobs come first, once
      break;
    case v1::Envelope::kFinish:
    case v1::Envelope::kError: End(job_id, e, std::move(envelope), now, out); return out;
    default: return out;
  }
  for (const Watcher& w : e.watchers) {
    if (Wants(w, envelope)) out.push_back(To(w, envelope));
  }
  e.stream.push_back(std::move(envelope));
  return out;
}

void JobBook::End(uint64_t job_id, Entry& e, v1::Envelope end, double now, Actions& out) {
  v1::JobRecord record;
  for (v1::Envelope& env : e.stream) *record.add_stream() = std::move(env);
  *record.mutable_final() = end;
  if (Status st = journal_->Finish(job_id, record, now); !st.ok()) {
    ++journal_errors_;
    out.push_back(Log{"job " + std::to_string(job_id) + "'s end is not journaled: " + st.message(), job_id, 0, true});
  }
  for (const Watcher& w : e.watchers) out.push_back(To(w, end));
  e.watchers.clear();
  e.stream.clear();
  e.stream.shrink_to_fit();
  if (end.has_error()) ++failed_;
  e.end = std::move(end);
  e.ended = true;
  e.ended_at = now;
  --live_;
}

void JobBook::Gone(const Origin& client) {
  for (auto& [id, e] : jobs_) {
    auto& w = e.watchers;
    w.erase(std::remove_if(w.begin(), w.end(), [&](const Watcher& x) { return x.origin == client; }), w.end());
  }
}

Status JobBook::Expire(double now) {
  const double before = now - config_.retention_seconds;
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    it = it->second.ended && it->second.ended_at < before ? jobs_.erase(it) : std::next(it);
  }
  return journal_->Expire(before).status();
}

Actions JobBook::Close() {
  Actions out;
  closing_ = true;
  for (auto& [id, e] : jobs_) {
    if (e.ended) continue;
    const std::string text = journal_->durable()
                                 ? "the head is shutting down; job " + std::to_string(id) +
                                       " is journaled and runs again when the head restarts: attach to it then"
                                 : "the head is shutting down";
    for (const Watcher& w : e.watchers) {
      v1::Envelope env = ErrorEnvelope(v1::UNAVAILABLE, text, config_.node_id, 0, w.request_id, id);
      env.mutable_error()->set_retryable(journal_->durable());
      out.push_back(Reply{w.origin, std::move(env)});
    }
    e.watchers.clear();
  }
  return out;
}

}  // namespace troupe::scheduling
