// GgufFile::Open reads hand-built GGUF files exactly and turns every kind of
// broken or hostile file into a Status naming the file and the problem.
#include "pipeline/format/gguf_file.h"

#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/format/layer_tensors.h"
#include "pipeline/format/model_source.h"
#include "pipeline/format/weight_digest.h"
#include "tests/pipeline/format/gguf_writer.h"

namespace troupe {
namespace {

namespace g = gguf_test;

constexpr uint32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ8_0 = 8, kQ4_K = 12, kQ6_K = 14, kBF16 = 30;
constexpr uint64_t kHuge = uint64_t{1} << 62;
constexpr uintptr_t kPage = 4096;

std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// A small but complete llama-style file: model and tokenizer metadata plus a
// tensor of every supported type. Under one page, with no trailing padding.
// `layers` repeats blk.0's tensors (seeded apart) for more layers, and
// `norm` sizes each layer's attn_norm (floats) to make layers of any size.
g::GgufWriter TinyLlama(uint32_t layers = 1, uint64_t norm = 32) {
  g::GgufWriter w;
  const std::vector<std::string> tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "a", "b", "ab", "Ġ", "Ġab"};
  std::vector<g::Value> token_values, types;
  for (size_t i = 0; i < tokens.size(); ++i) {
    token_values.push_back(g::Str(tokens[i]));
    types.push_back(g::I32(i < 3 ? 3 : 1));
  }
  w.Kv("general.architecture", g::Str("llama"))
      .Kv("general.name", g::Str("tiny"))
      .Kv("general.alignment", g::U32(32))
      .Kv("llama.block_count", g::U32(layers))
      .Kv("llama.embedding_length", g::U32(32))
      .Kv("llama.attention.head_count", g::U32(2))
      .Kv("llama.attention.head_count_kv", g::U32(1))
      .Kv("llama.feed_forward_length", g::U64(64))
      .Kv("llama.context_length", g::U32(128))
      .Kv("llama.attention.layer_norm_rms_epsilon", g::F32(1e-5f))
      .Kv("llama.rope.freq_base", g::F32(10000.0f))
      .Kv("tokenizer.ggml.model", g::Str("gpt2"))
      .Kv("tokenizer.ggml.pre", g::Str("smollm"))
      .Kv("tokenizer.ggml.tokens", g::Array(g::kString, token_values))
      .Kv("tokenizer.ggml.token_type", g::Array(g::kI32, types))
      .Kv("tokenizer.ggml.merges", g::Array(g::kString, {g::Str("a b"), g::Str("Ġ ab")}))
      .Kv("tokenizer.ggml.bos_token_id", g::U32(1))
      .Kv("tokenizer.ggml.eos_token_id", g::U32(2))
      .Kv("tokenizer.ggml.add_bos_token", g::Bool(false))
      .Kv("tokenizer.chat_template", g::Str("{{ messages }}"));
  w.Tensor("token_embd.weight", {32, 8}, kQ8_0, Pattern(8 * 34, 1));
  for (uint32_t l = 0; l < layers; ++l) {
    const std::string blk = "blk." + std::to_string(l) + ".";
    const uint32_t seed = 100 * l;
    w.Tensor(blk + "attn_norm.weight", {norm}, kF32, Pattern(norm * 4, seed + 2))
        .Tensor(blk + "attn_q.weight", {32, 2}, kQ4_0, Pattern(2 * 18, seed + 3))
        .Tensor(blk + "attn_k.weight", {32, 1}, kQ4_1, Pattern(20, seed + 4))
        .Tensor(blk + "ffn_up.weight", {256, 1}, kQ4_K, Pattern(144, seed + 5))
        .Tensor(blk + "ffn_down.weight", {256, 1}, kQ6_K, Pattern(210, seed + 6))
        .Tensor(blk + "ffn_norm.weight", {8}, kBF16, Pattern(16, seed + 7));
  }
  w.Tensor("output_norm.weight", {32}, kF16, Pattern(64, 8));
  return w;
}

class GgufTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir_.ok()) << "mkdtemp failed"; }

  std::string Write(const std::vector<uint8_t>& bytes, const std::string& name = "model.gguf") {
    return dir_.Write(name, bytes);
  }

  // Opens `bytes` as a file and expects failure with `code` and a message that
  // names the file and contains every one of `parts`.
  void ExpectRejected(const std::vector<uint8_t>& bytes, StatusCode code, const std::vector<std::string>& parts) {
    const std::string path = Write(bytes, "hostile.gguf");
    auto file = GgufFile::Open(path);
    ASSERT_FALSE(file.ok()) << "accepted a hostile file";
    const Status& s = file.status();
    EXPECT_EQ(s.code(), code) << s.ToString();
    EXPECT_NE(s.message().find(path), std::string::npos) << "message does not name the file: " << s.ToString();
    for (const std::string& p : parts)
      EXPECT_NE(s.message().find(p), std::string::npos) << "message lacks '" << p << "': " << s.ToString();
  }

  g::ScratchDir dir_;
};

// ---------------------------------------------------------------------------
// Valid files read back exactly.

