// HfCheckpoint on the tiny fixture (tests/python/make_tiny_llama.py): config
// fields, GGUF names and shapes, shards = one file, variants, and clear errors
// for missing or inconsistent folders. ParseHfConfig on hand-written configs.
#include "pipeline/format/hf_checkpoint.h"
#include "pipeline/format/model_source.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace troupe {
namespace {

namespace fs = std::filesystem;

const char kPython[] = TROUPE_SOURCE_DIR "/.venv/bin/python";
const char kFixtureScript[] = TROUPE_SOURCE_DIR "/tests/python/make_tiny_llama.py";

std::string TempRoot() {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/troupe_hf_XXXXXX";
  return ::mkdtemp(templ.data()) != nullptr ? templ : "";
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

int RunShell(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()); }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

float HalfToFloat(uint16_t h) {
  const int exp = (h >> 10) & 0x1F;
  const int mant = h & 0x3FF;
  float v =
      exp == 0 ? std::ldexp(static_cast<float>(mant), -24) : std::ldexp(static_cast<float>(mant | 0x400), exp - 25);
  return (h & 0x8000) ? -v : v;
}

// The fixture variants, generated once for the whole suite.
class HfCheckpointTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new std::string(TempRoot());
    error_ = new std::string();
    if (root_->empty()) {
      *error_ = "mkdtemp failed";
      return;
    }
    const std::map<std::string, std::string> variants = {
        {"base", ""},
        {"sharded", "--shards 3"},
        {"tied", "--tied"},
        {"qwen", "--qkv-bias"},
        {"llama3", "--llama3-rope"},
        {"f16", "--f16"},
        {"reseeded", "--seed 8"},
    };
    for (const auto& [name, flags] : variants) {
      const std::string cmd =
          Quote(kPython) + " " + Quote(kFixtureScript) + " " + Quote(*root_ + "/" + name) + " --seed 7 " + flags;
      if (RunShell(cmd) != 0) {
        *error_ = "fixture generation failed: " + cmd;
        return;
      }
    }
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    if (!root_->empty()) fs::remove_all(*root_, ec);
    delete root_;
    delete error_;
  }
  void SetUp() override { ASSERT_TRUE(error_->empty()) << *error_; }

  static std::string Hf(const std::string& variant) { return *root_ + "/" + variant + "/hf"; }

  // A private, writable copy of a variant's HF folder.
  static std::string CopyOf(const std::string& variant, const std::string& name) {
    const std::string dst = *root_ + "/copies/" + name;
    std::error_code ec;
    fs::remove_all(dst, ec);
    fs::create_directories(dst);
    fs::copy(Hf(variant), dst, fs::copy_options::recursive);
    return dst;
  }

  static std::unique_ptr<HfCheckpoint> MustOpen(const std::string& dir) {
    auto r = HfCheckpoint::Open(dir);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : nullptr;
  }

  static void ExpectError(const std::string& dir, StatusCode code, const std::string& fragment) {
    auto r = HfCheckpoint::Open(dir);
    ASSERT_FALSE(r.ok()) << "opened " << dir;
    EXPECT_EQ(r.status().code(), code) << r.status().ToString();
    EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().ToString();
  }

  static std::string* root_;
  static std::string* error_;
};
std::string* HfCheckpointTest::root_ = nullptr;
std::string* HfCheckpointTest::error_ = nullptr;

constexpr int64_t kVocab = 3 + 256 + 26;  // specials + bytes + merges

