#include "pipeline/text/prompt.h"

#include "pipeline/text/chat_template.h"

namespace troupe {

Result<std::vector<int32_t>> PromptTokens(const Tokenizer& tokenizer, const TokenizerSpec& spec,
                                          const PromptRequest& request) {
  const bool conversation = request.chat && !request.messages.empty();
  if (!conversation && request.prompt.empty()) return Status::InvalidArgument("the prompt is empty");
  if (!request.chat) {
    return tokenizer.Encode(request.prompt, tokenizer.add_bos() && !request.continuation, /*parse_special=*/true);
  }
  TROUPE_ASSIGN_OR_RETURN(ChatTemplate tmpl, ChatTemplate::Create(spec.chat_template, tokenizer));
  std::vector<ChatMessage> messages;
  if (conversation) {
    if (!request.system.empty() && request.messages.front().role != "system") {
      messages.push_back({"system", request.system});
    }
    messages.insert(messages.end(), request.messages.begin(), request.messages.end());
  } else {
    if (!request.system.empty()) messages.push_back({"system", request.system});
    messages.push_back({"user", request.prompt});
  }
  if (request.continuation) {
    // Rendered after a user turn and an assistant turn holding only a marker,
    // the text past the marker is what closes that turn and opens the new
    // messages. The user turn first keeps templates that insist on
    // user/assistant alternation (Gemma, Mistral) content; the marker has no
    // whitespace, which templates trim. The system message belongs to the
    // conversation's start: not repeated.
    static constexpr char kMarker[] = "\x01\x01troupe-continuation\x01\x01";
    std::vector<ChatMessage> after{{"user", "\x01"}, {"assistant", kMarker}};
    if (conversation) {
      after.insert(after.end(), request.messages.begin(), request.messages.end());
    } else {
      after.push_back({"user", request.prompt});
    }
    TROUPE_ASSIGN_OR_RETURN(std::string text, tmpl.Render(after, /*add_generation_prompt=*/true));
    const size_t at = text.find(kMarker);
    if (at == std::string::npos) return Status::Internal("the chat template dropped the continuation marker");
    return tokenizer.Encode(text.substr(at + sizeof(kMarker) - 1), /*add_bos=*/false, /*parse_special=*/true);
  }
  TROUPE_ASSIGN_OR_RETURN(std::string text, tmpl.Render(messages, /*add_generation_prompt=*/true));
  return tokenizer.Encode(text, tokenizer.add_bos() && !tmpl.RendersBos(), /*parse_special=*/true);
}

}  // namespace troupe