TEST_F(GgufTest, ReadsEveryMetadataTypeExactly) {
  const std::string with_nul("nul\0inside", 10);
  g::GgufWriter w;
  w.Kv("u8", g::U8(255))
      .Kv("i8", g::I8(-128))
      .Kv("u16", g::U16(65535))
      .Kv("i16", g::I16(-32768))
      .Kv("u32", g::U32(0xFFFFFFFFu))
      .Kv("i32", g::I32(std::numeric_limits<int32_t>::min()))
      .Kv("u64", g::U64(std::numeric_limits<uint64_t>::max()))
      .Kv("u64.small", g::U64(uint64_t{1} << 40))
      .Kv("i64", g::I64(std::numeric_limits<int64_t>::min()))
      .Kv("f32", g::F32(3.14159274f))
      .Kv("f64", g::F64(-1.0e300))
      .Kv("bool.true", g::Bool(true))
      .Kv("bool.false", g::Bool(false))
      .Kv("string", g::Str("héllo ✓"))
      .Kv("string.empty", g::Str(""))
      .Kv("string.nul", g::Str(with_nul))
      .Kv("array.u8", g::Array(g::kU8, {g::U8(0), g::U8(7), g::U8(255)}))
      .Kv("array.i64", g::Array(g::kI64, {g::I64(-5), g::I64(std::numeric_limits<int64_t>::max())}))
      .Kv("array.f32", g::Array(g::kF32, {g::F32(0.5f), g::F32(-2.25f)}))
      .Kv("array.f64", g::Array(g::kF64, {g::F64(1e-300)}))
      .Kv("array.bool", g::Array(g::kBool, {g::Bool(true), g::Bool(false), g::Bool(true)}))
      .Kv("array.string", g::Array(g::kString, {g::Str("x"), g::Str(""), g::Str("Ġthe")}))
      .Kv("array.empty", g::Array(g::kU32, {}))
      .Kv("array.nested", g::Array(g::kArray, {g::Array(g::kI16, {g::I16(1), g::I16(-2)}),
                                               g::Array(g::kString, {g::Str("deep")}), g::Array(g::kU8, {})}))
      .Kv("array.depth4",
          g::Array(g::kArray, {g::Array(g::kArray, {g::Array(g::kArray, {g::Array(g::kU16, {g::U16(9)})})})}));
  const std::string path = Write(w.Build());
  auto opened = GgufFile::Open(path);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  const GgufFile& f = **opened;
  EXPECT_EQ(f.path(), path);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.metadata().size(), 25u);
  EXPECT_TRUE(f.tensors().empty());

  auto type_of = [&](const char* key) { return f.Find(key) ? f.Find(key)->type : GgufValueType::kArray; };
  EXPECT_EQ(type_of("u8"), GgufValueType::kU8);
  EXPECT_EQ(type_of("i16"), GgufValueType::kI16);
  EXPECT_EQ(type_of("f64"), GgufValueType::kF64);
  EXPECT_EQ(type_of("string"), GgufValueType::kString);
  EXPECT_EQ(f.GetInt("u8").value(), 255);
  EXPECT_EQ(f.GetInt("i8").value(), -128);
  EXPECT_EQ(f.GetInt("u16").value(), 65535);
  EXPECT_EQ(f.GetInt("i16").value(), -32768);
  EXPECT_EQ(f.GetInt("u32").value(), 4294967295);
  EXPECT_EQ(f.GetInt("i32").value(), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(f.Find("u64")->u, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(f.GetInt("u64").status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(f.GetInt("u64.small").value(), int64_t{1} << 40);
  EXPECT_EQ(f.GetInt("i64").value(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f.GetFloat("f32").value(), static_cast<double>(3.14159274f));
  EXPECT_EQ(f.GetFloat("f64").value(), -1.0e300);
  EXPECT_EQ(f.GetFloat("u16").value(), 65535.0);  // integers are numbers too
  EXPECT_TRUE(f.GetBool("bool.true").value());
  EXPECT_FALSE(f.GetBool("bool.false").value());
  EXPECT_EQ(f.GetString("string").value(), "héllo ✓");
  EXPECT_EQ(f.GetString("string.empty").value(), "");
  EXPECT_EQ(f.GetString("string.nul").value(), with_nul);

  const GgufValue* u8s = f.Find("array.u8");
  ASSERT_NE(u8s, nullptr);
  EXPECT_EQ(u8s->type, GgufValueType::kArray);
  EXPECT_EQ(u8s->elem_type, GgufValueType::kU8);
  EXPECT_EQ(f.GetIntArray("array.u8").value(), (std::vector<int64_t>{0, 7, 255}));
  EXPECT_EQ(f.GetIntArray("array.i64").value(), (std::vector<int64_t>{-5, std::numeric_limits<int64_t>::max()}));
  const GgufValue* f32s = f.Find("array.f32");
  ASSERT_EQ(f32s->items.size(), 2u);
  EXPECT_EQ(f32s->items[0].f, 0.5);
  EXPECT_EQ(f32s->items[1].f, -2.25);
  EXPECT_EQ(f.Find("array.f64")->items.at(0).f, 1e-300);
  const GgufValue* bools = f.Find("array.bool");
  ASSERT_EQ(bools->items.size(), 3u);
  EXPECT_TRUE(bools->items[0].b);
  EXPECT_FALSE(bools->items[1].b);
  EXPECT_TRUE(bools->items[2].b);
  EXPECT_EQ(f.GetStringArray("array.string").value(), (std::vector<std::string>{"x", "", "Ġthe"}));
  EXPECT_EQ(f.Find("array.empty")->elem_type, GgufValueType::kU32);
  EXPECT_TRUE(f.Find("array.empty")->items.empty());
  EXPECT_TRUE(f.GetIntArray("array.empty").value().empty());

  const GgufValue* nested = f.Find("array.nested");
  ASSERT_EQ(nested->elem_type, GgufValueType::kArray);
  ASSERT_EQ(nested->items.size(), 3u);
  EXPECT_EQ(nested->items[0].elem_type, GgufValueType::kI16);
  ASSERT_EQ(nested->items[0].items.size(), 2u);
  EXPECT_EQ(nested->items[0].items[0].i, 1);
  EXPECT_EQ(nested->items[0].items[1].i, -2);
  EXPECT_EQ(nested->items[1].elem_type, GgufValueType::kString);
  EXPECT_EQ(nested->items[1].items.at(0).s, "deep");
  EXPECT_TRUE(nested->items[2].items.empty());
  const GgufValue* v = f.Find("array.depth4");
  for (int level = 0; level < 3; ++level) {
    ASSERT_EQ(v->items.size(), 1u);
    v = &v->items[0];
  }
  EXPECT_EQ(v->elem_type, GgufValueType::kU16);
  EXPECT_EQ(v->items.at(0).i, 9);
}

TEST_F(GgufTest, TypedGettersReportMissingAndMistypedKeys) {
  g::GgufWriter w;
  w.Kv("s", g::Str("text")).Kv("n", g::I32(3)).Kv("ints", g::Array(g::kI32, {g::I32(1)}));
  const std::string path = Write(w.Build());
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->Find("absent"), nullptr);
  auto missing = (*f)->GetInt("absent");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(path), std::string::npos);
  EXPECT_NE(missing.status().message().find("absent"), std::string::npos);
  EXPECT_EQ((*f)->GetInt("s").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*f)->GetFloat("s").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*f)->GetString("n").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*f)->GetBool("n").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*f)->GetStringArray("ints").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*f)->GetIntArray("s").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*f)->GetStringArray("absent").status().code(), StatusCode::kNotFound);
}

