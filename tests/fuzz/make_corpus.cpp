// Writes the fuzz seed corpus, small valid inputs and near-misses for every
// target (layouts: fuzz_input.h, fuzz_files.h and each target's comment):
//   envelope        messages of every body type (some with tensor frames of
//                   every dtype)
//   tensor          described tensor frames
//   gguf            a tiny synthetic Llama model (every tensor type, a BPE
//                   tokenizer and chat template in its metadata), metadata of
//                   every value type, a v2 file; broken variants
//   safetensors     F32/F16/BF16 tensors, an empty header, a zero dimension
//   tokenizer_json  the tiny BPE vocabulary of tests/pipeline/text/tiny_spec.h
//                   as tokenizer.json with each pre-tokenizer family, with and
//                   without tokenizer_config.json / config.json
//   node_config     head, shard and stage-node configs, a three-node cluster,
//                   the deploy/config examples
//   chat_request    chat and completions bodies using every field
//
//   fuzz_corpus_gen tests/fuzz/corpus
// Seeds named valid-* must be accepted (checked by messages_test for the
// wire targets, fuzz_seeds_test for the others), reject-* refused.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "messages/envelope_codec.h"
#include "messages/message_codec.h"
#include "messages/tensor_encoding.h"
#include "pipeline/quant/half.h"
#include "pipeline/tensor_view.h"
#include "pipeline/text/pre_tokenizer.h"
#include "tests/fuzz/fuzz_files.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/messages/sample_envelopes.h"
#include "tests/pipeline/format/gguf_writer.h"
#include "tests/pipeline/text/tiny_spec.h"

namespace {

namespace fs = std::filesystem;
using namespace troupe;

void Write(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  std::printf("%s (%zu bytes)\n", path.c_str(), bytes.size());
}

std::vector<float> Values(size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = std::sin(0.7f * static_cast<float>(i)) * (1.0f + i % 5);
  return x;
}

std::string Bytes(const TensorFrame& f) { return std::string(reinterpret_cast<const char*>(f.data), f.size); }

const v1::Dtype kDtypes[] = {v1::DTYPE_F32, v1::DTYPE_BF16, v1::DTYPE_F16, v1::DTYPE_INT8_BLOCK32};

void WriteEnvelopeSeeds(const fs::path& dir) {
  for (v1::Envelope e : testing_samples::SampleEnvelopes()) {
    if (e.has_step()) e.mutable_step()->clear_tensor();
    const std::string header = EncodeMessage(e)->header;
    Write(dir / ("valid-" + std::string(BodyName(e))), fuzz::JoinEnvelopeInput(header, nullptr));
  }
  for (v1::Dtype dtype : kDtypes) {
    v1::Envelope e = testing_samples::SampleEnvelopes()[3];  // a step
    const std::vector<float> x = Values(2 * 48);
    WireResult<OutboundMessage> m = EncodeMessage(e, *EncodeTensorFrame(dtype, {2, 48}, x.data()));
    const std::string tensor = Bytes(*m->tensor);
    Write(dir / ("valid-step-" + DtypeName(dtype)), fuzz::JoinEnvelopeInput(m->header, &tensor));
  }
  {  // a burst of two steps, the second with hidden states (the input format holds one tensor frame)
    v1::Envelope e = testing_samples::SampleEnvelopes().back();
    const std::vector<float> x = Values(2 * 48);
    WireResult<OutboundMessage> m =
        EncodeBurst(e, {std::nullopt, *EncodeTensorFrame(v1::DTYPE_BF16, {2, 48}, x.data())});
    const std::string tensor = Bytes(m->burst_tensors.at(0));
    Write(dir / "valid-step_burst-bf16", fuzz::JoinEnvelopeInput(m->header, &tensor));
  }
  // Near misses: wrong version, a non-finite tensor, a short tensor frame.
  v1::Envelope old = testing_samples::SampleEnvelopes()[2];
  old.set_protocol_version(kProtocolVersion + 1);
  Write(dir / "reject-version", fuzz::JoinEnvelopeInput(EncodeEnvelope(old), nullptr));
  std::vector<float> x = Values(8);
  x[5] = std::nanf("");
  WireResult<OutboundMessage> m =
      EncodeMessage(testing_samples::SampleEnvelopes()[3], *EncodeTensorFrame(v1::DTYPE_F32, {8}, x.data()));
  std::string tensor = Bytes(*m->tensor);
  Write(dir / "reject-nan", fuzz::JoinEnvelopeInput(m->header, &tensor));
  tensor.resize(tensor.size() - 3);
  Write(dir / "reject-short-tensor", fuzz::JoinEnvelopeInput(m->header, &tensor));
}

void WriteTensorSeeds(const fs::path& dir) {
  const std::vector<std::vector<int64_t>> shapes = {{3}, {2, 40}, {1, 1, 2, 33}};
  for (v1::Dtype dtype : kDtypes) {
    for (const std::vector<int64_t>& shape : shapes) {
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      const std::vector<float> x = Values(static_cast<size_t>(n));
      const std::string frame = Bytes(*EncodeTensorFrame(dtype, shape, x.data()));
      Write(dir / ("valid-" + DtypeName(dtype) + "-rank" + std::to_string(shape.size())),
            fuzz::MakeTensorInput(dtype, true, shape, frame));
    }
    std::vector<float> x = Values(40);
    x[33] = dtype == v1::DTYPE_INT8_BLOCK32 ? 1.0f : -INFINITY;
    std::string frame = Bytes(*EncodeTensorFrame(dtype, {40}, x.data()));
    if (dtype == v1::DTYPE_INT8_BLOCK32) frame[34] = frame[35] = '\xff';  // NaN scale
    Write(dir / ("nonfinite-" + DtypeName(dtype)), fuzz::MakeTensorInput(dtype, false, {40}, frame));
  }
}

// ----- gguf

// Deterministic filler bytes.
std::vector<uint8_t> Filler(size_t n, uint32_t seed) {
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    out[i] = static_cast<uint8_t>(seed >> 24);
  }
  return out;
}

