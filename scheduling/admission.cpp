#include "scheduling/admission.h"

#include <string>
#include <utility>

#include "messages/sampling_params_proto.h"
#include "scheduling/kept_sessions.h"

namespace troupe::scheduling {
namespace {

WireError BadRequest(std::string text) { return WireError{v1::BAD_REQUEST, std::move(text)}; }

}  // namespace

WireResult<AdmittedJob> Admit(const v1::JobSubmit& submit, const Tokenize& tokenize, const AdmissionLimits& limits) {
  const int64_t max_positions = limits.max_positions;
  const bool in_session = !submit.session().empty();
  if (in_session) {
    if (Status st = KeptSessions::CheckName(submit.session()); !st.ok()) return BadRequest(st.message());
  } else if (submit.keep()) {
    return BadRequest("keep needs a session name");
  }
  if (submit.max_length() != 0) {
    if (!submit.keep()) return BadRequest("max_length is chosen when a kept session opens (with keep)");
    if (submit.max_length() > max_positions) {
      return BadRequest("max_length " + std::to_string(submit.max_length()) + " is above the model's context (" +
                        std::to_string(max_positions) + ")");
    }
  }
  WireResult<SamplingParams> params = SamplingParamsFromProto(submit.sampling());
  if (!params.ok()) return params.error();
  if (in_session && params->prompt_logprobs >= 0) {
    return BadRequest("prompt_logprobs: a kept session's prompt is partly in its cache, not scored again");
  }
  if (in_session && params->beam_search()) {
    return BadRequest("num_beams " + std::to_string(params->num_beams) +
                      ": beam search does not run in a kept session (one conversation, one row)");
  }
  if (params->contrastive && limits.amateur_model.empty()) {
    return BadRequest(
        "contrastive decoding needs an amateur model, and this head has none (start it with amateur_model: in its "
        "node config, or troupe cluster up --amateur-model PATH)");
  }
  const int inputs =
      (submit.prompt().empty() ? 0 : 1) + (submit.chat_size() > 0 ? 1 : 0) + (submit.prompt_tokens_size() > 0 ? 1 : 0);
  if (inputs > 1) return BadRequest("a job has one of a prompt, chat messages or prompt token ids");
  PromptRequest prompt;
  prompt.continuation = in_session && !submit.keep();
  AdmittedJob job;
  if (submit.prompt_tokens_size() > 0) {
    for (int i = 0; i < submit.prompt_tokens_size(); ++i) {
      const int32_t id = submit.prompt_tokens(i);
      if (id < 0 || id >= limits.vocab) {
        return BadRequest("prompt token " + std::to_string(i) + " is " + std::to_string(id) +
                          ", not in the vocabulary [0, " + std::to_string(limits.vocab) + ")");
      }
    }
    job.prompt.assign(submit.prompt_tokens().begin(), submit.prompt_tokens().end());
  } else if (submit.chat_size() > 0) {
    // A whole conversation: system / user / assistant turns in order.
    prompt.chat = true;
    prompt.system = submit.system();
    for (int i = 0; i < submit.chat_size(); ++i) {
      const v1::ChatMessage& msg = submit.chat(i);
      if (msg.role() != "system" && msg.role() != "user" && msg.role() != "assistant") {
        return BadRequest("chat message " + std::to_string(i) + ": unknown role '" + msg.role() +
                          "' (system, user, assistant)");
      }
      prompt.messages.push_back(ChatMessage{msg.role(), msg.content()});
    }
  } else {
    prompt.prompt = submit.prompt();
  }
  if (submit.prompt_tokens_size() == 0) {
    Result<std::vector<int32_t>> ids = tokenize(prompt);
    if (!ids.ok()) return BadRequest(ids.status().ToString());
    job.prompt = std::move(*ids);
    job.chat_continuation = prompt.continuation && prompt.chat;
  }
  const int64_t n = static_cast<int64_t>(job.prompt.size());
  if (n >= max_positions) {
    return BadRequest("the prompt has " + std::to_string(n) + " tokens; the model's context is " +
                      std::to_string(max_positions));
  }
  job.params = std::move(*params);
  job.seed_given = submit.sampling().has_seed();
  job.stream = submit.stream();
  job.priority = submit.priority();
  job.session = submit.session();
  job.keep = submit.keep();
  job.max_length = submit.max_length();
  return job;
}

}  // namespace troupe::scheduling
