// Prompt: turns what a user typed into the token ids the model reads — plain
// text, or a chat turn rendered with the model's chat template (with the
// template's default system message when none is given).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/status.h"
#include "pipeline/text/tokenizer.h"
#include "pipeline/tokenizer_spec.h"

namespace troupe {

struct PromptRequest {
  std::string prompt;
  bool chat = false;       // apply the chat template
  std::string system;      // system message (chat only); empty = the template's default
};

// BOS is prepended only when the model's metadata asks for it and the chat
// template does not already render it. Errors: empty prompt; a chat request
// for a model without a usable template.
Result<std::vector<int32_t>> PromptTokens(const Tokenizer& tokenizer, const TokenizerSpec& spec,
                                          const PromptRequest& request);

}  // namespace troupe
