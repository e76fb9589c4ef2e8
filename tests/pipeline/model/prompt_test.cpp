// Prompt: a kept session's continuation, appended to the conversation so far,
// gives the tokens of the whole conversation rendered at once (real SmolLM2
// tokenizer and ChatML template).
#include "pipeline/model/prompt.h"

#include <gtest/gtest.h>

#include "pipeline/format/model_source.h"

namespace troupe {
namespace {

class PromptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto source = ModelSource::Open(TROUPE_DEFAULT_MODEL);
    ASSERT_TRUE(source.ok()) << source.status().ToString();
    source_ = std::move(*source);
    auto tokenizer = Tokenizer::Create(source_->tokenizer_spec());
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
    tokenizer_ = std::move(*tokenizer);
  }

  std::vector<int32_t> Tokens(const PromptRequest& r) {
    auto ids = PromptTokens(*tokenizer_, source_->tokenizer_spec(), r);
    EXPECT_TRUE(ids.ok()) << ids.status().ToString();
    return ids.ok() ? *ids : std::vector<int32_t>{};
  }

  std::vector<int32_t> Encode(const std::string& text) { return tokenizer_->Encode(text, false, true); }

  std::unique_ptr<ModelSource> source_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

PromptRequest Chat(std::vector<ChatMessage> messages, bool continuation = false) {
  PromptRequest r;
  r.chat = true;
  r.messages = std::move(messages);
  r.continuation = continuation;
  return r;
}

TEST_F(PromptTest, AChatContinuationAfterAnEosAnswerIsTheWholeConversation) {
  const int32_t im_end = *tokenizer_->TokenId("<|im_end|>");
  std::vector<int32_t> context = Tokens(Chat({{"user", "What is the capital of France?"}}));
  for (int32_t id : Encode("The capital of France is Paris.")) context.push_back(id);
  context.push_back(im_end);  // the answer's eos, sampled
  const std::vector<int32_t> next = Tokens(Chat({{"user", "And of Germany?"}}, true));
  ASSERT_FALSE(next.empty());
  EXPECT_EQ(next.front(), im_end) << "a continuation closes the previous assistant turn";
  context.insert(context.end(), next.begin() + 1, next.end());  // the session drops the repeat
  EXPECT_EQ(context, Tokens(Chat({{"user", "What is the capital of France?"},
                                  {"assistant", "The capital of France is Paris."},
                                  {"user", "And of Germany?"}})));
}

TEST_F(PromptTest, AChatContinuationAfterACutAnswerClosesItsTurn) {
  std::vector<int32_t> context = Tokens(Chat({{"user", "Count to three."}}));
  for (int32_t id : Encode("One, two")) context.push_back(id);  // cut by max_tokens: no eos
  const std::vector<int32_t> next = Tokens(Chat({{"user", "Go on."}}, true));
  context.insert(context.end(), next.begin(), next.end());
  EXPECT_EQ(context, Tokens(Chat({{"user", "Count to three."}, {"assistant", "One, two"}, {"user", "Go on."}})));
}

TEST_F(PromptTest, AContinuationHasNoBosAndNoDefaultSystemMessage) {
  PromptRequest text;
  text.prompt = " and then";
  text.continuation = true;
  EXPECT_EQ(Tokens(text), Encode(" and then"));
  PromptRequest chat;
  chat.chat = true;
  chat.prompt = "Hi";
  chat.system = "be brief";
  chat.continuation = true;
  const std::string rendered = tokenizer_->Decode(Tokens(chat));
  EXPECT_EQ(rendered, "<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

}  // namespace
}  // namespace troupe