TEST_F(HfCheckpointTest, ReadsConfig) {
  auto ckpt = MustOpen(Hf("base"));
  ASSERT_NE(ckpt, nullptr);
  const ModelConfig& c = ckpt->config();
  EXPECT_EQ(ckpt->dir(), Hf("base"));
  EXPECT_EQ(c.architecture, "llama");
  EXPECT_EQ(c.name, "hf");
  EXPECT_EQ(c.n_layers, 3);
  EXPECT_EQ(c.hidden, 64);
  EXPECT_EQ(c.n_heads, 4);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.intermediate, 128);
  EXPECT_EQ(c.vocab, kVocab);
  EXPECT_EQ(c.max_positions, 256);
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-5f);
  EXPECT_FLOAT_EQ(c.rope_theta, 10000.0f);
  EXPECT_FALSE(c.rope_scaling.llama3);
  EXPECT_EQ(c.rope_style, RopeStyle::kHalves);
  EXPECT_FALSE(c.tied_embeddings);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_EQ(c.Validate(), "");
}

TEST_F(HfCheckpointTest, ExposesEveryTensorUnderGgufNames) {
  auto ckpt = MustOpen(Hf("base"));
  ASSERT_NE(ckpt, nullptr);
  std::map<std::string, std::vector<int64_t>> want = {
      {"token_embd.weight", {kVocab, 64}},
      {"output_norm.weight", {64}},
      {"output.weight", {kVocab, 64}},
  };
  for (int i = 0; i < 3; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    want[p + "attn_norm.weight"] = {64};
    want[p + "attn_q.weight"] = {64, 64};
    want[p + "attn_k.weight"] = {32, 64};
    want[p + "attn_v.weight"] = {32, 64};
    want[p + "attn_output.weight"] = {64, 64};
    want[p + "ffn_norm.weight"] = {64};
    want[p + "ffn_gate.weight"] = {128, 64};
    want[p + "ffn_up.weight"] = {128, 64};
    want[p + "ffn_down.weight"] = {64, 128};
  }
  std::vector<std::string> names;
  for (const auto& [name, shape] : want) {
    names.push_back(name);
    const TensorView* v = ckpt->Find(name);
    ASSERT_NE(v, nullptr) << name;
    EXPECT_EQ(v->name, name);
    EXPECT_EQ(v->type, GgmlType::F32) << name;
    EXPECT_EQ(v->shape, shape) << name;
    EXPECT_EQ(v->n_bytes, static_cast<size_t>(v->numel()) * 4) << name;
    ASSERT_NE(v->data, nullptr);
  }
  EXPECT_EQ(ckpt->names(), names);  // sorted, nothing extra
  EXPECT_EQ(ckpt->Find("model.embed_tokens.weight"), nullptr);
  EXPECT_EQ(ckpt->Find("blk.0.attn_q.bias"), nullptr);

  // Norms are drawn near 1: the bytes really are the fixture's floats.
  const TensorView* norm = ckpt->Find("output_norm.weight");
  std::vector<float> w(64);
  std::memcpy(w.data(), norm->data, 64 * sizeof(float));
  for (float x : w) EXPECT_NEAR(x, 1.0f, 0.6f);
}

TEST_F(HfCheckpointTest, ShardedEqualsSingleFile) {
  auto one = MustOpen(Hf("base"));
  auto sharded = MustOpen(Hf("sharded"));
  ASSERT_NE(one, nullptr);
  ASSERT_NE(sharded, nullptr);
  EXPECT_TRUE(fs::exists(Hf("sharded") + "/model-00003-of-00003.safetensors"));
  EXPECT_FALSE(fs::exists(Hf("sharded") + "/model.safetensors"));
  ASSERT_EQ(one->names(), sharded->names());
  for (const std::string& name : one->names()) {
    const TensorView* a = one->Find(name);
    const TensorView* b = sharded->Find(name);
    EXPECT_EQ(a->type, b->type) << name;
    EXPECT_EQ(a->shape, b->shape) << name;
    ASSERT_EQ(a->n_bytes, b->n_bytes) << name;
    EXPECT_EQ(std::memcmp(a->data, b->data, a->n_bytes), 0) << name;
  }
}

