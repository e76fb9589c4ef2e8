// The family table (model_family.h): what each architecture declares, and how
// ApplyFamily turns it into a ModelConfig.
#include "pipeline/model_family.h"

#include <gtest/gtest.h>

#include <cmath>

namespace troupe {
namespace {

ModelConfig Base(int64_t layers) {
  ModelConfig c;
  c.n_layers = layers;
  c.hidden = 640;
  c.n_heads = 4;
  c.n_kv_heads = 1;
  c.head_dim = 256;
  c.intermediate = 2048;
  c.vocab = 1000;
  c.max_positions = 4096;
  return c;
}

TEST(ModelFamily, LlamaFamiliesArePlain) {
  for (const char* a : {"llama", "mistral", "qwen2"}) {
    const ModelFamily* f = FindFamily(a);
    ASSERT_NE(f, nullptr) << a;
    ModelConfig c = Base(4);
    c.sliding_window = 512;  // ignored: no sliding pattern
    ApplyFamily(*f, &c);
    EXPECT_EQ(c.architecture, a);
    EXPECT_EQ(c.activation, Activation::kSilu);
    EXPECT_FALSE(c.embedding_scaled || c.qk_norm || c.post_norms);
    EXPECT_EQ(c.query_scale, 0.0f);
    EXPECT_TRUE(c.sliding_layers.empty());
    EXPECT_FALSE(c.IsSliding(0));
    EXPECT_EQ(c.Validate(), "");
  }
  EXPECT_EQ(FindFamily("llama")->gguf_rope, RopeStyle::kAdjacentPairs);
  EXPECT_EQ(FindFamily("qwen2")->gguf_rope, RopeStyle::kHalves);
}

TEST(ModelFamily, Gemma3SlidesFiveLayersInSix) {
  const ModelFamily* f = FindFamily("gemma3");
  ASSERT_NE(f, nullptr);
  ModelConfig c = Base(18);
  c.sliding_window = 512;
  ApplyFamily(*f, &c);
  EXPECT_EQ(c.activation, Activation::kGeluTanh);
  EXPECT_TRUE(c.embedding_scaled && c.qk_norm && c.post_norms);
  EXPECT_EQ(c.rope_style, RopeStyle::kHalves);
  EXPECT_EQ(c.query_scale, 1.0f / 16.0f);  // 1/sqrt(256)
  EXPECT_EQ(c.rope_theta_sliding, 10000.0f);
  ASSERT_EQ(c.sliding_layers.size(), 18u);
  for (int64_t l = 0; l < 18; ++l) EXPECT_EQ(c.IsSliding(l), l % 6 != 5) << l;  // 5, 11, 17 are global
  EXPECT_EQ(c.Validate(), "");
}

TEST(ModelFamily, Gemma3WithoutAWindowDoesNotSlide) {
  ModelConfig c = Base(18);
  ApplyFamily(*FindFamily("gemma3"), &c);
  EXPECT_TRUE(c.sliding_layers.empty());
}

TEST(ModelFamily, Gemma3TwentySevenBScalesByHiddenOverHeads) {
  ModelConfig c = Base(62);
  c.hidden = 5376;
  c.n_heads = 32;
  c.head_dim = 128;
  ApplyFamily(*FindFamily("gemma3"), &c);
  EXPECT_EQ(c.query_scale, 1.0f / std::sqrt(168.0f));
}

TEST(ModelFamily, UnknownArchitecturesAreNamedInTheList) {
  EXPECT_EQ(FindFamily("gpt2"), nullptr);
  EXPECT_EQ(FindFamily(""), nullptr);
  EXPECT_EQ(KnownArchitectures(), "llama, mistral, qwen2, gemma3");
}

TEST(ModelFamily, ValidateRejectsAShortSlidingList) {
  ModelConfig c = Base(18);
  c.sliding_window = 512;
  ApplyFamily(*FindFamily("gemma3"), &c);
  c.sliding_layers.pop_back();
  EXPECT_EQ(c.Validate(), "sliding_layers must name every layer");
}

}  // namespace
}  // namespace troupe
