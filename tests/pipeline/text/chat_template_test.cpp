// ChatTemplate: format choice, default system message, exact rendering.
#include "pipeline/text/chat_template.h"

#include <gtest/gtest.h>

#include "tests/pipeline/text/tiny_spec.h"

namespace troupe {
namespace {

// SmolLM2-135M-Instruct's tokenizer.chat_template, verbatim from its GGUF.
const char kSmolLm2Template[] =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
    "<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
    "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
    "{% endif %}";

// Meta-Llama-3-8B-Instruct's chat template.
const char kLlama3Template[] =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + "
    "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

// The shape of Qwen2.5's template: default system text in an else branch.
const char kQwenLikeTemplate[] =
    "{%- if messages[0]['role'] == 'system' %}\n"
    "    {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n"
    "{%- else %}\n"
    "    {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant."
    "<|im_end|>\\n' }}\n"
    "{%- endif %}\n"
    "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + "
    "'<|im_end|>' + '\\n' }}{%- endfor %}";

std::unique_ptr<Tokenizer> MakeTokenizer(const std::vector<std::string>& added, const std::string& bos) {
  TokenizerSpec spec;
  for (int b = 0; b < 256; ++b) spec.tokens.push_back(text::ByteToUnicode(static_cast<uint8_t>(b)));
  spec.token_types.assign(256, TokenType::kNormal);
  for (const std::string& t : added) {
    if (t == bos) spec.bos_id = static_cast<int32_t>(spec.tokens.size());
    spec.tokens.push_back(t);
    spec.token_types.push_back(TokenType::kControl);
  }
  auto tok = Tokenizer::Create(spec);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return std::move(tok).value();
}

std::unique_ptr<Tokenizer> ChatMlTokenizer() {
  return MakeTokenizer({"<|endoftext|>", "<|im_start|>", "<|im_end|>"}, "<|im_start|>");
}
std::unique_ptr<Tokenizer> Llama3Tokenizer() {
  return MakeTokenizer(
      {"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"},
      "<|begin_of_text|>");
}

std::string RenderOrDie(const ChatTemplate& t, const std::vector<ChatMessage>& messages, bool gen) {
  auto text = t.Render(messages, gen);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : "";
}

TEST(ChatTemplateTest, SmolLm2InsertsItsDefaultSystemMessage) {
  auto tok = ChatMlTokenizer();
  auto t = ChatTemplate::Create(kSmolLm2Template, *tok);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->format(), ChatFormat::kChatMl);
  EXPECT_EQ(t->default_system_message(), "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
  EXPECT_TRUE(t->RendersBos());  // BOS is <|im_start|>, the first token rendered
  EXPECT_EQ(RenderOrDie(*t, {{"user", "Hi!"}}, true),
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
            "<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(RenderOrDie(*t, {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}}, false),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello.<|im_end|>\n");
  EXPECT_EQ(RenderOrDie(*t, {}, true), "<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, Llama3) {
  auto tok = Llama3Tokenizer();
  auto t = ChatTemplate::Create(kLlama3Template, *tok);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->format(), ChatFormat::kLlama3);
  EXPECT_TRUE(t->RendersBos());
  EXPECT_EQ(t->default_system_message(), "");
  EXPECT_EQ(RenderOrDie(*t, {{"system", "Be brief."}, {"user", "  Hi there \n"}}, true),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateTest, DefaultSystemMessageInElseBranch) {
  EXPECT_EQ(FindDefaultSystemMessage(kQwenLikeTemplate),
            "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
  EXPECT_EQ(FindDefaultSystemMessage("{% set default_system_message = \"Be nice.\" %}{{ x }}"), "Be nice.");
  EXPECT_EQ(FindDefaultSystemMessage(kLlama3Template), "");
  EXPECT_EQ(FindDefaultSystemMessage(""), "");
  // A branch that prints a variable is not a fixed message.
  EXPECT_EQ(FindDefaultSystemMessage("{% if messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n' + "
                                     "sys + '<|im_end|>\n' }}{% endif %}"),
            "");
  // Raw text inside the branch counts.
  EXPECT_EQ(FindDefaultSystemMessage("{%- if messages[0].role != \"system\" -%}<|im_start|>system\nHello"
                                     "<|im_end|>\n{%- endif %}"),
            "Hello");
}

TEST(ChatTemplateTest, EmptyTemplateFallsBackToChatMlWhenVocabularyAllows) {
  auto tok = ChatMlTokenizer();
  auto t = ChatTemplate::Create("", *tok);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->format(), ChatFormat::kChatMl);
  EXPECT_EQ(RenderOrDie(*t, {{"user", "x"}}, true), "<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, FailsWithoutAUsableFormat) {
  auto llama_tok = Llama3Tokenizer();
  auto t = ChatTemplate::Create("{{ messages }}", *llama_tok);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(t.status().message().find("<|im_start|>"), std::string::npos);
  // A Llama-3 template over a vocabulary without its header tokens.
  auto chatml_tok = ChatMlTokenizer();
  auto t2 = ChatTemplate::Create(kLlama3Template, *chatml_tok);
  ASSERT_FALSE(t2.ok());
  EXPECT_NE(t2.status().message().find("<|start_header_id|>"), std::string::npos);
}

TEST(ChatTemplateTest, RejectsEmptyRole) {
  auto tok = ChatMlTokenizer();
  auto t = ChatTemplate::Create(kSmolLm2Template, *tok);
  ASSERT_TRUE(t.ok());
  auto text = t->Render({{"", "x"}}, false);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace troupe