// Nodes compare fingerprints before serving a session: one set of weights
// stored whole or sharded is one model; other weights of the same
// architecture (a fine-tune) are another.
TEST_F(HfCheckpointTest, FingerprintTellsWeightsApartNotStorage) {
  auto fingerprint = [](const std::string& dir) {
    auto src = ModelSource::Open(dir);
    EXPECT_TRUE(src.ok()) << src.status().ToString();
    return src.ok() ? (*src)->fingerprint() : std::string();
  };
  const std::string base = fingerprint(Hf("base"));
  EXPECT_FALSE(base.empty());
  EXPECT_EQ(base, fingerprint(Hf("sharded")));
  EXPECT_NE(base, fingerprint(Hf("reseeded")));
  EXPECT_NE(base, fingerprint(Hf("qwen")));
}

TEST_F(HfCheckpointTest, TiedHasNoOutput) {
  auto ckpt = MustOpen(Hf("tied"));
  ASSERT_NE(ckpt, nullptr);
  EXPECT_TRUE(ckpt->config().tied_embeddings);
  EXPECT_EQ(ckpt->Find("output.weight"), nullptr);
  EXPECT_EQ(ckpt->names().size(), 1u + 3 * 9 + 1);
}

TEST_F(HfCheckpointTest, MissingLmHeadMeansTied) {
  // config.json says untied, but the weights carry no lm_head.weight.
  const std::string dir = CopyOf("tied", "lm_head_missing");
  fs::copy_file(Hf("base") + "/config.json", dir + "/config.json", fs::copy_options::overwrite_existing);
  auto ckpt = MustOpen(dir);
  ASSERT_NE(ckpt, nullptr);
  EXPECT_TRUE(ckpt->config().tied_embeddings);
  EXPECT_EQ(ckpt->Find("output.weight"), nullptr);
}

TEST_F(HfCheckpointTest, Qwen2HasQkvBiases) {
  auto ckpt = MustOpen(Hf("qwen"));
  ASSERT_NE(ckpt, nullptr);
  EXPECT_TRUE(ckpt->config().qkv_bias);
  EXPECT_EQ(ckpt->config().head_dim, 16);        // default hidden / heads
  EXPECT_EQ(ckpt->config().max_positions, 256);  // sliding window not in use
  for (int i = 0; i < 3; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    ASSERT_NE(ckpt->Find(p + "attn_q.bias"), nullptr);
    EXPECT_EQ(ckpt->Find(p + "attn_q.bias")->shape, (std::vector<int64_t>{64}));
    EXPECT_EQ(ckpt->Find(p + "attn_k.bias")->shape, (std::vector<int64_t>{32}));
    EXPECT_EQ(ckpt->Find(p + "attn_v.bias")->shape, (std::vector<int64_t>{32}));
  }
  EXPECT_EQ(ckpt->names().size(), 1u + 3 * 12 + 2);
}

TEST_F(HfCheckpointTest, Llama3RopeScaling) {
  auto ckpt = MustOpen(Hf("llama3"));
  ASSERT_NE(ckpt, nullptr);
  const RopeScaling& r = ckpt->config().rope_scaling;
  EXPECT_TRUE(r.llama3);
  EXPECT_FLOAT_EQ(r.factor, 4.0f);
  EXPECT_FLOAT_EQ(r.low_freq_factor, 1.0f);
  EXPECT_FLOAT_EQ(r.high_freq_factor, 4.0f);
  EXPECT_EQ(r.original_max_positions, 64);
}

TEST_F(HfCheckpointTest, F16VariantHoldsTheSameNumbersRounded) {
  auto f32 = MustOpen(Hf("base"));
  auto f16 = MustOpen(Hf("f16"));
  ASSERT_NE(f32, nullptr);
  ASSERT_NE(f16, nullptr);
  const TensorView* a = f32->Find("blk.1.attn_k.weight");
  const TensorView* b = f16->Find("blk.1.attn_k.weight");
  ASSERT_EQ(b->type, GgmlType::F16);
  ASSERT_EQ(a->numel(), b->numel());
  for (int64_t i = 0; i < a->numel(); ++i) {
    float x;
    uint16_t h;
    std::memcpy(&x, a->data + 4 * i, 4);
    std::memcpy(&h, b->data + 2 * i, 2);
    ASSERT_NEAR(HalfToFloat(h), x, std::fabs(x) * 1e-3f + 1e-7f) << i;
  }
}

