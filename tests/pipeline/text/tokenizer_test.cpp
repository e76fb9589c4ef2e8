// Tokenizer on a tiny hand-made vocabulary: merge ranks, added-token
// splitting, byte fallback, decoding, construction errors, round trips.
#include "pipeline/text/tokenizer.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "tests/pipeline/text/tiny_spec.h"

namespace troupe {
namespace {

using ::troupe::testing::TinySpec;
using Ids = std::vector<int32_t>;
namespace tiny = ::troupe::testing;

std::unique_ptr<Tokenizer> MakeTiny(const TokenizerSpec& spec = TinySpec()) {
  auto tok = Tokenizer::Create(spec);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

// The ids of single-byte tokens: in the tiny vocabulary byte b has id b.
Ids ByteIds(std::string_view s) {
  Ids ids;
  for (unsigned char c : s) ids.push_back(c);
  return ids;
}

TEST(TokenizerTest, MergesWholeWords) {
  auto tok = MakeTiny();
  EXPECT_EQ(tok->Encode("hello", false), Ids({tiny::kIdHello}));
  EXPECT_EQ(tok->Encode("hello world", false), Ids({tiny::kIdHello, tiny::kIdSpaceWorld}));
  EXPECT_EQ(tok->Encode("he", false), Ids({tiny::kIdHe}));
  EXPECT_EQ(tok->Encode("", false), Ids({}));
}

TEST(TokenizerTest, LowerRankMergesFirst) {
  auto tok = MakeTiny();
  // "b c" (rank 9) beats "a b" (rank 10).
  EXPECT_EQ(tok->Encode("abc", false), Ids({'a', tiny::kIdBc}));
  EXPECT_EQ(tok->Encode("ab", false), Ids({tiny::kIdAb}));
}

TEST(TokenizerTest, EqualRanksMergeLeftmostFirst) {
  auto tok = MakeTiny();
  EXPECT_EQ(tok->Encode("aaa", false), Ids({tiny::kIdAa, 'a'}));
  EXPECT_EQ(tok->Encode("aaaa", false), Ids({tiny::kIdAa, tiny::kIdAa}));
}

TEST(TokenizerTest, UnmergeableBytesStaySingle) {
  auto tok = MakeTiny();
  EXPECT_EQ(tok->Encode("xyz", false), ByteIds("xyz"));
  // A space is token 32 ('Ġ'), newline token 10 ('Ċ').
  EXPECT_EQ(tok->Encode(" \n", false), Ids({32, 10}));
}

TEST(TokenizerTest, PreTokenizerFamilyChangesDigits) {
  auto gpt2 = MakeTiny(TinySpec("gpt2"));
  auto smollm = MakeTiny(TinySpec("smollm"));
  EXPECT_EQ(gpt2->Encode("123", false), Ids({tiny::kId123}));
  EXPECT_EQ(smollm->Encode("123", false), ByteIds("123"));
  EXPECT_EQ(gpt2->Encode("12", false), Ids({tiny::kId12}));
}

TEST(TokenizerTest, SplitsControlTokensFirst) {
  auto tok = MakeTiny();
  EXPECT_EQ(tok->Encode("<|im_start|>hello<|im_end|>", false), Ids({tiny::kIdImStart, tiny::kIdHello, tiny::kIdImEnd}));
  // A control token in the middle of a word cuts it.
  EXPECT_EQ(tok->Encode("hel<|im_end|>lo", false), Ids({tiny::kIdHe, 'l', tiny::kIdImEnd, 'l', 'o'}));
  EXPECT_EQ(tok->Encode("he<|im_end|>", false), Ids({tiny::kIdHe, tiny::kIdImEnd}));
}

TEST(TokenizerTest, ParseSpecialFalseKeepsControlTokenTextAsText) {
  auto tok = MakeTiny();
  EXPECT_EQ(tok->Encode("<|im_start|>", false, /*parse_special=*/false), ByteIds("<|im_start|>"));
  // User-defined tokens are still split out.
  EXPECT_EQ(tok->Encode("a<tool>b", false, false), Ids({'a', tiny::kIdTool, 'b'}));
  EXPECT_EQ(tok->Encode("a<tool>b", false, true), Ids({'a', tiny::kIdTool, 'b'}));
}

TEST(TokenizerTest, LongestAddedTokenWins) {
  TokenizerSpec spec = TinySpec();
  spec.tokens.push_back("<|im");
  spec.token_types.push_back(TokenType::kUserDefined);
  const int32_t short_id = static_cast<int32_t>(spec.tokens.size()) - 1;
  auto tok = MakeTiny(spec);
  EXPECT_EQ(tok->Encode("<|im_start|>", false), Ids({tiny::kIdImStart}));
  EXPECT_EQ(tok->Encode("<|imx", false), Ids({short_id, 'x'}));
  EXPECT_EQ(tok->Encode("<|im_start|>", false, false), Ids({short_id, '_', 's', 't', 'a', 'r', 't', '|', '>'}));
}

TEST(TokenizerTest, AddsBosOnRequest) {
  auto tok = MakeTiny();
  EXPECT_EQ(tok->Encode("hello", true), Ids({tiny::kIdImStart, tiny::kIdHello}));
  EXPECT_FALSE(tok->add_bos());
}

TEST(TokenizerTest, ByteFallbackTokens) {
  TokenizerSpec spec = TinySpec();
  spec.tokens[0xFF] = "<0xFF>";  // the byte has no GPT-2 character token, only a byte token
  spec.token_types[0xFF] = TokenType::kByte;
  auto tok = MakeTiny(spec);
  EXPECT_EQ(tok->Encode("\xFF", false), Ids({0xFF}));
  EXPECT_EQ(tok->Decode({0xFF}), "\xFF");
  EXPECT_EQ(tok->TokenBytes(0xFF), "\xFF");
}

TEST(TokenizerTest, BytesWithoutAnyTokenAreDropped) {
  TokenizerSpec spec = TinySpec();
  spec.tokens[0xFE] = "";  // a hole in the vocabulary
  spec.token_types[0xFE] = TokenType::kUnused;
  auto tok = MakeTiny(spec);
  EXPECT_EQ(tok->Encode("a\xFE"
                        "b",
                        false),
            ByteIds("ab"));
}

TEST(TokenizerTest, DecodeIsExactAndSkipsOutOfRangeIds) {
  auto tok = MakeTiny();
  EXPECT_EQ(tok->Decode({tiny::kIdHello, tiny::kIdSpaceWorld}), "hello world");
  EXPECT_EQ(tok->Decode({tiny::kIdImStart, 'h', 'i', tiny::kIdImEnd}), "<|im_start|>hi<|im_end|>");
  EXPECT_EQ(tok->Decode({tiny::kIdHello, -1, 1 << 30, tok->vocab_size(), tiny::kIdSpaceWorld}), "hello world");
  EXPECT_EQ(tok->TokenBytes(32), " ");
  EXPECT_EQ(tok->TokenText(32), "\xC4\xA0");  // "Ġ"
  EXPECT_EQ(tok->TokenBytes(-5), "");
  EXPECT_EQ(tok->TokenText(100000), "");
}

TEST(TokenizerTest, LooksUpIdsAndEnds) {
  auto tok = MakeTiny();
  EXPECT_EQ(tok->TokenId("<|im_end|>"), std::optional<int32_t>(tiny::kIdImEnd));
  EXPECT_EQ(tok->TokenId("hello"), std::optional<int32_t>(tiny::kIdHello));
  EXPECT_EQ(tok->TokenId("nope"), std::nullopt);
  EXPECT_EQ(tok->bos_id(), tiny::kIdImStart);
  EXPECT_EQ(tok->eos_id(), tiny::kIdImEnd);
  EXPECT_EQ(tok->vocab_size(), 274);
  EXPECT_TRUE(tok->IsEos(tiny::kIdImEnd));
  EXPECT_FALSE(tok->IsEos(tiny::kIdImStart));
  EXPECT_FALSE(tok->IsEos(-1));

  TokenizerSpec spec = TinySpec();
  spec.eot_id = tiny::kIdEndOfText;
  auto with_eot = MakeTiny(spec);
  EXPECT_TRUE(with_eot->IsEos(tiny::kIdEndOfText));
  EXPECT_TRUE(with_eot->IsEos(tiny::kIdImEnd));
}

TEST(TokenizerTest, CreateRejectsBadSpecs) {
  auto expect_error = [](TokenizerSpec spec, StatusCode code, const std::string& words) {
    auto tok = Tokenizer::Create(spec);
    ASSERT_FALSE(tok.ok());
    EXPECT_EQ(tok.status().code(), code) << tok.status().ToString();
    EXPECT_NE(tok.status().message().find(words), std::string::npos) << tok.status().ToString();
  };
  TokenizerSpec spec = TinySpec();
  spec.model = "t5";
  expect_error(spec, StatusCode::kUnsupported, "t5");
  spec = TinySpec("klingon");
  expect_error(spec, StatusCode::kUnsupported, "klingon");
  spec = TinySpec();
  spec.merges.push_back("q zz");
  expect_error(spec, StatusCode::kInvalidArgument, "'zz'");
  spec = TinySpec();
  spec.merges.push_back("x y");  // "xy" is not a token
  expect_error(spec, StatusCode::kInvalidArgument, "'xy'");
  spec = TinySpec();
  spec.merges.push_back("nospace");
  expect_error(spec, StatusCode::kInvalidArgument, "nospace");
  spec = TinySpec();
  spec.token_types.pop_back();
  expect_error(spec, StatusCode::kInvalidArgument, "token types");
  spec = TinySpec();
  spec.bos_id = 5000;
  expect_error(spec, StatusCode::kInvalidArgument, "bos");
  spec = TinySpec();
  spec.bos_id = -1;
  spec.add_bos = true;
  expect_error(spec, StatusCode::kInvalidArgument, "BOS");
  spec = TokenizerSpec();
  expect_error(spec, StatusCode::kInvalidArgument, "empty");
}

TEST(TokenizerTest, RandomBytesRoundTrip) {
  auto tok = MakeTiny(TinySpec("smollm"));
  std::mt19937 rng(1234);
  const std::vector<std::string> fragments = {"hello", " world", "<|im_start|>", "<tool>", "123", "\n\n", "aaa"};
  for (int i = 0; i < 500; ++i) {
    std::string s;
    int parts = rng() % 12;
    for (int p = 0; p < parts; ++p) {
      if (rng() % 3 == 0) {
        s += fragments[rng() % fragments.size()];
      } else {
        for (int k = rng() % 6; k >= 0; --k) s.push_back(static_cast<char>(rng() % 256));
      }
    }
    EXPECT_EQ(tok->Decode(tok->Encode(s, false, true)), s);
    EXPECT_EQ(tok->Decode(tok->Encode(s, false, false)), s);
  }
}

TEST(TokenizerTest, LongRunsRoundTrip) {
  auto tok = MakeTiny();
  for (const std::string& s : {std::string(200000, ' '), std::string(100000, 'a'), std::string(50000, '\n'),
                               std::string(30000, '!') + std::string(30000, '\t') + "x"}) {
    std::vector<int32_t> ids = tok->Encode(s, false);
    EXPECT_EQ(tok->Decode(ids), s);
  }
  EXPECT_EQ(tok->Encode(std::string(6, 'a'), false), Ids(3, tiny::kIdAa));
}

TEST(TokenizerTest, ConcurrentEncodesAgree) {
  auto tok = MakeTiny();
  const std::string text = "hello world <|im_start|>abc aaa 123 hello";
  const Ids expected = tok->Encode(text, false);
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) failures[t] += tok->Encode(text, false) != expected;
    });
  }
  for (auto& th : threads) th.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

}  // namespace
}  // namespace troupe