void PutHalf(std::vector<uint8_t>* bytes, size_t at, float v) {
  const uint16_t h = Fp32ToFp16(v);
  std::memcpy(bytes->data() + at, &h, 2);
}

// `n` values of `type` (a whole number of blocks): small finite floats, or
// filler quants with small fp16 scales.
std::vector<uint8_t> TensorBytes(GgmlType type, int64_t n, uint32_t seed) {
  const int64_t blocks = n / ggml_block_values(type);
  std::vector<uint8_t> b = Filler(static_cast<size_t>(blocks * ggml_block_bytes(type)), seed);
  const size_t bb = static_cast<size_t>(ggml_block_bytes(type));
  for (int64_t i = 0; i < n && (type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16); ++i) {
    const float v = std::sin(0.37f * static_cast<float>(i + seed)) * 0.5f;
    if (type == GgmlType::F32) std::memcpy(b.data() + 4 * i, &v, 4);
    if (type == GgmlType::F16) PutHalf(&b, 2 * i, v);
    if (type == GgmlType::BF16) {
      const uint16_t h = Fp32ToBf16(v);
      std::memcpy(b.data() + 2 * i, &h, 2);
    }
  }
  for (int64_t k = 0; k < blocks; ++k) {
    const size_t at = static_cast<size_t>(k) * bb;
    if (type == GgmlType::Q4_0 || type == GgmlType::Q8_0) PutHalf(&b, at, 0.01f);
    if (type == GgmlType::Q4_1 || type == GgmlType::Q4_K) {
      PutHalf(&b, at, 0.01f);
      PutHalf(&b, at + 2, -0.02f);
    }
    if (type == GgmlType::Q6_K) PutHalf(&b, at + 208, 0.005f);
  }
  return b;
}

gguf_test::Value StringArray(const std::vector<std::string>& items) {
  std::vector<gguf_test::Value> values;
  values.reserve(items.size());
  for (const std::string& s : items) values.push_back(gguf_test::Str(s));
  return gguf_test::Array(gguf_test::kString, values);
}

const char kChatMlTemplate[] =
    "{% if messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a tiny test model.<|im_end|>\n' }}"
    "{% endif %}{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
    "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

