// LoadTokenizerJson on small Hugging Face folders written by the test.
#include "pipeline/text/tokenizer_json.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "pipeline/text/pre_tokenizer.h"
#include "pipeline/text/tokenizer.h"
#include "tests/pipeline/text/tiny_spec.h"

namespace troupe {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json ByteLevel(bool use_regex) {
  return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", use_regex}};
}

json SmolLmPreTokenizer() {
  return {{"type", "Sequence"},
          {"pretokenizers", json::array({{{"type", "Digits"}, {"individual_digits", true}}, ByteLevel(true)})}};
}

json SplitPreTokenizer(const char* pattern) {
  return {
      {"type", "Sequence"},
      {"pretokenizers",
       json::array({{{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"}, {"invert", false}},
                    ByteLevel(false)})}};
}

// tokenizer.json for the tiny vocabulary; merges as pairs when `pair_merges`.
json TinyTokenizerJson(const json& pre_tokenizer, bool pair_merges) {
  TokenizerSpec spec = testing::TinySpec();
  json vocab = json::object();
  json added = json::array();
  for (size_t id = 0; id < spec.tokens.size(); ++id) {
    vocab[spec.tokens[id]] = id;
    if (spec.token_types[id] != TokenType::kNormal) {
      added.push_back({{"id", id},
                       {"content", spec.tokens[id]},
                       {"special", spec.token_types[id] == TokenType::kControl},
                       {"normalized", false}});
    }
  }
  json merges = json::array();
  for (const std::string& m : spec.merges) {
    size_t space = m.find(' ');
    if (pair_merges) {
      merges.push_back(json::array({m.substr(0, space), m.substr(space + 1)}));
    } else {
      merges.push_back(m);
    }
  }
  return {{"version", "1.0"},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer", pre_tokenizer},
          {"post_processor", ByteLevel(true)},
          {"decoder", ByteLevel(true)},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"ignore_merges", false}}}};
}

class TokenizerJsonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("troupe_tokjson_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name, std::ios::binary) << text; }
  Result<TokenizerSpec> Load() { return LoadTokenizerJson(dir_.string()); }
  fs::path dir_;
};

TEST_F(TokenizerJsonTest, SmolLmFolder) {
  Write("tokenizer.json", TinyTokenizerJson(SmolLmPreTokenizer(), false).dump());
  Write("tokenizer_config.json", json({{"bos_token", "<|im_start|>"},
                                       {"eos_token", {{"content", "<|im_end|>"}, {"special", true}}},
                                       {"chat_template", "{{ '<|im_start|>' }}"}})
                                     .dump());
  auto spec = Load();
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->pre, "smollm");
  EXPECT_EQ(spec->tokens.size(), 274u);
  EXPECT_EQ(spec->merges, testing::kTinyMerges);
  EXPECT_EQ(spec->bos_id, testing::kIdImStart);
  EXPECT_EQ(spec->eos_id, testing::kIdImEnd);
  EXPECT_EQ(spec->eot_id, -1);  // <|im_end|> is already EOS
  EXPECT_FALSE(spec->add_bos);
  EXPECT_EQ(spec->chat_template, "{{ '<|im_start|>' }}");
  EXPECT_EQ(spec->token_types[testing::kIdImStart], TokenType::kControl);
  EXPECT_EQ(spec->token_types[testing::kIdTool], TokenType::kUserDefined);
  EXPECT_EQ(spec->token_types['a'], TokenType::kNormal);

  // The spec builds the same tokenizer as the hand-made one.
  auto tok = Tokenizer::Create(*spec);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  auto reference = Tokenizer::Create(testing::TinySpec("smollm"));
  ASSERT_TRUE(reference.ok());
  for (const char* s : {"hello world 123", "<|im_start|>abc<tool>aaa"}) {
    EXPECT_EQ((*tok)->Encode(s, false), (*reference)->Encode(s, false)) << s;
  }
}

