// Decoder on the real model: batching several sessions gives each the
// bit-identical result of running it alone; prefill equals step-by-step
// decode bit for bit (what lets the ring batch and replay sessions); a shard's
// layer range composes; a full KV cache is an error that touches nothing.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "pipeline/format/model_source.h"
#include "pipeline/model/decoder.h"
#include "pipeline/model/embedding.h"
#include "pipeline/model/lm_head.h"

namespace troupe {
namespace {

class DecoderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto src = ModelSource::Open(TROUPE_DEFAULT_MODEL);
    ASSERT_TRUE(src.ok()) << src.status().ToString();
    source_ = std::move(src).value();
  }
  static void TearDownTestSuite() { source_.reset(); }

  std::unique_ptr<Decoder> Load(int64_t begin, int64_t end) {
    auto d = Decoder::Load(*source_, begin, end, ModelOptions{2});
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d.ok() ? std::move(d).value() : nullptr;
  }
  at::Tensor Embed(const std::vector<int32_t>& ids) {
    auto e = Embedding::Load(*source_);
    return e.value()->Forward(ids).value();
  }
  std::unique_ptr<KvCache> Cache(const Decoder& d, int64_t max_length) {
    return KvCache::Create(d.cache_shape(), max_length).value();
  }

  static std::unique_ptr<ModelSource> source_;
};
std::unique_ptr<ModelSource> DecoderTest::source_;

TEST_F(DecoderTest, BatchedSessionsEqualSessionsAlone) {
  auto dec = Load(0, 30);
  const std::vector<int32_t> a = {504, 3458, 282, 4649, 314}, b = {19556, 905, 28};
  // Alone.
  auto ca = Cache(*dec, 16), cb = Cache(*dec, 16);
  at::Tensor ha = Embed(a), hb = Embed(b);
  ASSERT_TRUE(dec->Forward(ha, {{ca.get(), 5}}).ok());
  ASSERT_TRUE(dec->Forward(hb, {{cb.get(), 3}}).ok());
  // Together: one batch of 8 rows, then one decode step of both in one batch.
  auto ca2 = Cache(*dec, 16), cb2 = Cache(*dec, 16);
  at::Tensor hab = at::cat({Embed(a), Embed(b)}).contiguous();
  ASSERT_TRUE(dec->Forward(hab, {{ca2.get(), 5}, {cb2.get(), 3}}).ok());
  EXPECT_TRUE(at::equal(hab.slice(0, 0, 5), ha));
  EXPECT_TRUE(at::equal(hab.slice(0, 5, 8), hb));

  at::Tensor sa = Embed({28}), sb = Embed({30});
  ASSERT_TRUE(dec->Forward(sa, {{ca.get(), 1}}).ok());
  ASSERT_TRUE(dec->Forward(sb, {{cb.get(), 1}}).ok());
  at::Tensor sab = at::cat({Embed({28}), Embed({30})}).contiguous();
  ASSERT_TRUE(dec->Forward(sab, {{ca2.get(), 1}, {cb2.get(), 1}}).ok());
  EXPECT_TRUE(at::equal(sab.slice(0, 0, 1), sa));
  EXPECT_TRUE(at::equal(sab.slice(0, 1, 2), sb));
  EXPECT_EQ(ca2->length(), 6);
  EXPECT_EQ(cb2->length(), 4);
}

TEST_F(DecoderTest, PrefillEqualsStepByStep) {
  auto dec = Load(0, 30);
  const std::vector<int32_t> ids = {504, 3458, 282, 4649, 314, 253};
  auto c1 = Cache(*dec, 8), c2 = Cache(*dec, 8);
  at::Tensor all = Embed(ids);
  ASSERT_TRUE(dec->Forward(all, {{c1.get(), 6}}).ok());
  for (size_t i = 0; i < ids.size(); ++i) {
    at::Tensor one = Embed({ids[i]});
    ASSERT_TRUE(dec->Forward(one, {{c2.get(), 1}}).ok());
    EXPECT_TRUE(at::equal(one, all.slice(0, i, i + 1)))
        << "position " << i << " max diff " << (one - all.slice(0, i, i + 1)).abs().max().item<float>();
  }
}

