// JobEntry: a job as an operator writes it into the jobs stream, and the
// JobSubmit the bridge sends the head for it.
//
//   XADD troupe:jobs * job '{"prompt": "Hi", "sampling": {"max_tokens": 16}}' [reply KEY]
//
//   job    the v1::JobSubmit as Protobuf JSON (json_name or proto field
//          names, e.g. "max_tokens" or "maxTokens"; unknown keys refused):
//          every job option there is — prompt, chat, system, sampling,
//          session/keep, prompt_tokens, priority, job_id. Required.
//   reply  the stream the answer goes to; default "troupe:reply:<entry id>"
//          (one stream per job, which its submitter reads and deletes).
//
// Any other field is refused, naming it (a typo must not run a different
// job). `stream` is always set: the bridge publishes every token. A job
// without sampling.seed gets its job id as seed, so that running it again
// (after a bridge restart, on a head that no longer knows the job) samples
// the same tokens — the head would otherwise derive a seed from its session.
//
// The job id. The head treats a repeated job id as the same job (its stream
// from the first token, never a second run; messages/troupe.proto,
// JobSubmit), so a job's id must be the same every time its entry is
// delivered: the JSON's job_id when it names one (non-zero), else
// DeriveJobId(stream, entry id) — FNV-1a 64 of "stream\nentry id", kept to
// 53 bits (exact in any JSON reader) and never 0.
//
// Pure: no sockets, never throws. A malformed entry still yields its reply
// stream and job id, with `problem` saying what is wrong (BAD_REQUEST), so
// the bridge can answer it and acknowledge it rather than retry it forever.
#pragma once

#include <cstdint>
#include <string>

#include "broker/stream_entry.h"
#include "messages/troupe.pb.h"
#include "pipeline/status.h"

namespace troupe::broker {

struct JobEntry {
  std::string entry_id;
  std::string reply;    // always set: the entry's `reply`, else DefaultReplyStream(entry_id)
  uint64_t job_id = 0;  // always set (named or derived)
  Status problem;       // ok, or kInvalidArgument naming what is malformed
  v1::JobSubmit job;    // when problem.ok(): job_id set, stream true, a seed
};

// "troupe:reply:<entry id>".
std::string DefaultReplyStream(const std::string& entry_id);

uint64_t DeriveJobId(const std::string& stream, const std::string& entry_id);

// Reads `entry` of stream `stream`.
JobEntry ParseJobEntry(const std::string& stream, const StreamEntry& entry);

// The entry fields that submit `job` (the inverse of ParseJobEntry, for
// producers and tests): job = its JSON, and reply when not empty.
EntryFields JobEntryFields(const v1::JobSubmit& job, const std::string& reply = "");

}  // namespace troupe::broker
