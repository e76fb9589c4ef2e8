// The second real model's GGUF (Gemma 3 270M, installed by
// scripts/setup.sh --with-test-deps) reads as llama.cpp reads it: the family's
// traits and the file's sliding window.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "pipeline/format/gguf_file.h"
#include "pipeline/format/model_source.h"

namespace troupe {
namespace {

const std::string kGemma = std::string(TROUPE_SOURCE_DIR) + "/.deps/model-gemma3/gemma-3-270m-q4_k_m.gguf";

TEST(GgufGemma3, ConfigHasTheFamilysTraits) {
  if (::access(kGemma.c_str(), R_OK) != 0) GTEST_SKIP() << "scripts/setup.sh --with-test-deps installs " << kGemma;
  auto file = GgufFile::Open(kGemma);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto config = ModelConfigFromGguf(**file);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  const ModelConfig& c = *config;
  EXPECT_EQ(c.architecture, "gemma3");
  EXPECT_EQ(c.n_layers, 18);
  EXPECT_EQ(c.hidden, 640);
  EXPECT_EQ(c.n_heads, 4);
  EXPECT_EQ(c.n_kv_heads, 1);
  EXPECT_EQ(c.head_dim, 256);  // key_length, not hidden / n_heads
  EXPECT_EQ(c.intermediate, 2048);
  EXPECT_EQ(c.vocab, 262144);
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-6f);
  EXPECT_FLOAT_EQ(c.rope_theta, 1e6f);
  EXPECT_FLOAT_EQ(c.rope_theta_sliding, 1e4f);
  EXPECT_EQ(c.sliding_window, 512);
  EXPECT_EQ(c.rope_style, RopeStyle::kHalves);
  EXPECT_EQ(c.activation, Activation::kGeluTanh);
  EXPECT_TRUE(c.embedding_scaled && c.qk_norm && c.post_norms);
  EXPECT_EQ(c.query_scale, 1.0f / 16.0f);
  for (int64_t l = 0; l < 18; ++l) EXPECT_EQ(c.IsSliding(l), l % 6 != 5) << l;
  for (const char* t : {"blk.0.attn_q_norm.weight", "blk.0.attn_k_norm.weight", "blk.0.post_attention_norm.weight",
                        "blk.0.post_ffw_norm.weight"})
    EXPECT_NE((*file)->FindTensor(t), nullptr) << t;
}

// The file names no end-of-turn token; <end_of_turn> (106) is found by its
// text, as llama.cpp finds it, so a chat answer stops there.
TEST(GgufGemma3, EndOfTurnIsFoundByItsText) {
  if (::access(kGemma.c_str(), R_OK) != 0) GTEST_SKIP() << "scripts/setup.sh --with-test-deps installs " << kGemma;
  auto file = GgufFile::Open(kGemma);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto spec = TokenizerSpecFromGguf(**file);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->model, "llama");
  EXPECT_EQ(spec->eos_id, 1);
  EXPECT_EQ(spec->eot_id, 106);
  EXPECT_EQ(spec->tokens[106], "<end_of_turn>");
}

}  // namespace
}  // namespace troupe