TEST_F(HfCheckpointTest, MissingConfigIsNotFound) {
  const std::string dir = CopyOf("base", "no_config");
  fs::remove(dir + "/config.json");
  ExpectError(dir, StatusCode::kNotFound, "config.json");
  ExpectError(*root_ + "/does_not_exist", StatusCode::kNotFound, "config.json");
}

TEST_F(HfCheckpointTest, MissingWeightsIsNotFound) {
  const std::string dir = CopyOf("base", "no_weights");
  fs::remove(dir + "/model.safetensors");
  ExpectError(dir, StatusCode::kNotFound, "no model.safetensors");
}

TEST_F(HfCheckpointTest, BadConfigIsCorrupt) {
  const std::string dir = CopyOf("base", "bad_config");
  WriteFile(dir + "/config.json", "{\"hidden_size\": 64,");
  ExpectError(dir, StatusCode::kCorrupt, "config.json: not valid JSON");
}

TEST_F(HfCheckpointTest, MoreLayersThanStoredNamesFirstMissingTensor) {
  const std::string dir = CopyOf("base", "four_layers");
  std::string config = ReadFile(dir + "/config.json");
  const size_t at = config.find("\"num_hidden_layers\": 3");
  ASSERT_NE(at, std::string::npos);
  config.replace(at, 22, "\"num_hidden_layers\": 4");
  WriteFile(dir + "/config.json", config);
  ExpectError(dir, StatusCode::kNotFound, "'model.layers.3.input_layernorm.weight' (blk.3.attn_norm.weight)");
}

TEST_F(HfCheckpointTest, WrongShapeNamesTensorAndShapes) {
  const std::string dir = CopyOf("base", "wrong_shape");
  std::string config = ReadFile(dir + "/config.json");
  const size_t at = config.find("\"intermediate_size\": 128");
  ASSERT_NE(at, std::string::npos);
  config.replace(at, 24, "\"intermediate_size\": 96 ");
  WriteFile(dir + "/config.json", config);
  ExpectError(dir, StatusCode::kCorrupt,
              "'model.layers.0.mlp.gate_proj.weight' (blk.0.ffn_gate.weight) has shape [128, 64]; "
              "the config implies [96, 64]");
}

TEST_F(HfCheckpointTest, TensorDroppedFromWeightsIsNamed) {
  const std::string dir = CopyOf("base", "dropped_tensor");
  const std::string file = dir + "/model.safetensors";
  const std::string script =
      "from safetensors.numpy import load_file, save_file; import sys; "
      "d = load_file(sys.argv[1]); del d['model.layers.2.self_attn.v_proj.weight']; "
      "save_file(d, sys.argv[1])";
  ASSERT_EQ(RunShell(Quote(kPython) + " -c " + Quote(script) + " " + Quote(file)), 0);
  ExpectError(dir, StatusCode::kNotFound, "'model.layers.2.self_attn.v_proj.weight'");
}

TEST_F(HfCheckpointTest, ShardIndexMustAgreeWithShards) {
  {
    const std::string dir = CopyOf("sharded", "shard_missing");
    fs::remove(dir + "/model-00002-of-00003.safetensors");
    ExpectError(dir, StatusCode::kNotFound, "model-00002-of-00003.safetensors");
  }
  {
    const std::string dir = CopyOf("sharded", "shard_wrong");
    std::string index = ReadFile(dir + "/model.safetensors.index.json");
    const std::string key = "\"model.embed_tokens.weight\": \"model-00001-of-00003.safetensors\"";
    const size_t at = index.find(key);
    ASSERT_NE(at, std::string::npos);
    index.replace(at, key.size(), "\"model.embed_tokens.weight\": \"model-00002-of-00003.safetensors\"");
    WriteFile(dir + "/model.safetensors.index.json", index);
    ExpectError(dir, StatusCode::kCorrupt, "'model.embed_tokens.weight' is listed in model-00002");
  }
  {
    const std::string dir = CopyOf("sharded", "shard_escape");
    WriteFile(dir + "/model.safetensors.index.json",
              R"({"weight_map": {"model.norm.weight": "../base/hf/model.safetensors"}})");
    ExpectError(dir, StatusCode::kCorrupt, "file name in the folder");
  }
  {
    const std::string dir = CopyOf("sharded", "shard_bad_json");
    WriteFile(dir + "/model.safetensors.index.json", "{\"weight_map\": ");
    ExpectError(dir, StatusCode::kCorrupt, "model.safetensors.index.json: not a JSON object");
  }
}

