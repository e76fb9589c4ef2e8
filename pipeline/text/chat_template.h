// ChatTemplate: renders a conversation into the prompt text a chat model was
// trained on. Not a Jinja engine: the model's Jinja `chat_template` source is
// only inspected to choose a known format and to find its default system
// message; the format itself is written out in C++.
//
// Formats, chosen by markers in the Jinja source:
//   "<|im_start|>"        -> ChatML: <|im_start|>{role}\n{content}<|im_end|>\n ...
//                            generation prompt "<|im_start|>assistant\n"
//   "<|start_header_id|>" -> Llama-3: BOS, then per message
//                            <|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>
//                            (content trimmed of ASCII whitespace when the
//                            template uses `| trim`)
//                            generation prompt "<|start_header_id|>assistant<|end_header_id|>\n\n"
// An empty or unrecognised template falls back to ChatML when the vocabulary
// has <|im_start|>; otherwise Create fails.
//
// Default system message: if the template inserts a fixed system message when
// the conversation does not start with one (a string literal in the branch of
// `{% if messages[0]['role'] != 'system' %}`, the else branch of `== 'system'`,
// or `{% set ..system.. = '...' %}`), Render inserts it too, before the first
// message. SmolLM2's "You are a helpful AI assistant named SmolLM, trained by
// Hugging Face" is found this way. Llama-3.1's date-stamped system header is
// not reproduced.
//
// The rendered text contains special-token text: encode it with
// parse_special = true, and add BOS only if !RendersBos().
//
// Ownership: copies what it needs from the Tokenizer. Thread-safety: immutable.
// Failure: Create returns Unsupported when no format fits the template and
// vocabulary; Render returns InvalidArgument for a message with an empty role.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pipeline/status.h"
#include "pipeline/text/tokenizer.h"

namespace troupe {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", ...
  std::string content;
};

enum class ChatFormat { kChatMl, kLlama3 };

class ChatTemplate {
 public:
  static Result<ChatTemplate> Create(std::string_view jinja_source, const Tokenizer& tokenizer);

  // The prompt text for `messages`; with `add_generation_prompt`, followed by
  // the header that opens the assistant's reply. With no messages only the
  // fixed parts are rendered (Llama-3 BOS, the generation prompt).
  Result<std::string> Render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

  // True when rendered text already begins with the BOS token's text, so the
  // caller must not prepend BOS again.
  bool RendersBos() const { return renders_bos_; }
  ChatFormat format() const { return format_; }
  // The system message inserted when none is given; empty when there is none.
  const std::string& default_system_message() const { return default_system_; }

 private:
  ChatTemplate() = default;
  ChatFormat format_ = ChatFormat::kChatMl;
  std::string default_system_;
  std::string bos_text_;  // rendered first by Llama-3; empty when the template has no BOS
  bool renders_bos_ = false;
  bool trim_content_ = false;  // Llama-3: `message['content'] | trim`
};

// The default system message a Jinja chat template inserts (see above), or ""
// when it has none. Exposed for tests.
std::string FindDefaultSystemMessage(std::string_view jinja_source);

}  // namespace troupe