TEST_F(GgufTest, ReadsVersion2) {
  g::GgufWriter w;
  w.set_version(2).Kv("k", g::U32(1)).Tensor("t", {4}, kF32, Pattern(16, 1));
  auto f = GgufFile::Open(Write(w.Build()));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->version(), 2u);
  ASSERT_NE((*f)->FindTensor("t"), nullptr);
}

TEST_F(GgufTest, TensorsOfEveryTypeAreDescribedExactly) {
  struct Case {
    const char* name;
    std::vector<uint64_t> dims;
    uint32_t type;
    GgmlType ggml;
    size_t bytes;
    std::vector<int64_t> shape;
  };
  const std::vector<Case> cases = {
      {"f32", {4, 3}, kF32, GgmlType::F32, 4 * 3 * 4, {3, 4}},
      {"f16", {6, 2}, kF16, GgmlType::F16, 6 * 2 * 2, {2, 6}},
      {"bf16", {5}, kBF16, GgmlType::BF16, 10, {5}},
      {"q4_0", {64, 2}, kQ4_0, GgmlType::Q4_0, 4 * 18, {2, 64}},
      {"q4_1", {32, 3}, kQ4_1, GgmlType::Q4_1, 3 * 20, {3, 32}},
      {"q8_0", {32, 1, 2}, kQ8_0, GgmlType::Q8_0, 2 * 34, {2, 1, 32}},
      {"q4_k", {256, 2}, kQ4_K, GgmlType::Q4_K, 2 * 144, {2, 256}},
      {"q6_k", {512, 1, 1, 2}, kQ6_K, GgmlType::Q6_K, 4 * 210, {2, 1, 1, 512}},
  };
  g::GgufWriter w;
  for (size_t i = 0; i < cases.size(); ++i)
    w.Tensor(cases[i].name, cases[i].dims, cases[i].type, Pattern(cases[i].bytes, static_cast<uint32_t>(i)));
  const std::vector<uint8_t> bytes = w.Build();
  auto opened = GgufFile::Open(Write(bytes));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  const GgufFile& f = **opened;
  ASSERT_EQ(f.tensors().size(), cases.size());
  // The mapping starts on a page; recover it from the first tensor.
  const uint8_t* base = f.tensors()[0].data - w.data_start() - w.offset(0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(base) % kPage, 0u);
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    const TensorView& tv = f.tensors()[i];  // file order is kept
    EXPECT_EQ(&tv, f.FindTensor(cases[i].name));
    EXPECT_EQ(tv.name, cases[i].name);
    EXPECT_EQ(tv.type, cases[i].ggml);
    EXPECT_EQ(tv.shape, cases[i].shape);
    EXPECT_EQ(tv.n_bytes, cases[i].bytes);
    EXPECT_EQ(tv.data, base + w.data_start() + w.offset(i));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(tv.data) % 32, 0u);
    EXPECT_EQ(std::vector<uint8_t>(tv.data, tv.data + tv.n_bytes), Pattern(cases[i].bytes, static_cast<uint32_t>(i)));
  }
  EXPECT_EQ(f.FindTensor("absent"), nullptr);
}

