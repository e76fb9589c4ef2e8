#include "scheduling/admission.h"

#include <string>
#include <utility>

#include "messages/sampling_params_proto.h"

namespace troupe::scheduling {
namespace {

WireError BadRequest(std::string text) { return WireError{v1::BAD_REQUEST, std::move(text)}; }

}  // namespace

WireResult<AdmittedJob> Admit(const v1::JobSubmit& submit, const Tokenize& tokenize, int64_t max_positions) {
  if (submit.has_session_id()) {
    return BadRequest("continuing a session is not supported yet: submit the whole conversation");
  }
  WireResult<SamplingParams> params = SamplingParamsFromProto(submit.sampling());
  if (!params.ok()) return params.error();
  PromptRequest prompt;
  if (submit.chat_size() > 0) {
    if (!submit.prompt().empty()) return BadRequest("a job has either a prompt or chat messages");
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
  Result<std::vector<int32_t>> ids = tokenize(prompt);
  if (!ids.ok()) return BadRequest(ids.status().ToString());
  const int64_t n = static_cast<int64_t>(ids->size());
  if (n >= max_positions) {
    return BadRequest("the prompt has " + std::to_string(n) + " tokens; the model's context is " +
                      std::to_string(max_positions));
  }
  AdmittedJob job;
  job.prompt = std::move(*ids);
  job.params = std::move(*params);
  job.seed_given = submit.sampling().has_seed();
  job.stream = submit.stream();
  return job;
}

}  // namespace troupe::scheduling
