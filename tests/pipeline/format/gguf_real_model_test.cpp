// The default model's GGUF file parses and describes SmolLM2-135M as documented.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "pipeline/format/gguf_file.h"
#include "pipeline/format/model_source.h"

namespace troupe {
namespace {

TEST(GgufRealModel, ParsesSmolLm2) {
  auto file = GgufFile::Open(TROUPE_DEFAULT_MODEL);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->version(), 3u);
  auto config = ModelConfigFromGguf(**file);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  const ModelConfig& c = config.value();
  EXPECT_EQ(c.n_layers, 30);
  EXPECT_EQ(c.hidden, 576);
  EXPECT_EQ(c.n_heads, 9);
  EXPECT_EQ(c.n_kv_heads, 3);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.intermediate, 1536);
  EXPECT_EQ(c.vocab, 49152);
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_FLOAT_EQ(c.rope_theta, 100000.0f);
  EXPECT_EQ(c.rope_style, RopeStyle::kAdjacentPairs);

  const TensorView* k = (*file)->FindTensor("blk.0.attn_k.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->shape, (std::vector<int64_t>{192, 576}));
  EXPECT_EQ(k->type, GgmlType::Q4_1);
  const TensorView* emb = (*file)->FindTensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->type, GgmlType::Q8_0);
  EXPECT_EQ((*file)->FindTensor("blk.0.attn_norm.weight")->type, GgmlType::F32);

  auto spec = TokenizerSpecFromGguf(**file);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->tokens.size(), 49152u);
  EXPECT_EQ(spec->bos_id, 1);
  EXPECT_EQ(spec->eos_id, 2);
  EXPECT_EQ(spec->eot_id, -1);  // <|im_end|> is the EOS itself
  EXPECT_EQ(spec->tokens[1], "<|im_start|>");
  EXPECT_EQ(spec->pre, "smollm");
  EXPECT_NE(spec->chat_template.find("<|im_start|>"), std::string::npos);
}

TEST(GgufRealModel, ModelSourceRequireChecksShapes) {
  auto src = ModelSource::Open(TROUPE_DEFAULT_MODEL);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  EXPECT_TRUE((*src)->Require("blk.29.ffn_down.weight", {576, 1536}).ok());
  auto bad = (*src)->Require("blk.29.ffn_down.weight", {1536, 576});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ffn_down"), std::string::npos);
  auto missing = (*src)->Require("blk.30.ffn_down.weight", {576, 1536});
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

// The fingerprint nodes compare before serving a session: equal for a copy
// of the file, different when the metadata or the weights at the file's end
// change (two fine-tunes of one architecture).
TEST(GgufRealModel, FingerprintTellsModelsApart) {
  std::ifstream in(TROUPE_DEFAULT_MODEL, std::ios::binary);
  const std::vector<char> original((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(original.size(), 1u << 20);
  const std::string path = ::testing::TempDir() + "fingerprint-" + std::to_string(::getpid()) + ".gguf";
  auto fingerprint_of = [&path](const std::vector<char>& bytes) {
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    auto src = ModelSource::Open(path);
    EXPECT_TRUE(src.ok()) << src.status().ToString();
    return src.ok() ? (*src)->fingerprint() : std::string();
  };
  auto reference = ModelSource::Open(TROUPE_DEFAULT_MODEL);
  ASSERT_TRUE(reference.ok());
  EXPECT_EQ(fingerprint_of(original), (*reference)->fingerprint());

  std::vector<char> tuned = original;
  tuned[tuned.size() - 100] ^= 0x01;  // a weight of the file's last tensor
  EXPECT_NE(fingerprint_of(tuned), (*reference)->fingerprint());

  std::vector<char> renamed = original;
  const std::string name = "HuggingFaceTB";  // general.organization
  auto at = std::search(renamed.begin(), renamed.end(), name.begin(), name.end());
  ASSERT_NE(at, renamed.end());
  *at = 's';
  EXPECT_NE(fingerprint_of(renamed), (*reference)->fingerprint());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace troupe