TEST_F(GgufTest, AlignmentKeyPlacesTheData) {
  g::GgufWriter w;
  w.set_alignment(64).Kv("general.alignment", g::U32(64));
  w.Tensor("a", {3}, kF32, Pattern(12, 1))
      .Tensor("b", {32}, kQ8_0, Pattern(34, 2))
      .Tensor("c", {1}, kF16, Pattern(2, 3));
  const std::vector<uint8_t> bytes = w.Build();
  // The file must tell 64 from the default 32, or the test proves nothing.
  ASSERT_NE((w.infos_end() + 31) / 32 * 32, w.data_start());
  EXPECT_EQ(w.offset(1), 64u);
  EXPECT_EQ(w.offset(2), 128u);
  auto opened = GgufFile::Open(Write(bytes));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  const GgufFile& f = **opened;
  EXPECT_EQ(f.alignment(), 64u);
  const uint8_t* base = f.tensors()[0].data - w.data_start();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(base) % kPage, 0u);
  for (uint32_t i = 0; i < 3; ++i) {
    const TensorView& tv = f.tensors()[i];
    EXPECT_EQ(tv.data, base + w.data_start() + w.offset(i)) << tv.name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(tv.data) % 64, 0u) << tv.name;
    EXPECT_EQ(std::vector<uint8_t>(tv.data, tv.data + tv.n_bytes), Pattern(tv.n_bytes, i + 1)) << tv.name;
  }
}

TEST_F(GgufTest, TinyLlamaOpensAsModelSource) {
  g::GgufWriter w = TinyLlama();
  const std::vector<uint8_t> bytes = w.Build();
  ASSERT_LT(bytes.size(), kPage);  // the fuzz test below relies on one page
  const std::string path = Write(bytes);
  auto src = ModelSource::Open(path);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  const ModelConfig& c = (*src)->config();
  EXPECT_EQ(c.n_layers, 1);
  EXPECT_EQ(c.hidden, 32);
  EXPECT_EQ(c.n_heads, 2);
  EXPECT_EQ(c.n_kv_heads, 1);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.intermediate, 64);
  EXPECT_EQ(c.vocab, 8);
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_EQ(c.rope_theta, 10000.0f);
  EXPECT_EQ(c.rms_eps, 1e-5f);
  const TokenizerSpec& t = (*src)->tokenizer_spec();
  EXPECT_EQ(t.tokens.size(), 8u);
  EXPECT_EQ(t.tokens[7], "Ġab");
  EXPECT_EQ(t.token_types[0], TokenType::kControl);
  EXPECT_EQ(t.token_types[3], TokenType::kNormal);
  EXPECT_EQ(t.merges, (std::vector<std::string>{"a b", "Ġ ab"}));
  EXPECT_EQ(t.bos_id, 1);
  EXPECT_EQ(t.eos_id, 2);
  EXPECT_EQ(t.pre, "smollm");
  EXPECT_FALSE(t.add_bos);
  EXPECT_EQ(t.chat_template, "{{ messages }}");
  EXPECT_TRUE((*src)->Require("token_embd.weight", {8, 32}).ok());
}

// ---------------------------------------------------------------------------
// Hostile files: a Status naming the file and the problem, never a crash.

TEST_F(GgufTest, RejectsMissingFileAndFolder) {
  const std::string missing = dir_.path() + "/absent.gguf";
  auto f = GgufFile::Open(missing);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kIoError);
  EXPECT_NE(f.status().message().find(missing), std::string::npos);
  auto d = GgufFile::Open(dir_.path());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find(dir_.path()), std::string::npos);
}

TEST_F(GgufTest, RejectsEmptyFile) { ExpectRejected({}, StatusCode::kCorrupt, {"not a GGUF file"}); }

TEST_F(GgufTest, RejectsWrongMagic) {
  std::vector<uint8_t> bytes = TinyLlama().Build();
  bytes[0] = 'g';
  ExpectRejected(bytes, StatusCode::kCorrupt, {"not a GGUF file", "magic"});
  ExpectRejected({'G', 'G', 'M', 'L', 3, 0, 0, 0}, StatusCode::kCorrupt, {"magic"});
}

TEST_F(GgufTest, RejectsVersions1And4) {
  for (uint32_t version : {0u, 1u, 4u, 0xFFFFFFFFu}) {
    SCOPED_TRACE(version);
    g::GgufWriter w = TinyLlama();
    ExpectRejected(w.set_version(version).Build(), StatusCode::kUnsupported,
                   {"version " + std::to_string(version), "not supported"});
  }
}