TEST_F(HfCheckpointTest, CorruptWeightsFileIsReported) {
  const std::string dir = CopyOf("base", "corrupt_weights");
  fs::resize_file(dir + "/model.safetensors", 1000);
  ExpectError(dir, StatusCode::kCorrupt, "model.safetensors: header length");
}

// ---------------------------------------------------------------- ParseHfConfig

constexpr char kMinimal[] = R"({
  "architectures": ["LlamaForCausalLM"],
  "hidden_size": 576, "num_hidden_layers": 30, "num_attention_heads": 9,
  "num_key_value_heads": 3, "intermediate_size": 1536, "vocab_size": 49152,
  "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "rope_theta": 100000,
  "tie_word_embeddings": true)";

Result<ModelConfig> Parse(const std::string& extra) {
  return ParseHfConfig(std::string(kMinimal) + extra + "}", "cfg.json");
}

void ExpectConfigError(const std::string& text, StatusCode code, const std::string& fragment) {
  auto r = ParseHfConfig(text, "cfg.json");
  ASSERT_FALSE(r.ok()) << text;
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_EQ(r.status().message().rfind("cfg.json: ", 0), 0u) << r.status().ToString();
  EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().ToString();
}

TEST(HfCheckpointConfigTest, SmolLm2Shape) {
  auto r = Parse("");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->head_dim, 64);
  EXPECT_EQ(r->n_kv_heads, 3);
  EXPECT_FLOAT_EQ(r->rope_theta, 100000.0f);
  EXPECT_TRUE(r->tied_embeddings);
  EXPECT_EQ(r->rope_style, RopeStyle::kHalves);
}

TEST(HfCheckpointConfigTest, Defaults) {
  auto r = ParseHfConfig(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": null, "intermediate_size": 128,
      "vocab_size": 300, "max_position_embeddings": 128, "rope_scaling": null})",
                         "cfg.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->n_kv_heads, 4);
  EXPECT_EQ(r->head_dim, 16);
  EXPECT_FLOAT_EQ(r->rope_theta, 10000.0f);
  EXPECT_FLOAT_EQ(r->rms_eps, 1e-6f);
  EXPECT_FALSE(r->tied_embeddings);
  EXPECT_FALSE(r->qkv_bias);
  EXPECT_FALSE(r->rope_scaling.llama3);
}

