// Tokenizer on a tiny hand-made SentencePiece vocabulary (spec.model "llama"):
// merge order by score, ties, byte fallback, "▁" and the dummy prefix, added
// tokens, decoding, construction errors. Expected ids follow llama.cpp's
// llm_tokenizer_spm; the real Gemma 3 vocabulary is cross-checked against
// llama.cpp and Hugging Face in tests/python/test_spm_tokenizer.py.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "pipeline/text/tokenizer.h"

namespace troupe {
namespace {

using Ids = std::vector<int32_t>;

// ids: 0 <unk>, 1 <s>, 2 </s>, 3 <nl2> (user-defined "\n\n"), 4..259 the
// byte tokens <0x00>..<0xFF>, then the normal tokens below.
constexpr int32_t kUnk = 0, kBos = 1, kEos = 2, kNl2 = 3, kByte0 = 4;
struct Piece {
  const char* text;
  float score;
};
const Piece kPieces[] = {
    {"\xE2\x96\x81", -1},        // 260 ▁
    {"a", -2},                   // 261
    {"b", -2},                   // 262
    {"c", -2},                   // 263
    {"h", -2},                   // 264
    {"e", -2},                   // 265
    {"l", -2},                   // 266
    {"o", -2},                   // 267
    {"x", -2},                   // 268
    {"y", -2},                   // 269
    {"z", -2},                   // 270
    {"ab", -5},                  // 271
    {"bc", -3},                  // 272  higher than "ab": "abc" -> a + bc
    {"aa", -4},                  // 273
    {"xy", -6},                  // 274  same score as "yz": leftmost first
    {"yz", -6},                  // 275
    {"he", -7},                  // 276
    {"ll", -7},                  // 277
    {"hell", -8},                // 278
    {"hello", -9},               // 279
    {"\xE2\x96\x81hello", -10},  // 280 ▁hello (no "▁h": reached as ▁ + hello)
    {"\xE2\x96\x81"
     "a",
     -11},                              // 281 ▁a
    {"\xC3\xA9", -3},                   // 282 é
    {"\xE2\x96\x81\xE2\x96\x81", -12},  // 283 ▁▁
};
constexpr int32_t kSpace = 260, kA = 261, kB = 262, kC = 263, kX = 268, kZ = 270, kAb = 271, kBc = 272, kAa = 273,
                  kXy = 274, kHello = 279, kSpaceHello = 280, kSpaceA = 281, kEAcute = 282, kSpace2 = 283;

int32_t ByteId(unsigned char b) { return kByte0 + b; }

TokenizerSpec TinySpm(bool add_space_prefix = false) {
  TokenizerSpec spec;
  spec.model = "llama";
  spec.pre = "default";
  auto add = [&](const std::string& text, TokenType type, float score) {
    spec.tokens.push_back(text);
    spec.token_types.push_back(type);
    spec.scores.push_back(score);
  };
  add("<unk>", TokenType::kUnknown, 0);
  add("<s>", TokenType::kControl, 0);
  add("</s>", TokenType::kControl, 0);
  add("\n\n", TokenType::kUserDefined, 0);
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
    add(hex, TokenType::kByte, 0);
  }
  for (const Piece& p : kPieces) add(p.text, TokenType::kNormal, p.score);
  spec.bos_id = kBos;
  spec.eos_id = kEos;
  spec.unk_id = kUnk;
  spec.add_bos = true;
  spec.add_space_prefix = add_space_prefix;
  return spec;
}

std::unique_ptr<Tokenizer> Make(const TokenizerSpec& spec) {
  auto tok = Tokenizer::Create(spec);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

TEST(SpmTokenizerTest, HigherScoreMergesFirst) {
  auto tok = Make(TinySpm());
  EXPECT_EQ(tok->Encode("abc", false), Ids({kA, kBc}));  // "bc" (-3) beats "ab" (-5)
  EXPECT_EQ(tok->Encode("ab", false), Ids({kAb}));
  EXPECT_EQ(tok->Encode("hello", false), Ids({kHello}));  // he, ll, hell, hello
  EXPECT_EQ(tok->Encode("", false), Ids({}));

  TokenizerSpec flipped = TinySpm();
  flipped.scores[kAb] = -1;  // now "ab" beats "bc"
  EXPECT_EQ(Make(flipped)->Encode("abc", false), Ids({kAb, kC}));
}

TEST(SpmTokenizerTest, EqualScoresMergeLeftmostFirst) {
  auto tok = Make(TinySpm());
  EXPECT_EQ(tok->Encode("aaa", false), Ids({kAa, kA}));
  EXPECT_EQ(tok->Encode("aaaa", false), Ids({kAa, kAa}));
  EXPECT_EQ(tok->Encode("xyz", false), Ids({kXy, kZ}));  // "xy" and "yz" both -6
}

TEST(SpmTokenizerTest, SpacesBecomeTheMarker) {
  auto tok = Make(TinySpm());
  EXPECT_EQ(tok->Encode("hello hello", false), Ids({kHello, kSpaceHello}));
  EXPECT_EQ(tok->Encode(" a", false), Ids({kSpaceA}));
  EXPECT_EQ(tok->Encode("a  a", false), Ids({kA, kSpace, kSpaceA}));  // "▁▁a": ▁a (-11) beats ▁▁ (-12)
  EXPECT_EQ(tok->Encode("  ", false), Ids({kSpace2}));
  EXPECT_EQ(tok->Encode("a ", false), Ids({kA, kSpace}));
  // Other whitespace is not a space: a tab has no token, so it is a byte.
  EXPECT_EQ(tok->Encode("\ta", false), Ids({ByteId('\t'), kA}));
}

TEST(SpmTokenizerTest, DummyPrefixGoesInFrontOfEachTextStretch) {
  auto tok = Make(TinySpm(/*add_space_prefix=*/true));
  EXPECT_EQ(tok->Encode("hello hello", false), Ids({kSpaceHello, kSpaceHello}));
  EXPECT_EQ(tok->Encode("hello", true), Ids({kBos, kSpaceHello}));
  EXPECT_EQ(tok->Encode(" a", false), Ids({kSpace, kSpaceA}));
  EXPECT_EQ(tok->Encode("", true), Ids({kBos}));  // no lone "▁" for empty text
  // After a control or user-defined token, as llama.cpp does.
  EXPECT_EQ(tok->Encode("a</s>a", false), Ids({kSpaceA, kEos, kSpaceA}));
  EXPECT_EQ(tok->Encode("a\n\na", false), Ids({kSpaceA, kNl2, kSpaceA}));
  EXPECT_EQ(tok->Encode("</s>", false), Ids({kEos}));
  // Without the prefix, the same texts.
  auto plain = Make(TinySpm(false));
  EXPECT_EQ(plain->Encode("a</s>a", false), Ids({kA, kEos, kA}));
  EXPECT_EQ(plain->Encode("hello", true), Ids({kBos, kHello}));
}

TEST(SpmTokenizerTest, UnknownCharactersFallBackToBytes) {
  auto tok = Make(TinySpm());
  EXPECT_EQ(tok->Encode("\xC3\xA9", false), Ids({kEAcute}));                     // é is a token
  EXPECT_EQ(tok->Encode("\xC3\xA8", false), Ids({ByteId(0xC3), ByteId(0xA8)}));  // è is not
  EXPECT_EQ(tok->Encode("q\n", false), Ids({ByteId('q'), ByteId('\n')}));
  EXPECT_EQ(tok->Encode("\xF0\x9F\x98\x80", false),
            Ids({ByteId(0xF0), ByteId(0x9F), ByteId(0x98), ByteId(0x80)}));  // 😀
  // Invalid UTF-8: the lead byte 0xF0 claims four bytes, so "ab" after it is
  // not merged (llama.cpp cuts characters by the lead byte alone).
  EXPECT_EQ(tok->Encode("\xF0"
                        "ab",
                        false),
            Ids({ByteId(0xF0), ByteId('a'), ByteId('b')}));
  EXPECT_EQ(tok->Encode("\xA9"
                        "ab",
                        false),
            Ids({ByteId(0xA9), kAb}));  // a stray continuation byte is one
}

TEST(SpmTokenizerTest, ByteWithoutTokenBecomesUnknownOrSingleCharToken) {
  TokenizerSpec spec = TinySpm();
  spec.tokens[ByteId('q')] = "<q-gone>";  // no <0x71> any more
  spec.token_types[ByteId('q')] = TokenType::kNormal;
  EXPECT_EQ(Make(spec)->Encode("q", false), Ids({kUnk}));
  spec.tokens[ByteId('x')] = "<x-gone>";  // but "x" itself is a token
  EXPECT_EQ(Make(spec)->Encode("\xF0x", false), Ids({ByteId(0xF0), kX}));
  spec.unk_id = -1;
  EXPECT_EQ(Make(spec)->Encode("qa", false), Ids({kA}));  // nothing left for q: dropped
}

TEST(SpmTokenizerTest, AddedTokensSplitFirst) {
  auto tok = Make(TinySpm());
  EXPECT_EQ(tok->Encode("<s>hello</s>", false), Ids({kBos, kHello, kEos}));
  // Control tokens are text without parse_special; user-defined ones never are.
  EXPECT_EQ(tok->Encode("</s>", false, /*parse_special=*/false),
            Ids({ByteId('<'), ByteId('/'), ByteId('s'), ByteId('>')}));
  EXPECT_EQ(tok->Encode("a\n\nb", false, false), Ids({kA, kNl2, kB}));
  EXPECT_EQ(tok->Encode("\n\n\n", false), Ids({kNl2, ByteId('\n')}));
}

TEST(SpmTokenizerTest, TokenBytesAndText) {
  auto tok = Make(TinySpm());
  EXPECT_EQ(tok->TokenBytes(kSpaceHello), " hello");
  EXPECT_EQ(tok->TokenText(kSpaceHello), "\xE2\x96\x81hello");
  EXPECT_EQ(tok->TokenBytes(kSpace2), "  ");
  EXPECT_EQ(tok->TokenBytes(ByteId('\n')), "\n");
  EXPECT_EQ(tok->TokenText(ByteId('\n')), "<0x0A>");
  EXPECT_EQ(tok->TokenBytes(ByteId(0xFF)), "\xFF");
  EXPECT_EQ(tok->TokenBytes(kEos), "</s>");
  EXPECT_EQ(tok->TokenBytes(kNl2), "\n\n");
  EXPECT_EQ(tok->TokenBytes(10000), "");
  EXPECT_EQ(tok->TokenId("\xE2\x96\x81hello"), std::optional<int32_t>(kSpaceHello));
  EXPECT_EQ(tok->TokenId("<0x0A>"), std::optional<int32_t>(ByteId('\n')));
  EXPECT_EQ(tok->TokenId("nope"), std::nullopt);
  EXPECT_EQ(tok->token_type(kUnk), TokenType::kUnknown);
  EXPECT_EQ(tok->bos_id(), kBos);
  EXPECT_TRUE(tok->add_bos());
}

TEST(SpmTokenizerTest, DecodeRoundTrips) {
  auto tok = Make(TinySpm());
  auto prefixed = Make(TinySpm(true));
  // Valid UTF-8 with spaces, and (second alphabet) invalid UTF-8 without.
  const std::vector<std::string> valid = {"a",
                                          "b",
                                          "c",
                                          "h",
                                          "e",
                                          "l",
                                          "o",
                                          "x",
                                          "y",
                                          "z",
                                          " ",
                                          "  ",
                                          "\n",
                                          "\n\n",
                                          "\t",
                                          "\xC3\xA9",
                                          "\xC3\xA8",
                                          "\xE6\x97\xA5",
                                          "q",
                                          "<s",
                                          "/s>",
                                          "\xF0\x9F\x98\x80",
                                          std::string(1, '\0')};
  const std::vector<std::string> invalid = {"a",    "b",    "x",    "\n",       "\xC3\xA9",
                                            "\xFF", "\x80", "\xF0", "\xE2\x96", "\xC3"};
  std::mt19937 rng(7);
  for (const std::vector<std::string>* alphabet : {&valid, &invalid}) {
    for (int i = 0; i < 2000; ++i) {
      std::string s;
      int n = static_cast<int>(rng() % 12);
      for (int j = 0; j < n; ++j) s += (*alphabet)[rng() % alphabet->size()];
      ASSERT_EQ(tok->Decode(tok->Encode(s, false, false)), s) << "text: " << ::testing::PrintToString(s);
      // With the dummy prefix, each stretch of plain text comes back with one
      // space in front; "\n\n" (user-defined) starts a new stretch.
      std::string expected;
      bool at_stretch_start = true;
      for (size_t p = 0; p < s.size();) {
        if (s.compare(p, 2, "\n\n") == 0) {
          expected += "\n\n";
          p += 2;
          at_stretch_start = true;
          continue;
        }
        if (at_stretch_start && alphabet == &valid) expected += ' ';
        at_stretch_start = false;
        expected += s[p++];
      }
      if (alphabet == &valid) {
        ASSERT_EQ(prefixed->Decode(prefixed->Encode(s, false, false)), expected)
            << "text: " << ::testing::PrintToString(s);
      }
    }
  }
  // As in llama.cpp: a literal "▁" in the text comes back as a space, and a
  // space swallowed by a broken UTF-8 character (its lead byte claims the
  // next bytes) comes back as the bytes of "▁".
  EXPECT_EQ(tok->Decode(tok->Encode("\xE2\x96\x81"
                                    "a",
                                    false)),
            " a");
  EXPECT_EQ(tok->Encode("\xF0 a", false), Ids({ByteId(0xF0), ByteId(0xE2), ByteId(0x96), ByteId(0x81), kA}));
}

TEST(SpmTokenizerTest, CreateRejectsBadSpecs) {
  auto expect_error = [](const TokenizerSpec& spec, const std::string& words) {
    auto tok = Tokenizer::Create(spec);
    ASSERT_FALSE(tok.ok());
    EXPECT_EQ(tok.status().code(), StatusCode::kInvalidArgument) << tok.status().ToString();
    EXPECT_NE(tok.status().message().find(words), std::string::npos) << tok.status().ToString();
  };
  TokenizerSpec spec = TinySpm();
  spec.scores.clear();
  expect_error(spec, "no scores");
  spec = TinySpm();
  spec.scores.pop_back();
  expect_error(spec, "284 tokens but 283 scores");
  spec = TinySpm();
  spec.scores[kAb] = std::numeric_limits<float>::quiet_NaN();
  expect_error(spec, "score of token 271 is NaN");
  spec = TinySpm();
  spec.unk_id = 284;
  expect_error(spec, "unknown id 284");
  spec = TinySpm();
  spec.bos_id = -1;
  expect_error(spec, "BOS");
  // Merges are not used by SentencePiece: malformed ones do not matter.
  spec = TinySpm();
  spec.merges = {"nospace"};
  EXPECT_TRUE(Tokenizer::Create(spec).ok());
}

}  // namespace
}  // namespace troupe