TEST_F(GgufTest, RejectsEveryTruncation) {
  const std::vector<uint8_t> bytes = TinyLlama().Build();
  const std::string path = dir_.path() + "/prefix.gguf";
  int failures = 0;
  for (size_t n = 0; n < bytes.size() && failures < 5; ++n) {
    dir_.Write("prefix.gguf", bytes.data(), n);
    auto f = GgufFile::Open(path);
    if (f.ok()) {
      ADD_FAILURE() << "prefix of " << n << " of " << bytes.size() << " bytes accepted";
      ++failures;
    } else if (f.status().code() != StatusCode::kCorrupt || f.status().message().find(path) != 0) {
      ADD_FAILURE() << "prefix of " << n << " bytes: " << f.status().ToString();
      ++failures;
    }
  }
  auto whole = GgufFile::Open(Write(bytes));
  EXPECT_TRUE(whole.ok()) << whole.status().ToString();
}

TEST_F(GgufTest, RejectsHugeCounts) {
  {
    g::GgufWriter w = TinyLlama();
    ExpectRejected(w.set_kv_count(kHuge).Build(), StatusCode::kCorrupt, {"metadata count 4611686018427387904"});
  }
  {
    g::GgufWriter w = TinyLlama();
    ExpectRejected(w.set_tensor_count(kHuge).Build(), StatusCode::kCorrupt, {"tensor count 4611686018427387904"});
  }
  {
    g::GgufWriter w;
    w.Kv("arr", g::RawArray(g::kU8, kHuge, {1, 2, 3}));
    ExpectRejected(w.Build(), StatusCode::kCorrupt, {"'arr'", "array of 4611686018427387904 elements"});
  }
  {
    g::GgufWriter w;  // nested: the inner array lies
    w.Kv("arr", g::Array(g::kArray, {g::RawArray(g::kString, kHuge)}));
    ExpectRejected(w.Build(), StatusCode::kCorrupt, {"'arr'", "4611686018427387904"});
  }
  {
    g::GgufWriter w;
    g::Bytes value;
    value.U64(kHuge).Raw("abc", 3);
    w.Kv("str", g::Value{g::kString, value.data()});
    ExpectRejected(w.Build(), StatusCode::kCorrupt, {"'str'", "length 4611686018427387904", "past the end"});
  }
  {
    g::GgufWriter w;  // a string inside an array
    g::Bytes items;
    items.U64(kHuge);
    w.Kv("strs", g::RawArray(g::kString, 1, items.data()));
    ExpectRejected(w.Build(), StatusCode::kCorrupt, {"'strs'", "4611686018427387904"});
  }
  {
    g::Bytes b;  // a key whose length is absurd
    b.Raw("GGUF", 4).U32(3).U64(0).U64(1).U64(kHuge).Raw("key", 3).U32(g::kU8).U8(1);
    ExpectRejected(b.data(), StatusCode::kCorrupt, {"metadata key", "4611686018427387904"});
  }
  {
    g::Bytes b;  // a tensor name whose length is absurd
    b.Raw("GGUF", 4).U32(3).U64(1).U64(0).U64(kHuge).Raw("name", 4).U32(1).U64(4).U32(0).U64(0);
    ExpectRejected(b.data(), StatusCode::kCorrupt, {"tensor name", "4611686018427387904"});
  }
}

TEST_F(GgufTest, RejectsUnknownValueTypes) {
  for (uint32_t type : {13u, 99u, 0xFFFFFFFFu}) {
    g::GgufWriter w;
    w.KvAs("weird", type, g::U32(1));
    ExpectRejected(w.Build(), StatusCode::kCorrupt, {"'weird'", "unknown value type " + std::to_string(type)});
    g::GgufWriter a;
    a.Kv("weird.array", g::RawArray(type, 1, {0, 0, 0, 0}));
    ExpectRejected(a.Build(), StatusCode::kCorrupt,
                   {"'weird.array'", "unknown array element type " + std::to_string(type)});
  }
}

TEST_F(GgufTest, RejectsArraysNestedTooDeeply) {
  g::Value v = g::Array(g::kU8, {g::U8(1)});
  for (int level = 0; level < 4; ++level) v = g::Array(g::kArray, {v});  // five levels
  g::GgufWriter w;
  w.Kv("deep", v);
  ExpectRejected(w.Build(), StatusCode::kCorrupt, {"'deep'", "nested too deeply"});
}

TEST_F(GgufTest, RejectsBooleanOtherThan0Or1) {
  for (uint8_t raw : {2, 255}) {
    g::GgufWriter w;
    w.Kv("flag", g::RawBool(raw));
    ExpectRejected(w.Build(), StatusCode::kCorrupt, {"'flag'", "boolean", std::to_string(raw)});
    g::GgufWriter a;
    a.Kv("flags", g::Array(g::kBool, {g::Bool(true), g::RawBool(raw)}));
    ExpectRejected(a.Build(), StatusCode::kCorrupt, {"'flags'", "boolean", std::to_string(raw)});
  }
}

