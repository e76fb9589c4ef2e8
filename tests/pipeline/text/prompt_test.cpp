// Prompt: a kept session's continuation, appended to the conversation so far,
// gives the tokens of the whole conversation rendered at once (real SmolLM2
// tokenizer and its ChatML template; a Gemma 3 vocabulary with the built-in
// Gemma 3 template, which insists on alternating roles and trims content).
#include "pipeline/text/prompt.h"

#include <gtest/gtest.h>

#include "pipeline/format/model_source.h"
#include "pipeline/text/byte_level.h"

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

TEST(PromptGemma3Test, AChatContinuationIsTheWholeConversation) {
  // Bytes plus Gemma's control tokens, and no chat template in the "file":
  // the built-in Gemma 3 template renders.
  TokenizerSpec spec;
  for (int b = 0; b < 256; ++b) spec.tokens.push_back(text::ByteToUnicode(static_cast<uint8_t>(b)));
  spec.token_types.assign(256, TokenType::kNormal);
  for (const char* t : {"<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>"}) {
    spec.tokens.push_back(t);
    spec.token_types.push_back(TokenType::kControl);
  }
  spec.bos_id = 258;
  spec.eos_id = 257;
  spec.add_bos = true;
  const int32_t end_of_turn = 260;
  auto tokenizer = Tokenizer::Create(spec);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  auto tokens = [&](const PromptRequest& r) {
    auto ids = PromptTokens(**tokenizer, spec, r);
    EXPECT_TRUE(ids.ok()) << ids.status().ToString();
    return ids.ok() ? *ids : std::vector<int32_t>{};
  };
  std::vector<int32_t> context = tokens(Chat({{"system", "Be brief."}, {"user", "Capital of France?"}}));
  ASSERT_GE(context.size(), 2u);
  EXPECT_EQ(context[0], spec.bos_id);
  EXPECT_NE(context[1], spec.bos_id) << "the template renders <bos>: no second one";
  for (int32_t id : (*tokenizer)->Encode("Paris.", false, true)) context.push_back(id);
  context.push_back(end_of_turn);  // the answer's end, sampled
  const std::vector<int32_t> next = tokens(Chat({{"user", "And Germany?"}}, true));
  ASSERT_FALSE(next.empty());
  EXPECT_EQ(next.front(), end_of_turn) << (*tokenizer)->Decode(next);
  context.insert(context.end(), next.begin() + 1, next.end());
  EXPECT_EQ((*tokenizer)->Decode(context), (*tokenizer)
                                               ->Decode(tokens(Chat({{"system", "Be brief."},
                                                                     {"user", "Capital of France?"},
                                                                     {"assistant", "Paris."},
                                                                     {"user", "And Germany?"}}))));
  EXPECT_EQ(context, tokens(Chat({{"system", "Be brief."},
                                  {"user", "Capital of France?"},
                                  {"assistant", "Paris."},
                                  {"user", "And Germany?"}})));
}

}  // namespace
}  // namespace troupe