TEST_F(TokenizerJsonTest, PairMergesAndFamilies) {
  struct Case {
    json pre;
    const char* family;
  };
  for (const Case& c : {Case{ByteLevel(true), "gpt2"},
                        Case{{{"type", "Sequence"}, {"pretokenizers", json::array({ByteLevel(true)})}}, "gpt2"},
                        Case{SplitPreTokenizer(text::kLlama3Pattern), "llama-bpe"},
                        Case{SplitPreTokenizer(text::kQwen2Pattern), "qwen2"}}) {
    Write("tokenizer.json", TinyTokenizerJson(c.pre, true).dump());
    auto spec = Load();
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    EXPECT_EQ(spec->pre, c.family);
    EXPECT_EQ(spec->merges, testing::kTinyMerges);
  }
}

TEST_F(TokenizerJsonTest, BosFromPostProcessorAndEndOfTurn) {
  json doc = TinyTokenizerJson(SplitPreTokenizer(text::kLlama3Pattern), false);
  doc["post_processor"] = {
      {"type", "Sequence"},
      {"processors", json::array({ByteLevel(false),
                                  {{"type", "TemplateProcessing"},
                                   {"single", json::array({{{"SpecialToken", {{"id", "<|im_start|>"}, {"type_id", 0}}}},
                                                           {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})}}})}};
  Write("tokenizer.json", doc.dump());
  Write("tokenizer_config.json", json({{"bos_token", "<|im_start|>"},
                                       {"eos_token", "<|endoftext|>"},
                                       {"chat_template", json::array({{{"name", "tool_use"}, {"template", "T"}},
                                                                      {{"name", "default"}, {"template", "D"}}})}})
                                     .dump());
  auto spec = Load();
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_TRUE(spec->add_bos);
  EXPECT_EQ(spec->eos_id, testing::kIdEndOfText);
  EXPECT_EQ(spec->eot_id, testing::kIdImEnd);
  EXPECT_EQ(spec->chat_template, "D");
}

TEST_F(TokenizerJsonTest, ExplicitAddBosAndJinjaFile) {
  Write("tokenizer.json", TinyTokenizerJson(ByteLevel(true), false).dump());
  Write("tokenizer_config.json", json({{"bos_token", "<|im_start|>"}, {"add_bos_token", true}}).dump());
  Write("chat_template.jinja", "{{ bos_token }}");
  auto spec = Load();
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_TRUE(spec->add_bos);
  EXPECT_EQ(spec->chat_template, "{{ bos_token }}");
}

TEST_F(TokenizerJsonTest, ConfigJsonIdsWhenNoTokenizerConfig) {
  Write("tokenizer.json", TinyTokenizerJson(ByteLevel(true), false).dump());
  Write("config.json", json({{"bos_token_id", testing::kIdImStart},
                             {"eos_token_id", json::array({testing::kIdImEnd, testing::kIdEndOfText})}})
                           .dump());
  auto spec = Load();
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->bos_id, testing::kIdImStart);
  EXPECT_EQ(spec->eos_id, testing::kIdImEnd);
}

TEST_F(TokenizerJsonTest, Errors) {
  auto expect_error = [&](StatusCode code, const std::string& words) {
    auto spec = Load();
    ASSERT_FALSE(spec.ok());
    EXPECT_EQ(spec.status().code(), code) << spec.status().ToString();
    EXPECT_NE(spec.status().message().find(words), std::string::npos) << spec.status().ToString();
  };
  expect_error(StatusCode::kNotFound, "tokenizer.json");

  Write("tokenizer.json", "{ not json");
  expect_error(StatusCode::kCorrupt, "tokenizer.json: not valid JSON");

  json doc = TinyTokenizerJson(ByteLevel(true), false);
  doc["model"]["type"] = "Unigram";
  Write("tokenizer.json", doc.dump());
  expect_error(StatusCode::kUnsupported, "Unigram");

  doc = TinyTokenizerJson({{"type", "Whitespace"}}, false);
  Write("tokenizer.json", doc.dump());
  expect_error(StatusCode::kUnsupported, "pre_tokenizer");

  doc = TinyTokenizerJson(ByteLevel(true), false);
  doc["model"]["merges"] = json::array({42});
  Write("tokenizer.json", doc.dump());
  expect_error(StatusCode::kCorrupt, "merges entry 0");

  doc = TinyTokenizerJson(ByteLevel(true), false);
  doc["model"]["vocab"] = json::array();
  Write("tokenizer.json", doc.dump());
  expect_error(StatusCode::kCorrupt, "model.vocab");

  doc = TinyTokenizerJson(ByteLevel(true), false);
  doc["decoder"] = {{"type", "WordPiece"}};
  Write("tokenizer.json", doc.dump());
  expect_error(StatusCode::kUnsupported, "decoder");

  Write("tokenizer.json", TinyTokenizerJson(ByteLevel(true), false).dump());
  Write("tokenizer_config.json", json({{"eos_token", "<|nope|>"}}).dump());
  expect_error(StatusCode::kInvalidArgument, "tokenizer_config.json: eos_token '<|nope|>'");

  Write("tokenizer_config.json", "[1, 2");
  expect_error(StatusCode::kCorrupt, "tokenizer_config.json");

  Write("tokenizer_config.json", json({{"eos_token", 7}, {"bos_token", {{"content", 5}}}}).dump());
  auto spec = Load();  // unusable settings are ignored, not fatal
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
}

}  // namespace
}  // namespace troupe