TEST_F(GgufTest, RejectsDuplicates) {
  g::GgufWriter keys;
  keys.Kv("general.name", g::Str("a")).Kv("x", g::U8(1)).Kv("general.name", g::Str("b"));
  ExpectRejected(keys.Build(), StatusCode::kCorrupt, {"'general.name'", "twice"});
  g::GgufWriter tensors;
  tensors.Tensor("w", {4}, kF32, Pattern(16, 1)).Tensor("w", {4}, kF32, Pattern(16, 2));
  ExpectRejected(tensors.Build(), StatusCode::kCorrupt, {"tensor 'w'", "twice"});
}

TEST_F(GgufTest, RejectsBadRanks) {
  g::GgufWriter rank0;
  rank0.Tensor("scalar", {}, kF32, Pattern(4, 1));
  ExpectRejected(rank0.Build(), StatusCode::kCorrupt, {"'scalar'", "rank 0"});
  g::GgufWriter rank5;
  rank5.Tensor("five", {1, 1, 1, 1, 1}, kF32, Pattern(4, 1));
  ExpectRejected(rank5.Build(), StatusCode::kCorrupt, {"'five'", "rank 5"});
  g::Bytes huge;  // a rank so large the dims cannot be there
  huge.Raw("GGUF", 4).U32(3).U64(1).U64(0).Str("many").U32(0xFFFFFFFFu).U64(1);
  ExpectRejected(huge.data(), StatusCode::kCorrupt, {"'many'", "rank 4294967295"});
}

TEST_F(GgufTest, RejectsZeroAndOverflowingDimensions) {
  g::GgufWriter zero;
  zero.Tensor("empty", {4, 0}, kF32, {});
  ExpectRejected(zero.Build(), StatusCode::kCorrupt, {"'empty'", "zero dimension"});
  const std::vector<std::vector<uint64_t>> overflowing = {
      {uint64_t{1} << 24, uint64_t{1} << 24, uint64_t{1} << 24},  // 2^72 wraps
      {uint64_t{1} << 32, uint64_t{1} << 32},                     // exactly 2^64 wraps to 0
      {0xFFFFFFFFFFFFFFFFull},
      {uint64_t{1} << 40, uint64_t{1} << 20},
      {3, 0x5555555555555556ull},  // wraps to 2
  };
  for (const auto& dims : overflowing) {
    g::GgufWriter w;
    w.Tensor("big", dims, kF32, Pattern(16, 1));
    ExpectRejected(w.Build(), StatusCode::kCorrupt, {"'big'", "too many elements"});
  }
}

TEST_F(GgufTest, RejectsUnknownTensorTypes) {
  for (uint32_t type : {4u, 7u, 10u, 11u, 15u, 29u, 99u, 0xFFFFFFFFu}) {
    g::GgufWriter w;
    w.Tensor("odd", {32}, type, Pattern(64, 1));
    ExpectRejected(w.Build(), StatusCode::kUnsupported, {"'odd'", "type " + std::to_string(type), "cannot decode"});
  }
}

TEST_F(GgufTest, RejectsRowsThatAreNotWholeBlocks) {
  const std::vector<std::pair<uint32_t, std::string>> types = {
      {kQ4_0, "Q4_0"}, {kQ4_1, "Q4_1"}, {kQ8_0, "Q8_0"}, {kQ4_K, "Q4_K"}, {kQ6_K, "Q6_K"}};
  for (const auto& [type, name] : types) {
    g::GgufWriter w;
    w.Tensor("ragged", {48, 2}, type, Pattern(1024, 1));
    ExpectRejected(w.Build(), StatusCode::kCorrupt, {"'ragged'", name, "48", "not a multiple"});
  }
  g::GgufWriter k;  // a multiple of 32 but not of 256
  k.Tensor("ragged", {576}, kQ4_K, Pattern(1024, 1));
  ExpectRejected(k.Build(), StatusCode::kCorrupt, {"'ragged'", "576", "block size 256"});
}

TEST_F(GgufTest, RejectsMisalignedOffsets) {
  for (uint64_t offset : {1ull, 16ull, 33ull}) {
    g::GgufWriter w;
    w.Tensor("a", {8}, kF32, Pattern(32, 1)).Tensor("b", {8}, kF32, Pattern(32, 2), offset);
    ExpectRejected(w.Build(), StatusCode::kCorrupt, {"'b'", "offset " + std::to_string(offset), "not aligned to 32"});
  }
  g::GgufWriter w64;
  w64.set_alignment(64).Kv("general.alignment", g::U32(64));
  w64.Tensor("c", {8}, kF32, Pattern(32, 1), 32);
  ExpectRejected(w64.Build(), StatusCode::kCorrupt, {"'c'", "not aligned to 64"});
}

