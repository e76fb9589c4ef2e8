// PreTokenizer: the pieces each family's regexes cut text into.
#include "pipeline/text/pre_tokenizer.h"

#include <gtest/gtest.h>

namespace troupe::text {
namespace {

using Pieces = std::vector<std::string>;

Pieces Split(const std::string& family, std::string_view text) {
  auto pre = PreTokenizer::Create(family);
  EXPECT_TRUE(pre.ok()) << pre.status().ToString();
  if (!pre.ok()) return {};
  std::vector<std::string_view> views;
  (*pre)->Split(text, &views);
  return Pieces(views.begin(), views.end());
}

TEST(PreTokenizerTest, Gpt2Regex) {
  EXPECT_EQ(Split("gpt2", "Hello world's  123!!\n\n x"),
            Pieces({"Hello", " world", "'s", " ", " 123", "!!", "\n\n", " x"}));
  EXPECT_EQ(Split("gpt2", "HELLO'S"), Pieces({"HELLO", "'", "S"}));  // contractions are case-sensitive
  EXPECT_EQ(Split("gpt2", "héllo wörld"), Pieces({"héllo", " wörld"}));
  EXPECT_EQ(Split("gpt2", "trailing   "), Pieces({"trailing", "   "}));
  EXPECT_EQ(Split("default", "a\tb"), Pieces({"a", "\t", "b"}));
  EXPECT_EQ(Split("gpt2", ""), Pieces({}));
}

TEST(PreTokenizerTest, SmollmIsolatesDigitsFirst) {
  EXPECT_EQ(Split("smollm", "abc 123"), Pieces({"abc", " ", "1", "2", "3"}));
  EXPECT_EQ(Split("smollm", "x1y"), Pieces({"x", "1", "y"}));
  EXPECT_EQ(Split("smollm", "日本語123"), Pieces({"日本語", "1", "2", "3"}));
  // Non-ASCII numbers (\p{N}) too: Arabic-Indic digits, superscript two.
  EXPECT_EQ(Split("smollm", "\u0661\u0662\u00B2"), Pieces({"\u0661", "\u0662", "\u00B2"}));
}

TEST(PreTokenizerTest, Llama3Regex) {
  EXPECT_EQ(Split("llama-bpe", "12345"), Pieces({"123", "45"}));
  EXPECT_EQ(Split("llama3", "HELLO'S"), Pieces({"HELLO", "'S"}));  // case-insensitive contractions
  EXPECT_EQ(Split("llama-bpe", "hello\n\n  world"), Pieces({"hello", "\n\n", " ", " world"}));
  EXPECT_EQ(Split("llama-bpe", "(x)!!\n"), Pieces({"(x", ")!!\n"}));
}

TEST(PreTokenizerTest, Qwen2RegexSplitsSingleDigits) {
  EXPECT_EQ(Split("qwen2", "12345"), Pieces({"1", "2", "3", "4", "5"}));
  EXPECT_EQ(Split("qwen2", "I'M ok"), Pieces({"I", "'M", " ok"}));
}

// \s is Unicode White_Space, as in Hugging Face: U+180E (a format character
// since Unicode 6.3) is not a space, while U+0085, U+00A0, U+2028 and U+3000 are.
TEST(PreTokenizerTest, WhiteSpaceIsTheUnicodeProperty) {
  EXPECT_EQ(Split("gpt2", " \u180e"), Pieces({" \u180e"}));
  EXPECT_EQ(Split("gpt2", "a\u0085\u00a0\u2028\u3000b"), Pieces({"a", "\u0085\u00a0\u2028", "\u3000", "b"}));
  EXPECT_EQ(Split("llama-bpe", "x\u180e\u180e"), Pieces({"x", "\u180e\u180e"}));
}

TEST(PreTokenizerTest, PiecesCoverInvalidUtf8) {
  for (const std::string family : {"gpt2", "smollm", "llama-bpe", "qwen2"}) {
    const std::string text =
        "a\xFF\xFE"
        "b \xC3 x\xE2\x82 9\x80";
    std::string joined;
    for (const std::string& piece : Split(family, text)) joined += piece;
    EXPECT_EQ(joined, text) << family;
  }
}

TEST(PreTokenizerTest, LongWhitespaceRuns) {
  const std::string spaces(300000, ' ');
  Pieces pieces = Split("llama-bpe", spaces + "x");
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].size(), spaces.size() - 1);
  EXPECT_EQ(pieces[1], " x");
}

TEST(PreTokenizerTest, UnknownFamily) {
  auto pre = PreTokenizer::Create("nope");
  ASSERT_FALSE(pre.ok());
  EXPECT_EQ(pre.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(pre.status().message().find("smollm"), std::string::npos);
}

}  // namespace
}  // namespace troupe::text
