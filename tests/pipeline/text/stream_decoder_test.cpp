// StreamDecoder: whole characters out, split characters held back.
#include "pipeline/text/stream_decoder.h"

#include <gtest/gtest.h>

#include <random>

#include "tests/pipeline/text/tiny_spec.h"

namespace troupe {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";  // U+FFFD

// In the tiny vocabulary, byte b is token b.
class StreamDecoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto tok = Tokenizer::Create(testing::TinySpec());
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    tok_ = std::move(tok).value();
  }
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(StreamDecoderTest, HoldsAnEmojiSplitAcrossTokens) {
  StreamDecoder dec(*tok_);
  EXPECT_EQ(dec.Feed(testing::kIdHello), "hello");
  EXPECT_EQ(dec.Feed(' '), " ");
  // 😀 = F0 9F 98 80, one byte token each.
  EXPECT_EQ(dec.Feed(0xF0), "");
  EXPECT_EQ(dec.Feed(0x9F), "");
  EXPECT_EQ(dec.Feed(0x98), "");
  EXPECT_EQ(dec.pending_bytes(), 3u);
  EXPECT_EQ(dec.Feed(0x80), "\xF0\x9F\x98\x80");
  EXPECT_EQ(dec.Flush(), "");
}

TEST_F(StreamDecoderTest, ZwjSequenceComesOutCharacterByCharacter) {
  // 👩‍💻 = U+1F469 U+200D U+1F4BB.
  const std::string text = "\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB";
  StreamDecoder dec(*tok_);
  std::string out;
  std::vector<size_t> emitted_at;
  for (size_t i = 0; i < text.size(); ++i) {
    std::string part = dec.Feed(static_cast<unsigned char>(text[i]));
    if (!part.empty()) emitted_at.push_back(i);
    out += part;
  }
  EXPECT_EQ(out, text);
  EXPECT_EQ(emitted_at, std::vector<size_t>({3, 6, 10}));
}

TEST_F(StreamDecoderTest, FlushEndsAnUnfinishedCharacterAsReplacement) {
  StreamDecoder dec(*tok_);
  EXPECT_EQ(dec.Feed('a'), "a");
  EXPECT_EQ(dec.Feed(0xE2), "");
  EXPECT_EQ(dec.Feed(0x82), "");
  EXPECT_EQ(dec.Flush(), kFffd);
  EXPECT_EQ(dec.pending_bytes(), 0u);
  EXPECT_EQ(dec.Flush(), "");
}

// The fault behind sampled answers failing with HTTP 500: bytes that can
// never form a character went out as they were, and Protobuf drops a message
// whose string field is not UTF-8. Now they come out as U+FFFD.
TEST_F(StreamDecoderTest, ReplacesBytesThatNeverFormACharacter) {
  StreamDecoder dec(*tok_);
  EXPECT_EQ(dec.Feed(0x80), kFffd);  // stray continuation byte
  EXPECT_EQ(dec.Feed(0xFF), kFffd);  // never valid
  EXPECT_EQ(dec.Feed(0xF0), "");
  EXPECT_EQ(dec.Feed('a'), kFffd + "a");  // broken off by an ASCII character
  EXPECT_EQ(dec.Feed(0xE0), "");
  EXPECT_EQ(dec.Feed(0x80), kFffd + kFffd);  // overlong form: lead and byte each
  EXPECT_EQ(dec.Feed(0xE2), "");
  EXPECT_EQ(dec.Feed(0x82), "");
  EXPECT_EQ(dec.Feed(0xE2), kFffd);  // a new lead breaks the old sequence off
  EXPECT_EQ(dec.Feed(0x82), "");
  EXPECT_EQ(dec.Feed(0xAC), "\xE2\x82\xAC");  // the euro sign
  EXPECT_EQ(dec.Feed(-1), "");                // out-of-range id: nothing
}

