// StreamDecoder: whole characters out, split characters held back.
#include "pipeline/text/stream_decoder.h"

#include <gtest/gtest.h>

#include "tests/pipeline/text/tiny_spec.h"

namespace troupe {
namespace {

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

TEST_F(StreamDecoderTest, FlushReturnsAnUnfinishedCharacter) {
  StreamDecoder dec(*tok_);
  EXPECT_EQ(dec.Feed('a'), "a");
  EXPECT_EQ(dec.Feed(0xE2), "");
  EXPECT_EQ(dec.Feed(0x82), "");
  EXPECT_EQ(dec.Flush(), "\xE2\x82");
  EXPECT_EQ(dec.pending_bytes(), 0u);
}

TEST_F(StreamDecoderTest, InvalidBytesPassThrough) {
  StreamDecoder dec(*tok_);
  EXPECT_EQ(dec.Feed(0x80), "\x80");  // stray continuation byte
  EXPECT_EQ(dec.Feed(0xFF), "\xFF");  // never valid
  EXPECT_EQ(dec.Feed(0xF0), "");
  EXPECT_EQ(dec.Feed('a'), "\xF0" "a");  // broken off by an ASCII character
  EXPECT_EQ(dec.Feed(0xE0), "");
  EXPECT_EQ(dec.Feed(0x80), "\xE0\x80");  // overlong form can never complete
  EXPECT_EQ(dec.Feed(-1), "");            // out-of-range id: nothing
}

TEST_F(StreamDecoderTest, SpecialTokensAreText) {
  StreamDecoder dec(*tok_);
  EXPECT_EQ(dec.Feed(testing::kIdImEnd), "<|im_end|>");
}

TEST(IncompleteUtf8SuffixTest, Cases) {
  EXPECT_EQ(IncompleteUtf8Suffix(""), 0u);
  EXPECT_EQ(IncompleteUtf8Suffix("abc"), 0u);
  EXPECT_EQ(IncompleteUtf8Suffix("a\xC3"), 1u);
  EXPECT_EQ(IncompleteUtf8Suffix("a\xC3\xA9"), 0u);
  EXPECT_EQ(IncompleteUtf8Suffix("\xE2\x82"), 2u);
  EXPECT_EQ(IncompleteUtf8Suffix("\xF0\x9F\x98"), 3u);
  EXPECT_EQ(IncompleteUtf8Suffix("\xF0\x9F\x98\x80"), 0u);
  EXPECT_EQ(IncompleteUtf8Suffix("\xED\xA0"), 0u);  // would be a surrogate
  EXPECT_EQ(IncompleteUtf8Suffix("\xF4\x90"), 0u);  // past U+10FFFF
  EXPECT_EQ(IncompleteUtf8Suffix("\x80\x80\x80"), 0u);
}

}  // namespace
}  // namespace troupe