// A whole tiny Llama model: hidden 32, 2 heads (1 KV head), 1 layer, the tiny
// vocabulary; one tensor of every type Troupe reads.
gguf_test::GgufWriter TinyModel() {
  using namespace gguf_test;
  const TokenizerSpec spec = testing::TinySpec();
  std::vector<Value> types;
  for (TokenType t : spec.token_types) types.push_back(I32(static_cast<int32_t>(t)));
  const int64_t vocab = static_cast<int64_t>(spec.tokens.size());
  GgufWriter w;
  w.Kv("general.architecture", Str("llama"))
      .Kv("general.name", Str("fuzz-tiny"))
      .Kv("general.alignment", U32(32))
      .Kv("llama.block_count", U32(1))
      .Kv("llama.embedding_length", U32(32))
      .Kv("llama.attention.head_count", U32(2))
      .Kv("llama.attention.head_count_kv", U32(1))
      .Kv("llama.feed_forward_length", U32(64))
      .Kv("llama.context_length", U32(128))
      .Kv("llama.attention.layer_norm_rms_epsilon", F32(1e-5f))
      .Kv("llama.rope.freq_base", F32(10000.0f))
      .Kv("tokenizer.ggml.model", Str("gpt2"))
      .Kv("tokenizer.ggml.pre", Str("smollm"))
      .Kv("tokenizer.ggml.tokens", StringArray(spec.tokens))
      .Kv("tokenizer.ggml.token_type", Array(kI32, types))
      .Kv("tokenizer.ggml.merges", StringArray(spec.merges))
      .Kv("tokenizer.ggml.bos_token_id", U32(static_cast<uint32_t>(spec.bos_id)))
      .Kv("tokenizer.ggml.eos_token_id", U32(static_cast<uint32_t>(spec.eos_id)))
      .Kv("tokenizer.ggml.add_bos_token", Bool(false))
      .Kv("tokenizer.chat_template", Str(kChatMlTemplate));
  auto tensor = [&w](const std::string& name, GgmlType type, const std::vector<uint64_t>& dims, uint32_t seed) {
    int64_t n = 1;
    for (uint64_t d : dims) n *= static_cast<int64_t>(d);
    w.Tensor(name, dims, static_cast<uint32_t>(type), TensorBytes(type, n, seed));
  };
  tensor("token_embd.weight", GgmlType::Q4_0, {32, static_cast<uint64_t>(vocab)}, 1);
  tensor("output_norm.weight", GgmlType::F32, {32}, 2);
  tensor("blk.0.attn_norm.weight", GgmlType::F16, {32}, 3);
  tensor("blk.0.ffn_norm.weight", GgmlType::BF16, {32}, 4);
  tensor("blk.0.attn_q.weight", GgmlType::Q8_0, {32, 32}, 5);
  tensor("blk.0.attn_k.weight", GgmlType::Q4_1, {32, 16}, 6);
  tensor("test.q4_k.weight", GgmlType::Q4_K, {256, 2}, 7);
  tensor("test.q6_k.weight", GgmlType::Q6_K, {256, 1}, 8);
  return w;
}

void WriteGgufSeeds(const fs::path& dir) {
  using namespace gguf_test;
  auto write = [&dir](const std::string& name, const std::vector<uint8_t>& b) {
    Write(dir / name, std::string(b.begin(), b.end()));
  };
  const std::vector<uint8_t> model = TinyModel().Build();
  write("valid-model", model);
  GgufWriter values;
  values.Kv("u8", U8(200))
      .Kv("i8", I8(-100))
      .Kv("u16", U16(60000))
      .Kv("i16", I16(-30000))
      .Kv("u32", U32(4000000000u))
      .Kv("i32", I32(-2000000000))
      .Kv("f32", F32(0.5f))
      .Kv("bool", Bool(true))
      .Kv("string", Str("caf\xc3\xa9"))
      .Kv("u64", U64(~uint64_t{0}))
      .Kv("i64", I64(-1))
      .Kv("f64", F64(-2.25))
      .Kv("ints", Array(kU64, {U64(1), U64(2), U64(3)}))
      .Kv("nested", Array(kArray, {Array(kI8, {I8(1), I8(-1)}), Array(kString, {Str("a"), Str("")})}))
      .Kv("empty", Array(kF32, {}));
  write("valid-metadata", values.Build());
  GgufWriter v2;
  v2.set_version(2).set_alignment(64).Kv("general.alignment", U32(64));
  v2.Tensor("a", {64}, static_cast<uint32_t>(GgmlType::Q8_0), TensorBytes(GgmlType::Q8_0, 64, 9));
  v2.Tensor("b", {3, 2}, static_cast<uint32_t>(GgmlType::F32), TensorBytes(GgmlType::F32, 6, 10));
  write("valid-v2-aligned", v2.Build());
  write("reject-truncated", std::vector<uint8_t>(model.begin(), model.end() - 7));
  GgufWriter misaligned;
  misaligned.Tensor("t", {4}, static_cast<uint32_t>(GgmlType::F32), TensorBytes(GgmlType::F32, 4, 11), 3);
  write("reject-misaligned", misaligned.Build());
  GgufWriter unknown_type;
  unknown_type.Tensor("t", {32}, 7, std::vector<uint8_t>(64));
  write("reject-tensor-type", unknown_type.Build());
}