TEST_F(StreamDecoderTest, SpecialTokensAreText) {
  StreamDecoder dec(*tok_);
  EXPECT_EQ(dec.Feed(testing::kIdImEnd), "<|im_end|>");
}

// Expected values are Python's bytes.decode("utf-8", "replace").
TEST(AppendUtf8LossyTest, MaximalSubpartsBecomeOneReplacementEach) {
  auto lossy = [](std::string_view in) {
    std::string out;
    EXPECT_EQ(AppendUtf8Lossy(in, true, &out), in.size());
    return out;
  };
  EXPECT_EQ(lossy(""), "");
  EXPECT_EQ(lossy("abc \xC3\xA9"), "abc \xC3\xA9");
  EXPECT_EQ(lossy("\xED\xA0\x80"), kFffd + kFffd + kFffd);              // a surrogate
  EXPECT_EQ(lossy("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // past U+10FFFF
  EXPECT_EQ(lossy("\xF0\x9F\x98"), kFffd);                              // truncated at the end
  EXPECT_EQ(lossy("\xC0\xAF"), kFffd + kFffd);                          // overlong '/'
  EXPECT_EQ(lossy("\xF0\x9F\x98\x80\x80"), "\xF0\x9F\x98\x80" + kFffd);
}

TEST(AppendUtf8LossyTest, HoldsOnlyACharacterThatCanStillComplete) {
  auto held = [](std::string_view in) {
    std::string out;
    return in.size() - AppendUtf8Lossy(in, false, &out);
  };
  EXPECT_EQ(held("abc"), 0u);
  EXPECT_EQ(held("a\xC3"), 1u);
  EXPECT_EQ(held("a\xC3\xA9"), 0u);
  EXPECT_EQ(held("\xE2\x82"), 2u);
  EXPECT_EQ(held("\xF0\x9F\x98"), 3u);
  EXPECT_EQ(held("\xF0\x9F\x98\x80"), 0u);
  EXPECT_EQ(held("\xED\xA0"), 0u);  // would be a surrogate
  EXPECT_EQ(held("\xF4\x90"), 0u);  // past U+10FFFF
  EXPECT_EQ(held("\x80\x80\x80"), 0u);
}

// Any bytes, split into tokens anywhere: every piece is valid UTF-8 and the
// stream equals the lossy decoding of the whole.
TEST_F(StreamDecoderTest, AnyByteStreamComesOutValidAndEqualToTheWhole) {
  std::mt19937 rng(7);
  // Bytes biased towards UTF-8 structure so that valid and broken sequences both occur.
  const uint8_t alphabet[] = {'a',  ' ',  0x80, 0x8F, 0x9F, 0xA0, 0xBF, 0xC0, 0xC3,
                              0xDF, 0xE0, 0xE2, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF};
  for (int round = 0; round < 2000; ++round) {
    std::string bytes;
    const int n = static_cast<int>(rng() % 24);
    for (int i = 0; i < n; ++i) bytes.push_back(static_cast<char>(alphabet[rng() % sizeof(alphabet)]));
    StreamDecoder dec(*tok_);
    std::string streamed;
    for (char b : bytes) {
      std::string piece = dec.Feed(static_cast<uint8_t>(b));
      ASSERT_TRUE(IsValidUtf8(piece)) << "round " << round;
      streamed += piece;
    }
    std::string tail = dec.Flush();
    ASSERT_TRUE(IsValidUtf8(tail));
    streamed += tail;
    std::string whole;
    AppendUtf8Lossy(bytes, true, &whole);
    ASSERT_EQ(streamed, whole) << "round " << round;
  }
}

TEST(IsValidUtf8Test, Cases) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("h\xC3\xA9 \xF0\x9F\x98\x80 \xEF\xBF\xBD"));
  EXPECT_FALSE(IsValidUtf8("\x80"));
  EXPECT_FALSE(IsValidUtf8("a\xC3"));
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));
}

}  // namespace
}  // namespace troupe
