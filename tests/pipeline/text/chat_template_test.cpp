// ChatTemplate: which template renders (the model's, a built-in, a fallback),
// default system message, exact rendering, BOS, refusals. The byte-for-byte
// comparison of real templates with jinja2 is tests/python/test_chat_templates.py.
#include "pipeline/text/chat_template.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "pipeline/text/builtin_chat_templates.h"

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
  EXPECT_EQ(t->format(), ChatFormat::kJinja);
  EXPECT_EQ(t->origin(), "the model's chat template");
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
  EXPECT_EQ(t->format(), ChatFormat::kJinja);
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

std::unique_ptr<Tokenizer> Gemma3Tokenizer() {
  return MakeTokenizer({"<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>"}, "<bos>");
}

TEST(ChatTemplateTest, NoTemplateInTheModelPicksABuiltInByVocabulary) {
  auto chatml = ChatTemplate::Create("", *ChatMlTokenizer());
  ASSERT_TRUE(chatml.ok()) << chatml.status().ToString();
  EXPECT_EQ(chatml->format(), ChatFormat::kJinja);
  EXPECT_NE(chatml->origin().find("built-in ChatML"), std::string::npos) << chatml->origin();
  EXPECT_EQ(RenderOrDie(*chatml, {{"user", "x"}}, true), "<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n");

  // Gemma 3's GGUF has no tokenizer.chat_template: its official template, with
  // the system message folded into the first user turn and content trimmed.
  auto gemma = ChatTemplate::Create("", *Gemma3Tokenizer());
  ASSERT_TRUE(gemma.ok()) << gemma.status().ToString();
  EXPECT_NE(gemma->origin().find("built-in Gemma 3"), std::string::npos) << gemma->origin();
  EXPECT_TRUE(gemma->RendersBos());
  EXPECT_EQ(
      RenderOrDie(*gemma, {{"system", "Be brief."}, {"user", " Hi "}, {"assistant", "Hello."}, {"user", "Bye"}}, true),
      "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n"
      "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n");

  auto llama = ChatTemplate::Create("", *Llama3Tokenizer());
  ASSERT_TRUE(llama.ok()) << llama.status().ToString();
  EXPECT_NE(llama->origin().find("built-in Llama 3"), std::string::npos) << llama->origin();
  EXPECT_EQ(RenderOrDie(*llama, {{"user", "x"}}, false),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nx<|eot_id|>");

  // No marker: nothing to render with.
  auto none = ChatTemplate::Create("", *MakeTokenizer({"<s>"}, "<s>"));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(none.status().message().find("<start_of_turn>"), std::string::npos) << none.status().message();
}

TEST(ChatTemplateTest, BuiltInTemplatesAreTheRealOnes) {
  // The texts carried as data are the corpus files test_chat_templates.py
  // checks against jinja2 (README.md there says where they came from).
  auto read = [](const std::string& name) {
    std::ifstream in(std::string(TROUPE_SOURCE_DIR) + "/tests/pipeline/text/testdata/chat_templates/" + name,
                     std::ios::binary);
    EXPECT_TRUE(in) << name;
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  };
  auto gemma = FindBuiltinChatTemplate(*Gemma3Tokenizer());
  ASSERT_TRUE(gemma.has_value());
  EXPECT_EQ(gemma->name, "Gemma 3");
  EXPECT_EQ(gemma->source, read("gemma-3-it.jinja"));
  auto llama = FindBuiltinChatTemplate(*Llama3Tokenizer());
  ASSERT_TRUE(llama.has_value());
  EXPECT_EQ(llama->source, read("llama-3-8b-instruct.jinja"));
  auto chatml = FindBuiltinChatTemplate(*ChatMlTokenizer());
  ASSERT_TRUE(chatml.has_value());
  EXPECT_EQ(chatml->name, "ChatML");
}

TEST(ChatTemplateTest, ATemplateOutsideTheSubsetFallsBackAndSaysWhy) {
  // ChatML markers, a filter the interpreter lacks: the hard-coded ChatML format.
  const char source[] =
      "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] | wordwrap(80) "
      "+ '<|im_end|>\\n' }}{% endfor %}";
  auto t = ChatTemplate::Create(source, *ChatMlTokenizer());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->format(), ChatFormat::kChatMl);
  EXPECT_NE(t->origin().find("filter 'wordwrap'"), std::string::npos) << t->origin();
  EXPECT_NE(t->origin().find("line 1, column 94"), std::string::npos) << t->origin();
  EXPECT_EQ(RenderOrDie(*t, {{"user", "x"}}, true), "<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n");
  // Llama-3 markers in a template that calls a method the interpreter lacks
  // at render time: the hard-coded Llama-3 format, BOS and trimming included.
  const std::string llama_source = std::string(kLlama3Template) + "{{ messages[0].content.zfill(3) }}";
  auto l = ChatTemplate::Create(llama_source, *Llama3Tokenizer());
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->format(), ChatFormat::kJinja);  // it parses; the method fails only when it runs
  EXPECT_EQ(RenderOrDie(*l, {{"user", " x "}}, true),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nx<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateTest, FailsWithoutAUsableFormat) {
  // Outside the subset, and no ChatML or Llama-3 marker to fall back on.
  auto t = ChatTemplate::Create("{% include 'chat.jinja' %}", *Gemma3Tokenizer());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(t.status().message().find("'include' statement"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("<|im_start|>"), std::string::npos) << t.status().message();
  // A Llama-3 template outside the subset over a vocabulary without its header tokens.
  auto t2 = ChatTemplate::Create(std::string(kLlama3Template) + "{% raw %}{% endraw %}", *ChatMlTokenizer());
  ASSERT_FALSE(t2.ok());
  EXPECT_NE(t2.status().message().find("<|start_header_id|>"), std::string::npos) << t2.status().message();
}

TEST(ChatTemplateTest, AConversationTheTemplateRefusesIsInvalidArgument) {
  auto t = ChatTemplate::Create("", *Gemma3Tokenizer());
  ASSERT_TRUE(t.ok());
  auto text = t->Render({{"user", "one"}, {"user", "two"}}, true);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(text.status().message().find("Conversation roles must alternate"), std::string::npos)
      << text.status().message();
}

TEST(ChatTemplateTest, RendersJsonMessagesWithOtherFields) {
  auto t = ChatTemplate::FromSource(
      "{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m.content }}{% if m.name is defined %}({{ m.name }})"
      "{% endif %};{% endfor %}{{ eos_token }}{{ tools is none }}{{ strftime_now('%Y') | length }}",
      "<s>", "</s>");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto text = t->RenderJson(nlohmann::ordered_json::parse(R"([{"role": "user", "content": "a", "name": "n"},
                                                                {"role": "assistant", "content": "b"}])"),
                            false);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "<s>user:a(n);assistant:b;</s>True4");
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
