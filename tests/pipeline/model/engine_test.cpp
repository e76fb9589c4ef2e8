// The engine end to end on real files: one set of tiny random weights written
// as GGUF (q/k rows permuted, adjacent-pair RoPE) and as a Hugging Face folder
// (unpermuted, half-split RoPE) must give the same logits — which pins RoPE
// both ways; and the real SmolLM2 file generates deterministically.
#include <gtest/gtest.h>

#include <cmath>

#include "pipeline/model/engine.h"
#include "pipeline/model/rope.h"
#include "tests/pipeline/model/tiny_fixture.h"

namespace troupe {
namespace {

std::vector<int32_t> SomeTokens(int64_t n, int32_t vocab) {
  std::vector<int32_t> t;
  for (int64_t i = 0; i < n; ++i) t.push_back(static_cast<int32_t>(3 + (i * 37 + 11) % (vocab - 3)));
  return t;
}

void ExpectSameScores(const std::string& flags) {
  testing::TinyLlama tiny(flags);
  ASSERT_TRUE(tiny.ok()) << "make_tiny_llama.py " << flags << " failed";
  auto gguf = Engine::Load(tiny.gguf(), ModelOptions{1});
  ASSERT_TRUE(gguf.ok()) << gguf.status().ToString();
  auto hf = Engine::Load(tiny.hf(), ModelOptions{1});
  ASSERT_TRUE(hf.ok()) << hf.status().ToString();
  EXPECT_EQ((*gguf)->config().rope_style, RopeStyle::kAdjacentPairs);
  EXPECT_EQ((*hf)->config().rope_style, RopeStyle::kHalves);
  const auto tokens = SomeTokens(40, static_cast<int32_t>((*gguf)->config().vocab));
  auto a = (*gguf)->Score(tokens);
  auto b = (*hf)->Score(tokens);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_EQ(a->logprobs.size(), tokens.size() - 1);
  double max_diff = 0;
  for (size_t i = 0; i < a->logprobs.size(); ++i)
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(a->logprobs[i]) - b->logprobs[i]));
  EXPECT_LT(max_diff, 2e-3) << flags;
  EXPECT_EQ(a->argmax, b->argmax) << flags;
}

TEST(EngineTinyLlama, GgufAndHuggingFaceGiveTheSameLogits) { ExpectSameScores(""); }
TEST(EngineTinyLlama, SameLogitsWithTiedEmbeddings) { ExpectSameScores("--tied"); }
TEST(EngineTinyLlama, SameLogitsWithQkvBiases) { ExpectSameScores("--qkv-bias"); }
TEST(EngineTinyLlama, SameLogitsWithLlama3RopeScaling) { ExpectSameScores("--llama3-rope"); }
TEST(EngineTinyLlama, SameLogitsFromF16Weights) { ExpectSameScores("--f16"); }

TEST(EngineTinyLlama, WrongRopeStyleChangesTheLogits) {
  // The check above would be vacuous if RoPE did not matter: swap the pairing
  // on the GGUF side and the logits must move.
  testing::TinyLlama tiny;
  ASSERT_TRUE(tiny.ok());
  auto source = ModelSource::Open(tiny.gguf());
  ASSERT_TRUE(source.ok());
  ModelConfig swapped = (*source)->config();
  swapped.rope_style = RopeStyle::kHalves;
  Rope right((*source)->config()), wrong(swapped);
  std::vector<float> x(swapped.head_dim), y(swapped.head_dim), cs(swapped.head_dim);
  for (int64_t i = 0; i < swapped.head_dim; ++i) x[i] = y[i] = 0.1f * static_cast<float>(i + 1);
  right.Angles(7, cs.data());
  right.Apply(x.data(), 1, cs.data());
  wrong.Apply(y.data(), 1, cs.data());
  EXPECT_NE(x, y);
}

TEST(EngineRealModel, ScoreRejectsShortInput) {
  auto engine = Engine::Load(TROUPE_DEFAULT_MODEL, ModelOptions{});
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  EXPECT_EQ((*engine)->Score({1}).status().code(), StatusCode::kInvalidArgument);
}

TEST(EngineRealModel, GreedyGenerationIsDeterministicAndStopsAtMaxTokens) {
  auto engine = Engine::Load(TROUPE_DEFAULT_MODEL, ModelOptions{});
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  const auto prompt = (*engine)->tokenizer().Encode("The capital of France is", false);
  SamplingParams p;
  p.max_tokens = 12;
  std::vector<int32_t> first, second;
  auto s1 = (*engine)->Generate(prompt, p, [&](const TokenEvent& e) { first.push_back(e.id); });
  auto s2 = (*engine)->Generate(prompt, p, [&](const TokenEvent& e) { second.push_back(e.id); });
  ASSERT_TRUE(s1.ok() && s2.ok());
  EXPECT_EQ(first, second);
  EXPECT_LE(first.size(), 12u);
  EXPECT_EQ(s1->prompt_tokens, static_cast<int64_t>(prompt.size()));
}

TEST(EngineRealModel, PromptLongerThanContextIsOutOfRange) {
  auto engine = Engine::Load(TROUPE_DEFAULT_MODEL, ModelOptions{});
  ASSERT_TRUE(engine.ok());
  std::vector<int32_t> prompt((*engine)->config().max_positions + 1, 100);
  SamplingParams p;
  auto s = (*engine)->Generate(prompt, p, [](const TokenEvent&) {});
  EXPECT_EQ(s.status().code(), StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace troupe
