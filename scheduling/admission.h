// Admission: whether a submitted job can run at all, and what it runs — its
// sampling parameters and its prompt as token ids. Checks, in this order
// (the first failure is the answer, always BAD_REQUEST unless noted):
//
//   1. no session_id (continuing a session is not supported yet);
//   2. sampling parameters in range (SamplingParamsFromProto: its own code);
//      contrastive decoding only where the head has an amateur model
//      (`amateur_model`, its path; empty = none);
//   3. a prompt or chat messages, not both; every chat role is system, user
//      or assistant;
//   4. the prompt tokenizes (`tokenize`'s Status, as text);
//   5. the prompt is shorter than the model's context (`max_positions`).
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
#include "pipeline/model/prompt.h"
#include "pipeline/sampling/sampling_params.h"
#include "pipeline/status.h"

namespace troupe::scheduling {

// What tokenizes a prompt request (text, or a chat conversation).
using Tokenize = std::function<Result<std::vector<int32_t>>(const PromptRequest&)>;

struct AdmittedJob {
  std::vector<int32_t> prompt;  // token ids, fewer than max_positions
  SamplingParams params;
  bool seed_given = false;  // the client set a seed; else the scheduler derives one
  bool stream = true;
};

WireResult<AdmittedJob> Admit(const v1::JobSubmit& submit, const Tokenize& tokenize, int64_t max_positions,
                              const std::string& amateur_model = "");

}  // namespace troupe::scheduling
