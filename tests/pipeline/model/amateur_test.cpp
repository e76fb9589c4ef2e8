// AmateurModel / AmateurSession on the tiny random Llama: the session's rows
// do not depend on how the history arrived (prefill, one token at a time, a
// replay, a diverging history), they are the model's (Score agrees), errors
// leave the session usable; the vocabulary check; and Generation's
// contrastive step keeping min_tokens.
#include "pipeline/model/amateur.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "pipeline/model/engine.h"
#include "pipeline/model/generation.h"
#include "tests/pipeline/model/tiny_fixture.h"

namespace troupe {
namespace {

const std::vector<int32_t> kHistory = {1, 40, 77, 120, 5, 9, 260, 33, 71, 200};

std::vector<float> Row(AmateurSession& s, const std::vector<int32_t>& tokens, int64_t vocab) {
  Result<const float*> row = s.LogitsAfter(tokens);
  EXPECT_TRUE(row.ok()) << row.status().ToString();
  if (!row.ok()) return {};
  return std::vector<float>(*row, *row + vocab);
}

std::vector<int32_t> Prefix(size_t n) { return std::vector<int32_t>(kHistory.begin(), kHistory.begin() + n); }

TEST(AmateurTest, RowsDependOnlyOnTheHistory) {
  testing::TinyLlama tiny;
  ASSERT_TRUE(tiny.ok());
  auto engine = Engine::Load(tiny.gguf(), ModelOptions{1});
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  auto amateur = AmateurModel::Load(tiny.gguf(), ModelOptions{1}, (*engine)->source());
  ASSERT_TRUE(amateur.ok()) << amateur.status().ToString();
  const int64_t vocab = (*amateur)->vocab();
  auto fresh = [&](size_t n) {
    auto s = (*amateur)->OpenSession(32);
    EXPECT_TRUE(s.ok());
    return Row(**s, Prefix(n), vocab);
  };

  auto opened = (*amateur)->OpenSession(32);
  ASSERT_TRUE(opened.ok());
  AmateurSession& s = **opened;
  // One token at a time equals a prefill of the same history, bit for bit.
  for (size_t n = 1; n <= kHistory.size(); ++n) {
    ASSERT_EQ(Row(s, Prefix(n), vocab), fresh(n)) << n;
    EXPECT_EQ(s.length(), static_cast<int64_t>(n));
  }
  // Asked again (a replay of the same history): the same row.
  EXPECT_EQ(Row(s, kHistory, vocab), fresh(kHistory.size()));
  // A shorter history, then one that diverges from what was fed.
  EXPECT_EQ(Row(s, Prefix(4), vocab), fresh(4));
  std::vector<int32_t> other = Prefix(6);
  other[5] = 99;
  auto other_fresh = (*amateur)->OpenSession(32);
  ASSERT_TRUE(other_fresh.ok());
  EXPECT_EQ(Row(s, other, vocab), Row(**other_fresh, other, vocab));

  // The rows are the model's: log_softmax(row)[next] is Score's logprob.
  auto scored = (*engine)->Score(kHistory);
  ASSERT_TRUE(scored.ok());
  for (size_t i = 0; i + 1 < kHistory.size(); ++i) {
    const std::vector<float> row = fresh(i + 1);
    double m = row[0], sum = 0;
    for (float v : row) m = std::max<double>(m, v);
    for (float v : row) sum += std::exp(v - m);
    EXPECT_NEAR(row[static_cast<size_t>(kHistory[i + 1])] - m - std::log(sum), scored->logprobs[i], 1e-4) << i;
  }
}

TEST(AmateurTest, ErrorsLeaveTheSessionUsable) {
  testing::TinyLlama tiny;
  ASSERT_TRUE(tiny.ok());
  auto source = ModelSource::Open(tiny.gguf());
  ASSERT_TRUE(source.ok());
  auto amateur = AmateurModel::Load(tiny.gguf(), ModelOptions{1}, **source);
  ASSERT_TRUE(amateur.ok()) << amateur.status().ToString();
  const int64_t vocab = (*amateur)->vocab();
  EXPECT_EQ((*amateur)->OpenSession((*source)->config().max_positions + 1).status().code(), StatusCode::kOutOfRange);
  auto opened = (*amateur)->OpenSession(4);
  ASSERT_TRUE(opened.ok());
  AmateurSession& s = **opened;
  EXPECT_EQ(s.LogitsAfter({}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.LogitsAfter({1, static_cast<int32_t>(vocab)}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.LogitsAfter(Prefix(5)).status().code(), StatusCode::kResourceExhausted);  // max_length 4
  auto again = (*amateur)->OpenSession(4);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Row(s, Prefix(3), vocab), Row(**again, Prefix(3), vocab));
}

TEST(AmateurTest, VocabularyMustMatch) {
  testing::TinyLlama tiny;
  testing::TinyLlama tied("--tied --seed 9");  // other weights, same vocabulary
  ASSERT_TRUE(tiny.ok() && tied.ok());
  auto expert = ModelSource::Open(tiny.gguf());
  ASSERT_TRUE(expert.ok());
  EXPECT_TRUE(AmateurModel::Load(tied.gguf(), ModelOptions{1}, **expert).ok());
  EXPECT_TRUE(AmateurModel::Load(tiny.hf(), ModelOptions{1}, **expert).ok());  // same tokens from tokenizer.json

  auto refused = AmateurModel::Load(TROUPE_DEFAULT_MODEL, ModelOptions{1}, **expert);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find(TROUPE_DEFAULT_MODEL), std::string::npos) << refused.status().message();
  EXPECT_NE(refused.status().message().find(tiny.gguf()), std::string::npos) << refused.status().message();
  EXPECT_NE(refused.status().message().find("vocabulary"), std::string::npos);
}

TEST(AmateurTest, VocabularyFingerprint) {
  TokenizerSpec a;
  a.tokens = {"ab", "c"};
  TokenizerSpec b = a;
  EXPECT_EQ(VocabularyFingerprint(a), VocabularyFingerprint(b));
  EXPECT_EQ(VocabularyFingerprint(a).size(), 16u);
  b.tokens = {"a", "bc"};  // same bytes, other tokens
  EXPECT_NE(VocabularyFingerprint(a), VocabularyFingerprint(b));
  b.tokens = {"ab", "d"};
  EXPECT_NE(VocabularyFingerprint(a), VocabularyFingerprint(b));
  b.tokens = {"ab", "c", ""};
  EXPECT_NE(VocabularyFingerprint(a), VocabularyFingerprint(b));
}

TEST(AmateurTest, ContrastiveGenerationKeepsMinTokens) {
  testing::TinyLlama tiny;
  ASSERT_TRUE(tiny.ok());
  auto source = ModelSource::Open(tiny.gguf());
  ASSERT_TRUE(source.ok());
  auto tokenizer = Tokenizer::Create((*source)->tokenizer_spec());
  ASSERT_TRUE(tokenizer.ok());
  const int32_t eos = (*tokenizer)->eos_id();
  ASSERT_GE(eos, 0);
  const int64_t vocab = (*source)->config().vocab;
  // eos is the only plausible token (alpha 0.5); the amateur prefers token 7.
  std::vector<float> expert(static_cast<size_t>(vocab), 0.0f), amateur(static_cast<size_t>(vocab), 0.0f);
  expert[static_cast<size_t>(eos)] = 10.0f;
  expert[7] = 9.0f;  // p = e^-1 p_max: below alpha 0.5 while eos counts
  expert[8] = 8.0f;
  amateur[7] = 5.0f;
  SamplingParams p;
  p.contrastive = true;
  p.contrastive_alpha = 0.5f;
  p.contrastive_beta = 1.0f;
  p.min_tokens = 2;
  auto gen = Generation::Create(**tokenizer, p, {1, 40});
  ASSERT_TRUE(gen.ok());
  // Without eos the plausible set is {7} (8 is e^-1 of 7: cut): 7, twice.
  EXPECT_EQ(gen->Next(expert.data(), vocab, amateur.data()).id, 7);
  EXPECT_EQ(gen->Next(expert.data(), vocab, amateur.data()).id, 7);
  TokenEvent last = gen->Next(expert.data(), vocab, amateur.data());
  EXPECT_EQ(last.id, eos);
  EXPECT_TRUE(last.eos);
  // Logprobs report the expert's own row, not the contrastive scores.
  p.min_tokens = 0;
  p.top_logprobs = 1;
  auto plain = Generation::Create(**tokenizer, p, {1, 40});
  ASSERT_TRUE(plain.ok());
  TokenEvent ev = plain->Next(expert.data(), vocab, amateur.data());
  EXPECT_EQ(ev.id, eos);
  ASSERT_TRUE(ev.logprobs.has_value());
  EXPECT_EQ(ev.logprobs->top[0].id, eos);
  EXPECT_LT(ev.logprobs->logprob, 0.0f);
}

}  // namespace
}  // namespace troupe