// ----- safetensors

std::string Safetensors(const nlohmann::json& header, const std::string& data) {
  const std::string text = header.dump();
  const uint64_t n = text.size();
  return std::string(reinterpret_cast<const char*>(&n), 8) + text + data;
}

void WriteSafetensorsSeeds(const fs::path& dir) {
  using nlohmann::json;
  auto bytes = [](GgmlType type, int64_t n, uint32_t seed) {
    const std::vector<uint8_t> b = TensorBytes(type, n, seed);
    return std::string(b.begin(), b.end());
  };
  const std::string data = bytes(GgmlType::F32, 6, 1) + bytes(GgmlType::F16, 4, 2) + bytes(GgmlType::BF16, 4, 3);
  json header = {{"__metadata__", {{"format", "pt"}}},
                 {"model.norm.weight", {{"dtype", "F32"}, {"shape", {2, 3}}, {"data_offsets", {0, 24}}}},
                 {"model.embed_tokens.weight", {{"dtype", "F16"}, {"shape", {4}}, {"data_offsets", {24, 32}}}},
                 {"lm_head.weight", {{"dtype", "BF16"}, {"shape", {2, 2}}, {"data_offsets", {32, 40}}}}};
  Write(dir / "valid-three", Safetensors(header, data));
  Write(dir / "valid-empty", Safetensors(json::object(), ""));
  Write(dir / "valid-zero-dim",
        Safetensors({{"x", {{"dtype", "F32"}, {"shape", {0, 4}}, {"data_offsets", {0, 0}}}}}, ""));
  Write(dir / "valid-scalar",
        Safetensors({{"s", {{"dtype", "F32"}, {"shape", json::array()}, {"data_offsets", {0, 4}}}}},
                    bytes(GgmlType::F32, 1, 4)));
  json past = header;
  past["lm_head.weight"]["data_offsets"] = {32, 48};
  Write(dir / "reject-offsets", Safetensors(past, data));
  json dtype = header;
  dtype["lm_head.weight"]["dtype"] = "I64";
  Write(dir / "reject-dtype", Safetensors(dtype, data));
  const std::string whole = Safetensors(header, data);
  Write(dir / "reject-short-header", whole.substr(0, 8) + whole.substr(8, 20));
}

// ----- tokenizer_json

nlohmann::json ByteLevel(bool use_regex) {
  return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", use_regex}};
}

nlohmann::json SplitThenByteLevel(const char* pattern) {
  return {{"type", "Sequence"},
          {"pretokenizers",
           nlohmann::json::array(
               {{{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"}, {"invert", false}},
                ByteLevel(false)})}};
}

// tokenizer.json for the tiny vocabulary (tiny_spec.h) and `extra` added tokens.
nlohmann::json TinyTokenizerJson(const nlohmann::json& pre, bool pair_merges,
                                 const std::vector<std::string>& extra = {}) {
  using nlohmann::json;
  TokenizerSpec spec = testing::TinySpec();
  for (const std::string& t : extra) {
    spec.tokens.push_back(t);
    spec.token_types.push_back(TokenType::kControl);
  }
  json vocab = json::object(), added = json::array(), merges = json::array();
  for (size_t id = 0; id < spec.tokens.size(); ++id) {
    if (spec.token_types[id] == TokenType::kNormal) {
      vocab[spec.tokens[id]] = id;
    } else {
      added.push_back({{"id", id},
                       {"content", spec.tokens[id]},
                       {"special", spec.token_types[id] == TokenType::kControl},
                       {"normalized", false}});
    }
  }
  for (const std::string& m : spec.merges) {
    const size_t space = m.find(' ');
    merges.push_back(pair_merges ? json::array({m.substr(0, space), m.substr(space + 1)}) : json(m));
  }
  return {
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer", pre},
      {"post_processor",
       {{"type", "TemplateProcessing"}, {"single", {{{"SpecialToken", {{"id", "<|im_start|>"}, {"type_id", 0}}}}}}}},
      {"decoder", ByteLevel(true)},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"ignore_merges", false}}}};
}