TEST_F(GgufTest, RejectsDataPastTheEnd) {
  {
    g::GgufWriter w;  // offset beyond the file
    w.Tensor("far", {8}, kF32, Pattern(32, 1), uint64_t{1} << 20);
    ExpectRejected(w.Build(), StatusCode::kCorrupt, {"'far'", "past the end"});
  }
  {
    g::GgufWriter w;  // an aligned offset near 2^64 must not wrap around
    w.Tensor("wrap", {8}, kF32, Pattern(32, 1), 0xFFFFFFFFFFFFFFE0ull);
    ExpectRejected(w.Build(), StatusCode::kCorrupt, {"'wrap'", "past the end"});
  }
  {
    g::GgufWriter w;  // the data is one byte short
    w.Tensor("short", {8}, kF32, Pattern(31, 1));
    ExpectRejected(w.Build(), StatusCode::kCorrupt, {"'short'", "32 bytes", "past the end"});
  }
  {
    g::GgufWriter w;  // a large tensor in a tiny file
    w.Tensor("big", {256, 1 << 20}, kQ6_K, Pattern(210, 1));
    ExpectRejected(w.Build(), StatusCode::kCorrupt, {"'big'", "past the end"});
  }
  {
    g::Bytes b;  // the data section itself starts past the end (no padding written)
    b.Raw("GGUF", 4).U32(3).U64(1).U64(0).Str("t").U32(1).U64(1).U32(kF32).U64(0);
    ASSERT_NE(b.size() % 32, 0u);
    ExpectRejected(b.data(), StatusCode::kCorrupt, {"'t'", "past the end"});
  }
}

TEST_F(GgufTest, RejectsBadAlignment) {
  const std::vector<g::Value> bad = {g::U32(0),
                                     g::U32(3),
                                     g::U32(48),
                                     g::U32(0xFFFFFFFFu),
                                     g::I32(-32),
                                     g::U64(uint64_t{1} << 63),
                                     g::U64(uint64_t{1} << 40),
                                     g::Str("32"),
                                     g::F32(32.0f)};
  for (const g::Value& v : bad) {
    g::GgufWriter w;
    w.Kv("general.alignment", v).Tensor("t", {8}, kF32, Pattern(32, 1));
    ExpectRejected(w.Build(), StatusCode::kCorrupt, {"general.alignment", "power of two"});
  }
}

// Seeded random mutations of a valid file: each must open or fail cleanly,
// and an opened file's tensors must lie inside it.
TEST_F(GgufTest, RandomByteFlipsNeverCrash) {
  g::GgufWriter w = TinyLlama();
  const std::vector<uint8_t> original = w.Build();
  ASSERT_LT(original.size(), kPage);
  const std::string path = dir_.path() + "/mutant.gguf";
  std::mt19937_64 rng(0x7e0a9e5eedull);
  constexpr int kMutations = 4000;
  int opened = 0, rejected = 0, sources = 0;
  for (int m = 0; m < kMutations; ++m) {
    std::vector<uint8_t> bytes = original;
    // Mostly the header, metadata and tensor infos, where the parser decides.
    const size_t span = m % 4 == 0 ? bytes.size() : w.data_start();
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      const size_t at = rng() % span;
      switch (rng() % 4) {
        case 0: bytes[at] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
        case 1: bytes[at] = static_cast<uint8_t>(rng()); break;
        case 2: bytes[at] = 0xFF; break;
        default: bytes[at] = 0; break;
      }
    }
    dir_.Write("mutant.gguf", bytes);
    auto f = GgufFile::Open(path);
    if (!f.ok()) {
      ++rejected;
      EXPECT_EQ(f.status().message().find(path), 0u) << "mutation " << m << ": " << f.status().ToString();
      continue;
    }
    ++opened;
    for (const TensorView& tv : (*f)->tensors()) {
      // The whole file sits in one page, so the page start is the mapping.
      const uintptr_t at = reinterpret_cast<uintptr_t>(tv.data) % kPage;
      EXPECT_LE(at + tv.n_bytes, bytes.size()) << "mutation " << m << ": tensor " << tv.name << " leaves the file";
      EXPECT_EQ(tv.n_bytes, static_cast<size_t>(ggml_row_bytes(tv.type, tv.cols()) * tv.rows()));
    }
    (void)ModelConfigFromGguf(**f);
    (void)TokenizerSpecFromGguf(**f);
    f = Status::Internal("closed");  // unmap before ModelSource maps it again
    auto src = ModelSource::Open(path);
    if (src.ok()) {
      ++sources;
      EXPECT_FALSE((*src)->fingerprint().empty());
    } else {
      EXPECT_EQ(src.status().message().find(path), 0u) << "mutation " << m << ": " << src.status().ToString();
    }
  }
  RecordProperty("opened", opened);
  RecordProperty("model_sources", sources);
  RecordProperty("rejected", rejected);
  EXPECT_GT(opened, 100);
  EXPECT_GT(rejected, 100);
}

TEST(LayerTensorsTest, NamesBelongToTheirLayer) {
  EXPECT_EQ(LayerOf("blk.0.attn_q.weight"), 0);
  EXPECT_EQ(LayerOf("blk.27.ffn_down.weight"), 27);
  EXPECT_EQ(LayerOf("token_embd.weight"), -1);
  EXPECT_EQ(LayerOf("blk.x.attn_q.weight"), -1);
  EXPECT_EQ(LayerOf("blk..attn_q.weight"), -1);
  EXPECT_EQ(LayerOf("blk.12345678901.a"), -1);
}

