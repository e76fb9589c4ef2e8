// Built-in chat templates: the Jinja text of well-known chat formats, for
// model files that carry no `tokenizer.chat_template` (Gemma 3's GGUF, for
// one). Picked by a marker token in the vocabulary:
//   <|im_start|> + <|im_end|>             -> ChatML
//   <start_of_turn> + <end_of_turn>       -> Gemma 3's official template
//   <|start_header_id|> + <|eot_id|>      -> Llama 3's official template
// The texts are data, rendered by the same Jinja interpreter as a model's own
// template (chat_template.h). Stateless; thread-safe.
#pragma once

#include <optional>
#include <string_view>

#include "pipeline/text/tokenizer.h"

namespace troupe {

struct BuiltinChatTemplate {
  std::string_view name;    // "ChatML", "Gemma 3", "Llama 3"
  std::string_view source;  // Jinja
};

// The first built-in template whose markers the vocabulary has, in the order
// above; nullopt when none fits.
std::optional<BuiltinChatTemplate> FindBuiltinChatTemplate(const Tokenizer& tokenizer);

}  // namespace troupe