void WriteTokenizerJsonSeeds(const fs::path& dir) {
  using nlohmann::json;
  auto folder = [&dir](const std::string& name, const std::vector<std::string>& files) {
    Write(dir / name, fuzz::JoinAtNul(files));
  };
  const json config = {{"bos_token", "<|im_start|>"},
                       {"eos_token", {{"content", "<|im_end|>"}}},
                       {"pad_token", "<|endoftext|>"},
                       {"add_bos_token", false},
                       {"chat_template", kChatMlTemplate}};
  folder("valid-gpt2", {TinyTokenizerJson(ByteLevel(true), false).dump(), config.dump()});
  const json smollm = {
      {"type", "Sequence"},
      {"pretokenizers", json::array({{{"type", "Digits"}, {"individual_digits", true}}, ByteLevel(true)})}};
  folder("valid-smollm-config-json",
         {TinyTokenizerJson(smollm, true).dump(2), "", R"({"bos_token_id": 270, "eos_token_id": [271, 273]})"});
  folder("valid-smollm-no-config", {TinyTokenizerJson(smollm, false).dump()});
  json llama3 = TinyTokenizerJson(SplitThenByteLevel(text::kLlama3Pattern), false,
                                  {"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"});
  const json llama3_config = {
      {"bos_token", "<|begin_of_text|>"},
      {"eos_token", "<|im_end|>"},
      {"chat_template", json::array({{{"name", "default"},
                                      {"template",
                                       "{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + "
                                       "message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim + "
                                       "'<|eot_id|>' }}{% endfor %}"}},
                                     {{"name", "tool_use"}, {"template", "{{ tools }}"}}})}};
  folder("valid-llama3", {llama3.dump(), llama3_config.dump()});
  json qwen2 = TinyTokenizerJson(SplitThenByteLevel(text::kQwen2Pattern), true);
  qwen2["normalizer"] = {{"type", "NFC"}};
  folder("valid-qwen2-template-file", {qwen2.dump(), R"({"eos_token": "<|im_end|>"})", "", kChatMlTemplate});
  json unigram = TinyTokenizerJson(ByteLevel(true), false);
  unigram["model"]["type"] = "Unigram";
  folder("reject-unigram", {unigram.dump()});
  folder("reject-bos", {TinyTokenizerJson(ByteLevel(true), false).dump(), R"({"bos_token": "<s>"})"});
}

// ----- node_config

const char kHeadYaml[] = R"(id: head
roles: [head]
head_stages: [embedding]
model: models/tiny.gguf
threads: 2
cache_budget_mb: 64
log_level: warn
kept_session_max_length: 512
max_queued_jobs: 8
job_journal: state/jobs.db
int8_link_rtt_ms: 5
endpoints:
  listen: tcp://127.0.0.1:5601
  jobs: tcp://127.0.0.1:5600
  http: 127.0.0.1:8000
  metrics: 127.0.0.1:0
api_keys: [sk-0123456789abcdef]
peers:
  - {id: lm, endpoint: "tcp://127.0.0.1:5611"}
  - {id: shard-0, endpoint: "tcp://127.0.0.1:5602", layers: [0, 2]}
)";

const char kShardYaml[] = R"(id: shard-0
roles: [shard]
layers: [0, 2]
model: ${TROUPE_FUZZ_MODEL:-models/tiny.gguf}
device: cpu
backend: kernels
dtype: auto
idle_timeout_seconds: 60
drain_timeout_seconds: 5
join: tcp://127.0.0.1:5601
head_public_key: "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
endpoints: {listen: "tcp://0.0.0.0:5602", advertise: "tcp://10.0.0.5:5602"}
security: {curve: true, secret_key: keys/shard-0/node.key, allowlist: keys/allowlist}
)";

const char kAutoShardYaml[] = R"(id: shard-1
roles: [shard]
layers: auto
memory_budget_mb: 1024.5
rebalance_seconds: 0
model: /models/tiny.gguf
head: head
peers: [{id: head, endpoint: "tcp://127.0.0.1:5601"}]
ready_file: run/shard-1.ready.json
parent_pid: 1
)";

const char kLmHeadYaml[] = R"(id: lm
roles: [lm_head]
model: models/tiny.gguf
hop_timing: false
log_format: json
max_batch_sessions: 4
join: tcp://127.0.0.1:5601
endpoints: {listen: "tcp://127.0.0.1:5611"}
)";