TEST_F(DecoderTest, ACopiedPrefixContinuesBitForBitAsTheOriginal) {
  auto dec = Load(0, 30);
  const std::vector<int32_t> shared = {504, 3458, 282, 4649, 314, 253}, rest = {19556, 905};
  std::vector<int32_t> whole = shared;
  whole.insert(whole.end(), rest.begin(), rest.end());
  auto original = Cache(*dec, 8), fresh = Cache(*dec, 12);
  at::Tensor all = Embed(whole);
  ASSERT_TRUE(dec->Forward(all, {{original.get(), 8}}).ok());
  // A new session starting from the first 6 positions of the original's cache.
  ASSERT_TRUE(fresh->CopyPrefix(*original, 6).ok());
  EXPECT_EQ(fresh->length(), 6);
  at::Tensor tail = Embed(rest);
  ASSERT_TRUE(dec->Forward(tail, {{fresh.get(), 2}}).ok());
  EXPECT_TRUE(at::equal(tail, all.slice(0, 6, 8)));
  EXPECT_FALSE(fresh->CopyPrefix(*original, 9).ok()) << "more than the source holds";
  auto small = Cache(*dec, 4);
  EXPECT_FALSE(small->CopyPrefix(*original, 5).ok()) << "more than fits";
  auto other = KvCache::Create(Load(0, 10)->cache_shape(), 8).value();
  EXPECT_FALSE(other->CopyPrefix(*original, 2).ok()) << "another layer range";
}

TEST_F(DecoderTest, ShardsComposeToTheWholeModel) {
  auto whole = Load(0, 30), first = Load(0, 11), second = Load(11, 30);
  const std::vector<int32_t> ids = {504, 3458, 282, 4649};
  auto cw = Cache(*whole, 8), c1 = Cache(*first, 8), c2 = Cache(*second, 8);
  at::Tensor hw = Embed(ids), hs = Embed(ids);
  ASSERT_TRUE(whole->Forward(hw, {{cw.get(), 4}}).ok());
  ASSERT_TRUE(first->Forward(hs, {{c1.get(), 4}}).ok());
  ASSERT_TRUE(second->Forward(hs, {{c2.get(), 4}}).ok());
  EXPECT_TRUE(at::equal(hw, hs));
  // A cache for other layers is refused.
  at::Tensor h = Embed({1});
  EXPECT_EQ(second->Forward(h, {{c1.get(), 1}}).code(), StatusCode::kInvalidArgument);
}

TEST_F(DecoderTest, FullCacheIsResourceExhaustedAndTouchesNothing) {
  auto dec = Load(0, 2);
  auto cache = Cache(*dec, 4);
  at::Tensor h = Embed({1, 2, 3});
  ASSERT_TRUE(dec->Forward(h, {{cache.get(), 3}}).ok());
  at::Tensor h2 = Embed({4, 5});
  at::Tensor before = h2.clone();
  Status s = dec->Forward(h2, {{cache.get(), 2}});
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("4"), std::string::npos) << s.message();
  EXPECT_EQ(cache->length(), 3);
  EXPECT_TRUE(at::equal(h2, before));
}

TEST_F(DecoderTest, BadRangesAndShapesAreRefused) {
  EXPECT_EQ(Decoder::Load(*source_, 5, 5, ModelOptions{}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Decoder::Load(*source_, 0, 31, ModelOptions{}).status().code(), StatusCode::kInvalidArgument);
  auto dec = Load(0, 1);
  auto cache = Cache(*dec, 4);
  at::Tensor wrong = at::zeros({2, 100});
  EXPECT_EQ(dec->Forward(wrong, {{cache.get(), 2}}).code(), StatusCode::kInvalidArgument);
}

TEST_F(DecoderTest, EmbeddingRejectsIdsOutsideTheVocabulary) {
  auto e = Embedding::Load(*source_);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)->Forward({49152}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*e)->Forward({-1}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace troupe