TEST_F(GgufTest, LayerBytesCountOnlyTheLayersTensors) {
  auto src = ModelSource::Open(Write(TinyLlama().Build()));
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  EXPECT_EQ(LayerBytes(**src), (std::vector<uint64_t>{32 * 4 + 2 * 18 + 20 + 144 + 210 + 16}));
  const auto names = LayerTensors(**src);
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0].front(), "blk.0.attn_k.weight");  // in name order
}

TEST_F(GgufTest, WeightDigestsTellChangedWeightsApartAndAreCached) {
  const std::vector<uint8_t> bytes = TinyLlama().Build();
  const std::string path = Write(bytes, "a.gguf");
  auto src = ModelSource::Open(path);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  auto d = LayerDigests::Compute(**src, 0, 1);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const std::string span = d->Span(0, 1);
  EXPECT_EQ(span.size(), 16u);
  EXPECT_EQ(d->Span(0, 2), "");  // layer 1 was not computed
  EXPECT_FALSE(LayerDigests::Compute(**src, 0, 2).ok());
  EXPECT_TRUE(std::filesystem::exists(path + ".troupe-digests.json"));
  // A second computation reads the cache and agrees.
  auto again = LayerDigests::Compute(**src, 0, 1);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->Span(0, 1), span);

  // One byte of blk.0.ffn_up changed: another digest (its cache is its own).
  auto opened = GgufFile::Open(path);
  ASSERT_TRUE(opened.ok());
  const TensorView* up = (*opened)->FindTensor("blk.0.ffn_up.weight");
  ASSERT_NE(up, nullptr);
  std::vector<uint8_t> changed = bytes;
  changed[up->data - (*opened)->bytes() + 7] ^= 1;
  auto other = ModelSource::Open(Write(changed, "b.gguf"));
  ASSERT_TRUE(other.ok());
  auto od = LayerDigests::Compute(**other, 0, 1);
  ASSERT_TRUE(od.ok());
  EXPECT_NE(od->Span(0, 1), span);

  // A stale cache (the file rewritten with other weights) is not believed.
  src->reset();
  opened->reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // another mtime
  Write(changed, "a.gguf");
  auto rewritten = ModelSource::Open(path);
  ASSERT_TRUE(rewritten.ok());
  auto rd = LayerDigests::Compute(**rewritten, 0, 1);
  ASSERT_TRUE(rd.ok());
  EXPECT_EQ(rd->Span(0, 1), od->Span(0, 1));
}

// Resident bytes of this process's mappings of `path` (/proc/self/smaps).
uint64_t MappedRss(const std::string& path) {
  const std::string want = std::filesystem::canonical(path).string();
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in_file = false;
  uint64_t kb = 0;
  while (std::getline(smaps, line)) {
    if (line.empty()) continue;
    if (std::isxdigit(static_cast<unsigned char>(line[0])) && line.find('-') != std::string::npos &&
        line.find(':') > line.find(' ')) {  // a mapping's first line: "start-end perms offset dev inode path"
      in_file = line.size() >= want.size() && line.compare(line.size() - want.size(), want.size(), want) == 0;
    } else if (in_file && line.rfind("Rss:", 0) == 0) {
      kb += std::stoull(line.substr(4));
    }
  }
  return kb * 1024;
}

// A head digests every layer but serves none: once hashed, a layer's pages
// are handed back, so its memory is not the whole model's; a shard keeps the
// pages of the layers it serves. The digests are the same either way.
TEST_F(GgufTest, WeightDigestsHandBackThePagesOfLayersNotServed) {
  constexpr uint64_t kNorm = uint64_t{1} << 20;  // 4 MiB of F32 per layer
  constexpr uint64_t kLayer = kNorm * 4;
  const std::vector<uint8_t> bytes = TinyLlama(4, kNorm).Build();
  const std::string all = Write(bytes, "all.gguf");
  const std::string one = Write(bytes, "one.gguf");

  // The control: serving every layer, all four stay resident.
  auto kept = ModelSource::Open(all);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  auto d_all = LayerDigests::Compute(**kept, 0, 4);
  ASSERT_TRUE(d_all.ok()) << d_all.status().ToString();
  EXPECT_GE(MappedRss(all), 4 * kLayer) << "the measurement sees no pages";

  // Serving layer 1 only: the other three are handed back.
  auto released = ModelSource::Open(one);
  ASSERT_TRUE(released.ok()) << released.status().ToString();
  auto d_one = LayerDigests::Compute(**released, 0, 4, 1, 2);
  ASSERT_TRUE(d_one.ok()) << d_one.status().ToString();
  const uint64_t rss = MappedRss(one);
  EXPECT_GE(rss, kLayer - 2 * kPage) << "the served layer's pages were handed back";
  EXPECT_LE(rss, kLayer + 64 * kPage) << "pages of layers not served stayed resident";
  EXPECT_EQ(d_one->Span(0, 4), d_all->Span(0, 4));

  // A handed-back page reads the same bytes again.
  const TensorView* norm = (*released)->Find("blk.2.attn_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(std::vector<uint8_t>(norm->data, norm->data + norm->n_bytes), Pattern(kNorm * 4, 200 + 2));
}

}  // namespace
}  // namespace troupe
