#include "broker/job_runner.h"

#include <chrono>
#include <thread>

#include "broker/job_failure.h"

namespace troupe::broker {

Result<RedisReply> JobRunner::Redis(const std::vector<std::string>& argv) {
  if (!redis_) {
    TROUPE_ASSIGN_OR_RETURN(redis_, RedisConnection::Connect(options_.redis, options_.redis_timeout_ms));
  }
  return redis_->Command(argv);
}

Status JobRunner::Publish(const std::string& reply, const EntryFields& fields) {
  std::vector<std::string> argv{"XADD", reply, "*"};
  for (const auto& [key, value] : fields) {
    argv.push_back(key);
    argv.push_back(value);
  }
  return Redis(argv).status();
}

Status JobRunner::Ack(const std::string& entry_id) {
  return Redis({"XACK", options_.redis.stream, options_.redis.group, entry_id}).status();
}

Result<ReplyProgress> JobRunner::LoadProgress(const std::string& reply, const std::string& entry_id) {
  std::string end = "+";
  while (true) {
    TROUPE_ASSIGN_OR_RETURN(RedisReply r, Redis({"XREVRANGE", reply, end, "-", "COUNT", "64"}));
    TROUPE_ASSIGN_OR_RETURN(std::vector<StreamEntry> page, ParseEntries(r));
    if (page.empty()) return ReplyProgress{};
    for (const StreamEntry& e : page) {
      if (IsReplyOf(e.fields, entry_id)) return ReplyProgress::FromLastEntry(&e.fields);
    }
    end = "(" + page.back().id;  // exclusive: the page before this one
  }
}

Status JobRunner::RunOnce(const JobEntry& job, ReplyProgress* progress, bool* redis_failed) {
  if (!client_) {
    TROUPE_ASSIGN_OR_RETURN(client_, client::JobClient::Connect(options_.head));
  }
  TROUPE_RETURN_IF_ERROR(client_->Submit(job.job).status());
  while (true) {
    TROUPE_ASSIGN_OR_RETURN(client::JobClient::Event ev, client_->Next());
    Status published;
    if (ev.has_token) {
      TROUPE_ASSIGN_OR_RETURN(bool publish, progress->ShouldPublishToken(ev.token.index()));
      if (!publish) continue;
      published = Publish(job.reply, TokenFields(job.entry_id, job.job_id, ev.token));
      if (published.ok()) progress->PublishedToken();
    } else if (ev.has_prompt_logprobs) {
      if (!progress->ShouldPublishPromptLogprobs()) continue;
      published = Publish(job.reply, PromptLogprobsFields(job.entry_id, job.job_id, ev.prompt_logprobs));
      if (published.ok()) progress->PublishedPromptLogprobs();
    } else if (ev.has_finish) {
      published = Publish(job.reply, FinishFields(job.entry_id, job.job_id, ev.finish));
      if (published.ok()) {
        progress->PublishedFinal();
        return Status::Ok();
      }
    }
    if (!published.ok()) {
      *redis_failed = true;
      return published;
    }
  }
}

void JobRunner::Handle(const StreamEntry& entry) {
  const std::string& stream = options_.redis.stream;
  auto left_pending = [&entry](const Status& why) {
    BridgeLog("entry " + entry.id + " left pending (the next delivery runs it): " + why.ToString());
  };
  if (entry.deleted) {  // XDEL'd while pending: nothing to run, nowhere to answer
    BridgeLog("entry " + entry.id + " was deleted from " + stream + "; acknowledged without an answer");
    if (Status st = Ack(entry.id); !st.ok()) left_pending(st);
    return;
  }
  JobEntry job = ParseJobEntry(stream, entry);
  Result<ReplyProgress> loaded = LoadProgress(job.reply, job.entry_id);
  // A reply key Redis refuses (not a stream: WRONGTYPE), or one holding
  // entries the bridge did not write, can never take the answer: say so in
  // the default reply stream rather than retry forever. Only a Redis that
  // cannot be reached leaves the entry pending.
  if (!loaded.ok() && loaded.status().code() != StatusCode::kUnavailable && job.reply != DefaultReplyStream(entry.id)) {
    job.problem = Status::InvalidArgument("job entry " + entry.id + ": reply stream '" + job.reply +
                                          "' cannot be used: " + loaded.status().message());
    job.reply = DefaultReplyStream(entry.id);
    loaded = LoadProgress(job.reply, job.entry_id);
  }
  if (!loaded.ok() && loaded.status().code() == StatusCode::kUnavailable) return left_pending(loaded.status());
  if (!loaded.ok()) {
    BridgeLog("entry " + entry.id + ": nowhere to answer (" + loaded.status().ToString() + "); acknowledged");
    if (Status st = Ack(entry.id); !st.ok()) left_pending(st);
    return;
  }
  ReplyProgress progress = *loaded;
  if (!progress.done() && !job.problem.ok()) {
    BridgeLog(job.problem.message());
    Status st = Publish(job.reply, ErrorFields(job.entry_id, job.job_id, "BAD_REQUEST", job.problem.message()));
    if (!st.ok()) return left_pending(st);
    progress.PublishedFinal();
  }
  for (int attempt = 0; !progress.done(); ++attempt) {
    bool redis_failed = false;
    const Status st = RunOnce(job, &progress, &redis_failed);
    if (st.ok()) break;
    client_.reset();  // a fresh connection for the next try or job
    if (redis_failed) return left_pending(st);
    const JobFailure failure = ClassifyJobFailure(st);
    if (failure.retry) {
      const int delay = RetryDelayMs(attempt);
      BridgeLog("job " + std::to_string(job.job_id) + " (entry " + job.entry_id + "): " + st.ToString() +
                "; retrying in " + std::to_string(delay) + " ms");
      for (int waited = 0; waited < delay; waited += 100) {
        if (stop_.load()) return left_pending(Status::Cancelled("the bridge is stopping"));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      continue;
    }
    Status published = Publish(job.reply, ErrorFields(job.entry_id, job.job_id, failure.code, failure.text));
    if (!published.ok()) return left_pending(published);
    progress.PublishedFinal();
  }
  if (Status st = Ack(job.entry_id); !st.ok()) left_pending(st);
}

}  // namespace troupe::broker
