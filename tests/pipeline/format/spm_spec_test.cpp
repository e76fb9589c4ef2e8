// TokenizerSpecFromGguf on hand-built SentencePiece ("llama") GGUF metadata:
// scores, the unknown token, llama.cpp's defaults for add_space_prefix and
// add_bos when the file is silent, and GgufFile::GetFloatArray under it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipeline/format/gguf_file.h"
#include "pipeline/format/model_source.h"
#include "pipeline/text/tokenizer.h"
#include "tests/pipeline/format/gguf_writer.h"

namespace troupe {
namespace {

namespace g = gguf_test;

// <unk> <s> </s> ▁ a b ▁a ab ▁ab, with scores favouring ▁a over ab; `scores`
// replaces the scores when given.
g::GgufWriter SpmVocab(const g::Value* scores_override = nullptr) {
  const std::string mark = "\xE2\x96\x81";  // ▁
  const std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", mark, "a", "b", mark + "a", "ab", mark + "ab"};
  const std::vector<int32_t> types = {2, 3, 3, 1, 1, 1, 1, 1, 1};
  const std::vector<float> scores = {0, 0, 0, -1, -2, -2, -3, -4, -5};
  std::vector<g::Value> token_values, type_values, score_values;
  for (size_t i = 0; i < tokens.size(); ++i) {
    token_values.push_back(g::Str(tokens[i]));
    type_values.push_back(g::I32(types[i]));
    score_values.push_back(g::F32(scores[i]));
  }
  g::GgufWriter w;
  w.Kv("general.architecture", g::Str("llama"))
      .Kv("tokenizer.ggml.model", g::Str("llama"))
      .Kv("tokenizer.ggml.tokens", g::Array(g::kString, token_values))
      .Kv("tokenizer.ggml.token_type", g::Array(g::kI32, type_values))
      .Kv("tokenizer.ggml.scores", scores_override ? *scores_override : g::Array(g::kF32, score_values))
      .Kv("tokenizer.ggml.bos_token_id", g::U32(1))
      .Kv("tokenizer.ggml.eos_token_id", g::U32(2))
      .Kv("tokenizer.ggml.unknown_token_id", g::U32(0));
  return w;
}

class SpmSpecTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir_.ok()) << "mkdtemp failed"; }
  std::unique_ptr<GgufFile> Open(g::GgufWriter w) {
    auto f = GgufFile::Open(dir_.Write("spm" + std::to_string(files_++) + ".gguf", w.Build()));
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    return f.ok() ? std::move(f).value() : nullptr;
  }
  g::ScratchDir dir_;
  int files_ = 0;
};

TEST_F(SpmSpecTest, ReadsScoresAndLlamaCppDefaults) {
  auto f = Open(SpmVocab());
  ASSERT_NE(f, nullptr);
  auto spec = TokenizerSpecFromGguf(*f);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->model, "llama");
  EXPECT_EQ(spec->scores, (std::vector<float>{0, 0, 0, -1, -2, -2, -3, -4, -5}));
  EXPECT_EQ(spec->unk_id, 0);
  // No add_space_prefix / add_bos_token keys: llama.cpp adds both for SPM.
  EXPECT_TRUE(spec->add_space_prefix);
  EXPECT_TRUE(spec->add_bos);
  auto tok = Tokenizer::Create(*spec);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->Encode("ab", (*tok)->add_bos()), (std::vector<int32_t>{1, 8}));  // <s> ▁ab
}

TEST_F(SpmSpecTest, ExplicitFlagsWin) {
  g::GgufWriter w = SpmVocab();
  w.Kv("tokenizer.ggml.add_space_prefix", g::Bool(false)).Kv("tokenizer.ggml.add_bos_token", g::Bool(false));
  auto f = Open(w);
  ASSERT_NE(f, nullptr);
  auto spec = TokenizerSpecFromGguf(*f);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_FALSE(spec->add_space_prefix);
  EXPECT_FALSE(spec->add_bos);
  auto tok = Tokenizer::Create(*spec);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->Encode("ab", (*tok)->add_bos()), (std::vector<int32_t>{7}));  // ab
}

TEST_F(SpmSpecTest, ScoresOfTheWrongKindOrCountAreErrors) {
  const g::Value strings = g::Array(g::kString, {g::Str("x")});
  auto f = Open(SpmVocab(&strings));
  ASSERT_NE(f, nullptr);
  auto spec = TokenizerSpecFromGguf(*f);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(spec.status().message().find("tokenizer.ggml.scores"), std::string::npos) << spec.status().ToString();

  const g::Value too_few = g::Array(g::kF32, {g::F32(0), g::F32(0)});
  f = Open(SpmVocab(&too_few));
  ASSERT_NE(f, nullptr);
  spec = TokenizerSpecFromGguf(*f);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto tok = Tokenizer::Create(*spec);
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(tok.status().message().find("9 tokens but 2 scores"), std::string::npos) << tok.status().ToString();
}

TEST_F(SpmSpecTest, GetFloatArrayReadsNumbers) {
  g::GgufWriter w;
  w.Kv("f32", g::Array(g::kF32, {g::F32(0.5f), g::F32(-2.25f)}))
      .Kv("f64", g::Array(g::kF64, {g::F64(1e-300)}))
      .Kv("ints", g::Array(g::kI32, {g::I32(-3), g::I32(7)}))
      .Kv("strings", g::Array(g::kString, {g::Str("x")}))
      .Kv("scalar", g::F32(1.0f));
  auto f = Open(w);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->GetFloatArray("f32").value(), (std::vector<double>{0.5, -2.25}));
  EXPECT_EQ(f->GetFloatArray("f64").value(), (std::vector<double>{1e-300}));
  EXPECT_EQ(f->GetFloatArray("ints").value(), (std::vector<double>{-3, 7}));
  EXPECT_EQ(f->GetFloatArray("strings").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f->GetFloatArray("scalar").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f->GetFloatArray("absent").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace troupe
