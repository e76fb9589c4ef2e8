// The reply stream of a job: what the bridge publishes for it, entry by entry,
// and the rule that publishes each of them exactly once across restarts.
//
// Every reply entry has `type`, `entry` (the job's entry id in the jobs
// stream) and `job_id`; then by type:
//
//   token            index, token_id, text, eos ("true"/"false"), and
//                    token = the whole v1::Token as JSON (logprobs,
//                    top_logprobs, a beam search's beam_sequence)
//   prompt_logprobs  prompt_logprobs = v1::PromptLogprobs as JSON (when the
//                    job asked for them; before the first token)
//   finish           reason ("eos", "stop", "length"), generated_tokens,
//                    finish = the v1::Finish as JSON — the final record
//   error            code (the ErrorCode's name: BAD_REQUEST, CACHE_FULL...),
//                    text — the final record of a job that failed or could
//                    not be read
//
// A job's entries come in order: [prompt_logprobs] token 0, 1, ... then one
// final record. JSON uses the proto field names (snake_case).
//
// Exactly once. The bridge may die anywhere; a restarted bridge runs the job
// again (the head answers the same job id with the same stream from its
// first token). ReplyProgress, read back from the job's last entry already in
// its reply stream, says what is published: a token is published only if its
// index is the next one, prompt logprobs only before any token, the final
// record only once — and once it is there the job only needs its ack.
//
// Pure: no sockets; never throws.
#pragma once

#include <cstdint>
#include <string>

#include "broker/stream_entry.h"
#include "messages/troupe.pb.h"
#include "pipeline/status.h"

namespace troupe::broker {

EntryFields TokenFields(const std::string& entry_id, uint64_t job_id, const v1::Token& token);
EntryFields PromptLogprobsFields(const std::string& entry_id, uint64_t job_id, const v1::PromptLogprobs& logprobs);
EntryFields FinishFields(const std::string& entry_id, uint64_t job_id, const v1::Finish& finish);
// `code_name` as ErrorCodeName gives it ("BAD_REQUEST").
EntryFields ErrorFields(const std::string& entry_id, uint64_t job_id, const std::string& code_name,
                        const std::string& text);

// True when `fields` is a reply entry of job entry `entry_id` (a reply
// stream may be shared by several jobs when their entries name it).
bool IsReplyOf(const EntryFields& fields, const std::string& entry_id);

class ReplyProgress {
 public:
  ReplyProgress() = default;  // nothing published yet
  // From the job's last entry in its reply stream; nullptr when it has none.
  // kCorrupt when that entry is not a reply entry the bridge writes.
  static Result<ReplyProgress> FromLastEntry(const EntryFields* last);

  // The final record (finish or error) is published: nothing more to send.
  bool done() const { return done_; }
  // The index the next published token must have.
  uint32_t next_index() const { return next_index_; }

  // Whether to publish token `index` now: true for the next index; false for
  // one already published (a replay after a restart); kCorrupt for an index
  // past the next (a token would be missing from the stream).
  Result<bool> ShouldPublishToken(uint32_t index) const;
  // Prompt logprobs come before the first token: publish only if nothing is.
  bool ShouldPublishPromptLogprobs() const { return !done_ && !any_published_; }

  // Record what was just published.
  void PublishedToken();
  void PublishedPromptLogprobs() { any_published_ = true; }
  void PublishedFinal() { done_ = true; }

 private:
  uint32_t next_index_ = 0;
  bool any_published_ = false;
  bool done_ = false;
};

}  // namespace troupe::broker