void WriteNodeConfigSeeds(const fs::path& dir) {
  Write(dir / "valid-head", kHeadYaml);
  Write(dir / "valid-shard", kShardYaml);
  Write(dir / "valid-shard-auto", kAutoShardYaml);
  Write(dir / "valid-lm-head", kLmHeadYaml);
  Write(dir / "cluster-head-shards", fuzz::JoinAtNul({kHeadYaml, kShardYaml, kAutoShardYaml, kLmHeadYaml}));
  for (const char* name : {"head", "shard"}) {
    std::ifstream in(fs::path(TROUPE_SOURCE_DIR) / "deploy/config" / (std::string(name) + ".yaml"));
    Write(dir / ("deploy-" + std::string(name)), std::string(std::istreambuf_iterator<char>(in), {}));
  }
  Write(dir / "reject-unknown-key", std::string(kLmHeadYaml) + "colour: blue\n");
  Write(dir / "reject-layers", "id: s\nroles: [shard]\nlayers: [3, 1]\nmodel: m\n");
  Write(dir / "reject-not-yaml", "id: [unclosed\n");
}

// ----- chat_request

void WriteChatRequestSeeds(const fs::path& dir) {
  Write(dir / "valid-chat", R"({"model": "troupe", "messages": [
  {"role": "system", "content": "Be brief."},
  {"role": "user", "content": "Give me three tips for staying healthy."},
  {"role": "assistant", "content": null},
  {"role": "user", "content": "<|im_start|>More, caf\u00e9 \ud83d\ude42"}],
 "max_tokens": 64, "temperature": 0.7, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "seed": 42,
 "stop": ["\n\n", "User:"], "stream": true, "stream_options": {"include_usage": true},
 "presence_penalty": 0, "frequency_penalty": 0.5, "repeat_penalty": 1.1, "min_tokens": 2,
 "logit_bias": {"50256": -100, "7": 2.5}, "no_repeat_ngram_size": 3})");
  Write(dir / "valid-chat-parts", R"({"messages": [
  {"role": "developer", "content": [{"type": "text", "text": "You are "}, {"type": "text", "text": "terse."}]},
  {"role": "user", "content": "Hi", "tool_calls": []}],
 "max_completion_tokens": 8, "logprobs": true, "top_logprobs": 3, "contrastive": {"alpha": 0.2, "beta": 0.5},
 "session": "s1", "keep": true, "max_length": 1024, "response_format": {"type": "text"}, "tools": []})");
  Write(dir / "valid-chat-beams",
        R"({"messages": [{"role": "user", "content": "x"}], "num_beams": 4, "num_return_sequences": 2,)"
        R"( "length_penalty": 1.5, "early_stopping": "never", "contrastive": false})");
  Write(dir / "valid-completion",
        R"({"model": "m", "prompt": "Once upon a time", "n": 3, "max_tokens": 16,)"
        R"( "logprobs": 2, "best_of": 1, "suffix": "", "stop": "END", "seed": 18446744073709551615})");
  Write(dir / "valid-completion-tokens",
        R"({"prompt": [1, 2, 3, 2147483647], "echo": true, "max_tokens": 0, "logprobs": 1, "top_a": 0.5})");
  Write(dir / "valid-completion-list", R"({"prompt": ["one string"], "temperature": 0, "contrastive": true})");
  Write(dir / "reject-tools", R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]})");
  Write(dir / "reject-temperature", R"({"prompt": "x", "temperature": 3})");
  Write(dir / "reject-deep", std::string(65, '[') + std::string(65, ']'));
  Write(dir / "reject-not-json", R"({"prompt": "x",)");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const fs::path root(argv[1]);
  const std::pair<const char*, void (*)(const fs::path&)> targets[] = {{"envelope", WriteEnvelopeSeeds},
                                                                       {"tensor", WriteTensorSeeds},
                                                                       {"gguf", WriteGgufSeeds},
                                                                       {"safetensors", WriteSafetensorsSeeds},
                                                                       {"tokenizer_json", WriteTokenizerJsonSeeds},
                                                                       {"node_config", WriteNodeConfigSeeds},
                                                                       {"chat_request", WriteChatRequestSeeds}};
  for (const auto& [name, write] : targets) {
    fs::create_directories(root / name);
    write(root / name);
  }
  return 0;
}
