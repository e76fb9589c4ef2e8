// Admission: whether a submitted job can run at all, and what it runs — its
// sampling parameters and its prompt as token ids. Checks, in this order
// (the first failure is the answer, always BAD_REQUEST unless noted):
//
//   1. a kept session's name is valid (KeptSessions::CheckName); keep and
//      max_length only with a session name, max_length only with keep and
//      at most `max_positions`;
//   2. sampling parameters in range (SamplingParamsFromProto: its own code);
//      contrastive decoding only where the head has an amateur model
//      (`limits.amateur_model`, its path; empty = none);
//   3. exactly one of a prompt, chat messages or prompt token ids; every chat
//      role is system, user or assistant; every token id in [0, vocab);
//   4. the prompt tokenizes (`tokenize`'s Status, as text) — a job that
//      continues a kept session as its continuation (PromptRequest::continuation);
//   5. the prompt is shorter than the model's context (`max_positions`).
//
// Whether a kept session exists, is busy or has room is the life cycle's
// question (job_lifecycle.h), not admission's.
//
// The tokenizer is passed in (in the head: PromptTokens over the model's
// tokenizer and chat template), so admission links no model code and tests
// need no model file. Pure function; thread-safe as `tokenize` is.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "messages/troupe.pb.h"
#include "messages/wire_error.h"
#include "pipeline/sampling/sampling_params.h"
#include "pipeline/status.h"
#include "pipeline/text/prompt.h"

namespace troupe::scheduling {

// What tokenizes a prompt request (text, or a chat conversation).
using Tokenize = std::function<Result<std::vector<int32_t>>(const PromptRequest&)>;

struct AdmittedJob {
  std::vector<int32_t> prompt;  // token ids, fewer than max_positions
  SamplingParams params;
  bool seed_given = false;  // the client set a seed; else the scheduler derives one
  bool stream = true;
  std::string session;     // a kept session's name, empty for none
  bool keep = false;       // open `session` (else continue it)
  int64_t max_length = 0;  // with keep: positions to reserve, 0 = the head's default
  // A chat continuation: the prompt begins by closing the previous
  // assistant turn (its end-of-turn token), which the session may hold already.
  bool chat_continuation = false;
  int32_t priority = 0;  // among queued jobs, higher goes first
};

struct AdmissionLimits {
  int64_t max_positions = 0;  // the model's context
  int64_t vocab = 0;          // token ids are in [0, vocab)
  std::string amateur_model;  // the head's amateur (its path; empty = none): contrastive decoding needs one
};

WireResult<AdmittedJob> Admit(const v1::JobSubmit& submit, const Tokenize& tokenize, const AdmissionLimits& limits);

}  // namespace troupe::scheduling