TEST(HfCheckpointConfigTest, ExplicitHeadDimAndAttentionBias) {
  auto r = Parse(R"(, "head_dim": 32, "attention_bias": true)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->head_dim, 32);
  EXPECT_TRUE(r->qkv_bias);
}

TEST(HfCheckpointConfigTest, MistralSlidingWindowCapsPositions) {
  std::string text = kMinimal;
  text.replace(text.find("LlamaForCausalLM"), 16, "MistralForCausalLM");
  auto r = ParseHfConfig(text + R"(, "sliding_window": 4096})", "cfg.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->max_positions, 4096);
  r = ParseHfConfig(text + R"(, "sliding_window": null})", "cfg.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->max_positions, 8192);
}

TEST(HfCheckpointConfigTest, Qwen2WindowOnlyWhenUsed) {
  std::string text = kMinimal;
  text.replace(text.find("LlamaForCausalLM"), 16, "Qwen2ForCausalLM");
  auto r = ParseHfConfig(text + R"(, "sliding_window": 1024, "use_sliding_window": false})", "cfg.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->qkv_bias);
  EXPECT_EQ(r->max_positions, 8192);
  r = ParseHfConfig(text + R"(, "sliding_window": 1024, "use_sliding_window": true})", "cfg.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->max_positions, 1024);
}

TEST(HfCheckpointConfigTest, Llama3ScalingBothSpellings) {
  for (const char* key : {"rope_type", "type"}) {
    auto r = Parse(std::string(R"(, "rope_scaling": {")") + key +
                   R"(": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                   "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->rope_scaling.llama3);
    EXPECT_FLOAT_EQ(r->rope_scaling.factor, 8.0f);
    EXPECT_EQ(r->rope_scaling.original_max_positions, 8192);
  }
  auto r = Parse(R"(, "rope_scaling": {"rope_type": "default"})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->rope_scaling.llama3);
}

TEST(HfCheckpointConfigTest, RopeParametersLayout) {
  auto r = ParseHfConfig(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64,
      "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128,
      "vocab_size": 300, "max_position_embeddings": 128,
      "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0,
        "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192}})",
                         "cfg.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FLOAT_EQ(r->rope_theta, 500000.0f);
  EXPECT_TRUE(r->rope_scaling.llama3);
  EXPECT_FLOAT_EQ(r->rope_scaling.factor, 32.0f);
}

TEST(HfCheckpointConfigTest, Errors) {
  const std::string base = kMinimal;
  ExpectConfigError("[]", StatusCode::kCorrupt, "not a JSON object");
  ExpectConfigError("{", StatusCode::kCorrupt, "not valid JSON");
  std::string gpt2 = base;
  gpt2.replace(gpt2.find("LlamaForCausalLM"), 16, "GPT2LMHeadModel");
  ExpectConfigError(gpt2 + "}", StatusCode::kUnsupported, "GPT2LMHeadModel");
  ExpectConfigError(R"({"hidden_size": 64})", StatusCode::kUnsupported, "none given");
  ExpectConfigError(base + R"(, "hidden_act": "gelu"})", StatusCode::kUnsupported, "gelu");
  ExpectConfigError(base + R"(, "mlp_bias": true})", StatusCode::kUnsupported, "mlp_bias");
  ExpectConfigError(base + R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}})", StatusCode::kUnsupported,
                    "'yarn'");
  ExpectConfigError(base + R"(, "rope_scaling": {"type": "linear", "factor": 2.0}})", StatusCode::kUnsupported,
                    "'linear'");
  ExpectConfigError(base + R"(, "rope_scaling": {"rope_type": "llama3"}})", StatusCode::kCorrupt, "\"factor\"");
  ExpectConfigError(base + R"(, "rope_scaling": "llama3"})", StatusCode::kCorrupt, "rope_scaling");
  ExpectConfigError(base + R"(, "head_dim": "64"})", StatusCode::kCorrupt, "\"head_dim\" must be an integer");
  ExpectConfigError(base + R"(, "head_dim": -64})", StatusCode::kInvalidArgument, "out of range");
  ExpectConfigError(base + R"(, "head_dim": 18446744073709551615})", StatusCode::kInvalidArgument, "too large");
  ExpectConfigError(base + R"(, "num_key_value_heads": 2})", StatusCode::kInvalidArgument, "multiple of n_kv_heads");
  ExpectConfigError(base + R"(, "tie_word_embeddings": 1})", StatusCode::kCorrupt, "tie_word_embeddings");
  std::string no_vocab = base;
  no_vocab.replace(no_vocab.find("\"vocab_size\": 49152,"), 20, "");
  ExpectConfigError(no_vocab + "}", StatusCode::kCorrupt, "missing \"vocab_size\"");
}

}  // namespace
}  // namespace troupe