namespace troupe {
namespace {

// Found with tokenizer_json_fuzz (tests/fuzz/regressions/): {"model": {"vocab":
// {"a": 16777216}, ...}}, 127 bytes, made a vocabulary of 16M tokens (2 GB with
// the Tokenizer built from it). Ids may leave holes, but not more than 65536
// past the tokens listed.
TEST_F(TokenizerJsonTest, IdsFarPastTheListedTokensAreRefused) {
  auto expect_corrupt = [&](const json& doc, const std::string& words) {
    Write("tokenizer.json", doc.dump());
    auto spec = Load();
    ASSERT_FALSE(spec.ok()) << words;
    EXPECT_EQ(spec.status().code(), StatusCode::kCorrupt);
    EXPECT_NE(spec.status().message().find(words), std::string::npos) << spec.status().ToString();
  };
  // The tokens listed: model.vocab's and added_tokens' entries.
  auto listed = [](const json& doc) { return doc["model"]["vocab"].size() + doc["added_tokens"].size(); };
  json doc = TinyTokenizerJson(ByteLevel(true), false);
  doc["model"]["vocab"]["far"] = 16777216;
  expect_corrupt(doc, "model.vocab['far'] has id 16777216, more than 65536 past the " + std::to_string(listed(doc)) +
                          " tokens the file lists");
  doc["model"]["vocab"]["far"] = listed(doc) + 65536;
  expect_corrupt(doc, "model.vocab['far'] has id " + std::to_string(listed(doc) + 65536));

  doc = TinyTokenizerJson(ByteLevel(true), false);
  doc["added_tokens"].push_back({{"id", 0}, {"content", "<far>"}, {"special", true}});
  doc["added_tokens"].back()["id"] = listed(doc) + 65536;
  expect_corrupt(doc, "added token '<far>' has id " + std::to_string(listed(doc) + 65536));

  // One id below the limit: the ids between are holes, unused.
  const size_t last = listed(doc) + 65535;
  doc["added_tokens"].back()["id"] = last;
  Write("tokenizer.json", doc.dump());
  auto spec = Load();
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->tokens.size(), last + 1);
  EXPECT_EQ(spec->tokens.back(), "<far>");
  EXPECT_EQ(spec->token_types[last - 1], TokenType::kUnused);
}

TEST_F(TokenizerJsonTest, DigitsAsIsolatingSplitIsSmolLm) {
  // The same SmolLM pre-tokenizer spelled as Split(\p{N}, Isolated) + ByteLevel.
  json split = {{"type", "Split"}, {"pattern", {{"Regex", "\\p{N}"}}}, {"behavior", "Isolated"}, {"invert", false}};
  json pre = {
      {"type", "Sequence"},
      {"pretokenizers",
       json::array(
           {split,
            {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}})}};
  Write("tokenizer.json", TinyTokenizerJson(pre, false).dump());
  Write("tokenizer_config.json", json({{"bos_token", "<|im_start|>"}, {"eos_token", "<|im_end|>"}}).dump());
  auto spec = Load();
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->pre, "smollm");
}

}  // namespace
}  // namespace troupe
