// ChatTemplate: renders a conversation into the prompt text a chat model was
// trained on, by running the model's own Jinja `chat_template` in the Jinja
// interpreter of pipeline/text/jinja, the way transformers'
// apply_chat_template does: trim_blocks, lstrip_blocks, loop controls; the
// variables messages (dicts of role and content), add_generation_prompt,
// bos_token and eos_token (the vocabulary's BOS and EOS texts), tools and
// documents (none); the globals raise_exception(msg) and strftime_now(fmt)
// (local time). Not given: transformers' other special-token texts
// (unk_token, pad_token, ...), which no template in our corpus reads.
//
// Where the template comes from, in order (origin() says which):
//   1. the model's template, when it parses in the supported subset;
//   2. none in the model: a built-in template chosen by the vocabulary's
//      marker tokens (builtin_chat_templates.h: ChatML, Gemma 3, Llama 3);
//   3. a template outside the subset: a warning naming the construct and its
//      position, then a hard-coded fallback format chosen by markers in the
//      template or the vocabulary:
//        "<|im_start|>"        -> ChatML: <|im_start|>{role}\n{content}<|im_end|>\n ...
//                                 generation prompt "<|im_start|>assistant\n"
//        "<|start_header_id|>" -> Llama-3: BOS, then per message
//                                 <|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>
//                                 (content trimmed when the template uses `| trim`)
//                                 generation prompt "<|start_header_id|>assistant<|end_header_id|>\n\n"
//      with the template's default system message (see FindDefaultSystemMessage)
//      inserted when the conversation has none.
// A template that fails at render time on something outside the subset (a
// method it does not know) falls back the same way, with a warning.
//
// The rendered text contains special-token text: encode it with
// parse_special = true, and add BOS only if !RendersBos().
//
// Ownership: copies what it needs from the Tokenizer; copies share the parsed
// template. Thread-safety: immutable; Render may run on many threads at once.
// Failure: Create returns Unsupported when the template is outside the subset
// and no fallback fits (the message names the construct), or the model has no
// template and no built-in fits. Render returns InvalidArgument for a message
// with an empty role, and for a conversation the template refuses
// (raise_exception: roles that do not alternate, say), with its message.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/status.h"
#include "pipeline/text/tokenizer.h"

namespace troupe {

namespace jinja {
struct Template;
}

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", ...
  std::string content;
};

// kJinja: the model's or a built-in template, interpreted. The others are the
// hard-coded fallbacks.
enum class ChatFormat { kJinja, kChatMl, kLlama3 };

class ChatTemplate {
 public:
  static Result<ChatTemplate> Create(std::string_view jinja_source, const Tokenizer& tokenizer);
  // A template with given BOS and EOS texts and no vocabulary (no built-in
  // and no fallback): what `troupe chat-template --template-file` renders.
  static Result<ChatTemplate> FromSource(std::string_view jinja_source, std::string bos_text, std::string eos_text);

  // The prompt text for `messages`; with `add_generation_prompt`, followed by
  // the header that opens the assistant's reply.
  Result<std::string> Render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
  // The same for messages as JSON objects (any fields: role, content, ...),
  // as an OpenAI-style request or a test corpus gives them.
  Result<std::string> RenderJson(const nlohmann::ordered_json& messages, bool add_generation_prompt) const;

  // True when rendered text already begins with the BOS token's text, so the
  // caller must not prepend BOS again (for Jinja templates: a one-user-turn
  // conversation, rendered at Create, begins with it).
  bool RendersBos() const { return renders_bos_; }
  ChatFormat format() const { return format_; }
  // "the model's chat template", "the built-in Gemma 3 chat template (the
  // model has none)", "ChatML fallback (...why...)".
  const std::string& origin() const { return origin_; }
  // The system message the template inserts when none is given (found by
  // FindDefaultSystemMessage); empty when there is none.
  const std::string& default_system_message() const { return default_system_; }

 private:
  ChatTemplate() = default;
  Result<std::string> RenderFallback(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
  Status ChooseFallback(std::string_view jinja_source, const Tokenizer& tokenizer);

  ChatFormat format_ = ChatFormat::kChatMl;
  std::string origin_;
  std::shared_ptr<const jinja::Template> jinja_;  // kJinja only
  std::string bos_token_, eos_token_;             // the texts templates see
  // Fallback (format_ != kJinja, or kJinja failing at render time on an unsupported construct).
  bool has_fallback_ = false;
  ChatFormat fallback_ = ChatFormat::kChatMl;
  std::string default_system_;
  std::string bos_text_;  // rendered first by Llama-3; empty when the template has no BOS
  bool renders_bos_ = false;
  bool trim_content_ = false;  // Llama-3: `message['content'] | trim`
};

// The default system message a Jinja chat template inserts when the
// conversation does not start with one: a string literal in the branch of
// `{% if messages[0]['role'] != 'system' %}`, the else branch of `== 'system'`,
// or `{% set ..system.. = '...' %}` ("" when it has none). SmolLM2's "You are
// a helpful AI assistant named SmolLM, trained by Hugging Face" is found this
// way. Used by the fallback formats; exposed for tests.
std::string FindDefaultSystemMessage(std::string_view jinja_source);

}  // namespace troupe
