// The tokenizer of the real SmolLM2-135M-Instruct GGUF: ids checked against
// Hugging Face `tokenizers` (built from the same file, see
// tests/python/test_tokenizer.py), byte-exact round trips, chat prompt.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "pipeline/format/gguf_file.h"
#include "pipeline/format/model_source.h"
#include "pipeline/text/byte_level.h"
#include "pipeline/text/chat_template.h"
#include "pipeline/text/stream_decoder.h"
#include "pipeline/text/tokenizer.h"

namespace troupe {
namespace {

using Ids = std::vector<int32_t>;

class SmolLm2TokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto file = GgufFile::Open(TROUPE_DEFAULT_MODEL);
    ASSERT_TRUE(file.ok()) << "the default model is needed: " << file.status().ToString();
    auto spec = TokenizerSpecFromGguf(**file);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    spec_ = new TokenizerSpec(*spec);
    auto tok = Tokenizer::Create(*spec);
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    tok_ = std::move(tok).value().release();
  }
  static void TearDownTestSuite() {
    delete tok_;
    delete spec_;
  }
  void SetUp() override { ASSERT_NE(tok_, nullptr); }

  static const Tokenizer* tok_;
  static const TokenizerSpec* spec_;
};
const Tokenizer* SmolLm2TokenizerTest::tok_ = nullptr;
const TokenizerSpec* SmolLm2TokenizerTest::spec_ = nullptr;

TEST_F(SmolLm2TokenizerTest, Facts) {
  EXPECT_EQ(tok_->vocab_size(), 49152);
  EXPECT_EQ(tok_->bos_id(), 1);
  EXPECT_EQ(tok_->eos_id(), 2);
  EXPECT_FALSE(tok_->add_bos());
  EXPECT_TRUE(tok_->IsEos(2));
  EXPECT_EQ(tok_->TokenId("<|im_start|>"), std::optional<int32_t>(1));
  EXPECT_EQ(tok_->TokenText(0), "<|endoftext|>");
}

// Expected ids from Hugging Face `tokenizers` on the same GGUF vocabulary.
TEST_F(SmolLm2TokenizerTest, MatchesReferenceIds) {
  EXPECT_EQ(tok_->Encode("Hello, world!", false), Ids({19556, 28, 905, 17}));
  EXPECT_EQ(tok_->Encode("<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n", false),
            Ids({1, 4093, 198, 1780, 314, 216, 34, 27, 34, 47, 2, 198, 1, 520, 9531, 198}));
  EXPECT_EQ(tok_->Encode("  indented\tcode()\n\n", false), Ids({216, 641, 6574, 197, 4635, 1000, 1116}));
  EXPECT_EQ(tok_->Encode("日本語 café 😀👩\u200d💻", false),
            Ids({23274, 115, 40993, 179, 120, 248, 37366, 40303, 218, 10813, 235, 119, 321, 231, 10813, 236, 136}));
  EXPECT_EQ(tok_->Encode("I'm sure they'll DON'T 1234567", false),
            Ids({57, 5248, 2090, 502, 3060, 422, 2154, 23, 68, 216, 33, 34, 35, 36, 37, 38, 39}));
}

// SmolLM2's vocabulary lacks a token for 21 of the 256 bytes (six control
// characters and bytes that never occur in valid UTF-8 such as 0xC0, 0xF5..0xFF).
// Like Hugging Face, the tokenizer drops those; every other byte string,
// valid UTF-8 or not, survives Encode + Decode exactly.
std::vector<uint8_t> CoveredBytes(const Tokenizer& tok, std::vector<uint8_t>* missing) {
  std::vector<uint8_t> covered;
  for (int b = 0; b < 256; ++b) {
    bool has = tok.TokenId(text::ByteToUnicode(static_cast<uint8_t>(b))).has_value();
    (has ? covered : *missing).push_back(static_cast<uint8_t>(b));
  }
  return covered;
}

