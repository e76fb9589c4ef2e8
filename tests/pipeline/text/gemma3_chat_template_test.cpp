// Gemma 3 270M's GGUF (installed by scripts/setup.sh --with-test-deps) has no
// tokenizer.chat_template: the built-in Gemma 3 template renders its chats,
// picked by <start_of_turn> in its vocabulary, BOS rendered by the template
// and encoded once. The expected text is jinja2's rendering of the official
// template (test_chat_templates.py checks that template against jinja2).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "pipeline/format/model_source.h"
#include "pipeline/text/chat_template.h"
#include "pipeline/text/tokenizer.h"

namespace troupe {
namespace {

const std::string kGemma = std::string(TROUPE_SOURCE_DIR) + "/.deps/model-gemma3/gemma-3-270m-q4_k_m.gguf";

TEST(Gemma3ChatTemplate, TheBuiltInTemplateRendersAndEncodes) {
  if (::access(kGemma.c_str(), R_OK) != 0) GTEST_SKIP() << "scripts/setup.sh --with-test-deps installs " << kGemma;
  auto source = ModelSource::Open(kGemma);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  const TokenizerSpec& spec = (*source)->tokenizer_spec();
  EXPECT_TRUE(spec.chat_template.empty()) << "the file now carries a template: test that one instead";
  auto tok = Tokenizer::Create(spec);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  auto tmpl = ChatTemplate::Create(spec.chat_template, **tok);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().ToString();
  EXPECT_EQ(tmpl->format(), ChatFormat::kJinja);
  EXPECT_NE(tmpl->origin().find("built-in Gemma 3"), std::string::npos) << tmpl->origin();
  EXPECT_TRUE(tmpl->RendersBos());
  auto text = tmpl->Render({{"system", "Be brief."}, {"user", "What is the capital of France?"}}, true);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text,
            "<bos><start_of_turn>user\nBe brief.\n\nWhat is the capital of France?<end_of_turn>\n"
            "<start_of_turn>model\n");
  const std::vector<int32_t> ids = (*tok)->Encode(*text, (*tok)->add_bos() && !tmpl->RendersBos(), true);
  ASSERT_GE(ids.size(), 4u);
  EXPECT_EQ(ids[0], 2);  // <bos>, once
  EXPECT_NE(ids[1], 2);
  EXPECT_EQ(ids[1], 105);                                 // <start_of_turn>
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 105), 2);  // <start_of_turn>: user, model
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 106), 1);  // <end_of_turn>
}

}  // namespace
}  // namespace troupe
