#include "pipeline/model/prompt.h"

#include "pipeline/text/chat_template.h"

namespace troupe {

Result<std::vector<int32_t>> PromptTokens(const Tokenizer& tokenizer, const TokenizerSpec& spec,
                                          const PromptRequest& request) {
  const bool conversation = request.chat && !request.messages.empty();
  if (!conversation && request.prompt.empty()) return Status::InvalidArgument("the prompt is empty");
  if (!request.chat) return tokenizer.Encode(request.prompt, tokenizer.add_bos(), /*parse_special=*/true);
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
  TROUPE_ASSIGN_OR_RETURN(std::string text, tmpl.Render(messages, /*add_generation_prompt=*/true));
  return tokenizer.Encode(text, tokenizer.add_bos() && !tmpl.RendersBos(), /*parse_special=*/true);
}

}  // namespace troupe
