// Prompt: turns what a user typed into the token ids the model reads — plain
// text, or a chat turn rendered with the model's chat template (with the
// template's default system message when none is given).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/status.h"
#include "pipeline/text/chat_template.h"
#include "pipeline/text/tokenizer.h"
#include "pipeline/tokenizer_spec.h"

namespace troupe {

struct PromptRequest {
  std::string prompt;
  bool chat = false;   // apply the chat template
  std::string system;  // system message (chat only); empty = the template's default
  // A whole conversation (chat only; system/user/assistant turns in order).
  // When set it replaces `prompt`; `system`, when also set, goes first unless
  // the conversation already starts with a system message. The template adds
  // its default system message when none is given.
  std::vector<ChatMessage> messages;
  // The prompt continues a conversation already in a kept session's context
  // (which ends inside, or right at the end of, an assistant turn): no BOS,
  // no default system message; a chat prompt renders its messages (or the
  // user turn `prompt`) beginning with whatever closes the previous assistant
  // turn in the template (ChatML: "<|im_end|>\n"), so that context +
  // continuation is the conversation rendered whole.
  bool continuation = false;
};

// BOS is prepended only when the model's metadata asks for it, the chat
// template does not already render it, and this is no continuation. Errors: empty prompt (or, with
// `messages`, no message); a chat request for a model without a usable
// template; a message with an empty role.
Result<std::vector<int32_t>> PromptTokens(const Tokenizer& tokenizer, const TokenizerSpec& spec,
                                          const PromptRequest& request);

}  // namespace troupe