TEST_F(SmolLm2TokenizerTest, RandomBytesRoundTrip) {
  std::vector<uint8_t> missing;
  const std::vector<uint8_t> covered = CoveredBytes(*tok_, &missing);
  EXPECT_EQ(missing, std::vector<uint8_t>({0x04, 0x06, 0x13, 0x14, 0x16, 0x1D, 0xC0, 0xC1, 0xF1, 0xF2, 0xF5,
                                           0xF6, 0xF7, 0xF8, 0xF9, 0xFA, 0xFB, 0xFC, 0xFD, 0xFE, 0xFF}));
  std::mt19937 rng(20240601);
  const std::vector<std::string> words = {
      "the", " quick", "<|im_start|>", "<|im_end|>", "123",        "  ",       "\n",
      "é",   "😀",      "日本",         "'s",         "<file_sep>", "\xE2\x82", "\x80\x80"};
  for (int i = 0; i < 400; ++i) {
    std::string s;
    for (int p = rng() % 16; p > 0; --p) {
      if (rng() % 2 == 0) {
        s += words[rng() % words.size()];
      } else {
        for (int k = rng() % 5; k >= 0; --k) s.push_back(static_cast<char>(covered[rng() % covered.size()]));
      }
    }
    for (bool special : {true, false}) {
      Ids ids = tok_->Encode(s, false, special);
      ASSERT_EQ(tok_->Decode(ids), s) << "parse_special=" << special;
      for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < tok_->vocab_size());
    }
  }
}

TEST_F(SmolLm2TokenizerTest, BytesWithoutATokenAreDropped) {
  // The byte still separates pieces: "a" and "b", not "ab" (as in HF).
  EXPECT_EQ(tok_->Encode("a\x04"
                         "b\xFA",
                         false),
            Ids({81, 82}));
  EXPECT_EQ(tok_->Decode(tok_->Encode("x\xFFy", false)), "xy");
}

TEST_F(SmolLm2TokenizerTest, ParseSpecialFalseNeverEmitsControlTokens) {
  Ids ids = tok_->Encode("<|im_start|>user<|im_end|><|endoftext|>", false, false);
  for (int32_t id : ids) EXPECT_GT(id, 16) << "control token " << id;
}

TEST_F(SmolLm2TokenizerTest, ChatPrompt) {
  auto tmpl = ChatTemplate::Create(spec_->chat_template, *tok_);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().ToString();
  EXPECT_TRUE(tmpl->RendersBos());
  auto text = tmpl->Render({{"user", "What is the capital of France?"}}, true);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text,
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
            "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n");
  Ids ids = tok_->Encode(*text, tok_->add_bos() && !tmpl->RendersBos());
  ASSERT_GE(ids.size(), 4u);
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(Ids(ids.end() - 4, ids.end()), Ids({1, 520, 9531, 198}));
}

// Golden prompts rendered from the GGUF's Jinja template by jinja2; the pytest
// checks the same file against jinja2 itself.
TEST_F(SmolLm2TokenizerTest, ChatPromptsMatchJinjaRenderings) {
  const std::string path = std::string(TROUPE_SOURCE_DIR) + "/tests/pipeline/text/testdata/smollm2_chat_cases.json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  nlohmann::json doc = nlohmann::json::parse(in);
  auto tmpl = ChatTemplate::Create(spec_->chat_template, *tok_);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().ToString();
  ASSERT_GE(doc["cases"].size(), 5u);
  for (const auto& c : doc["cases"]) {
    std::vector<ChatMessage> messages;
    for (const auto& m : c["messages"]) messages.push_back({m["role"], m["content"]});
    auto text = tmpl->Render(messages, c["add_generation_prompt"].get<bool>());
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    EXPECT_EQ(*text, c["expected"].get<std::string>()) << c.dump();
  }
}

TEST_F(SmolLm2TokenizerTest, StreamDecoderYieldsValidUtf8) {
  const std::string text = "Emoji: 😀👩\u200d💻🇫🇷, CJK: 你好世界, accents: e\u0301, Arabic: مرحبا";
  StreamDecoder dec(*tok_);
  std::string out;
  for (int32_t id : tok_->Encode(text, false)) {
    std::string part = dec.Feed(id);
    for (size_t i = 0; i < part.size();) {
      size_t len = 0;
      ASSERT_TRUE(text::DecodeUtf8(std::string_view(part).substr(i), &len)) << "invalid UTF-8 chunk";
      i += len;
    }
    out += part;
  }
  out += dec.Flush();
  EXPECT_EQ(out, text);
}

TEST_F(SmolLm2TokenizerTest, EncodesAMegabyteQuickly) {
  std::string text;
  std::mt19937 rng(7);
  const std::vector<std::string> words = {"token", " the", " of",           " 2024",           ",", " naïve", " 東京",
                                          "\n",    "  ",   " encyclopedia", "{\"a\": [1, 2]}", " 😀"};
  while (text.size() < (1 << 20)) text += words[rng() % words.size()];
  auto start = std::chrono::steady_clock::now();
  Ids ids = tok_->Encode(text, false);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("encoded %zu bytes into %zu tokens in %.3f s\n", text.size(), ids.size(), seconds);
  EXPECT_EQ(tok_->Decode(ids), text);
  EXPECT_LT(seconds, 30.0);  // a hang detector, not a benchmark
}

}  // namespace
}  // namespace troupe
