// HfCheckpoint: a Hugging Face model folder (config.json + safetensors) of a
// Llama-family decoder, with its weights exposed under GGUF tensor names.
//
// Supported: LlamaForCausalLM (Llama 2/3, SmolLM), MistralForCausalLM,
// Qwen2ForCausalLM (q/k/v biases). Weights come from `model.safetensors`, or,
// when that file is absent, from the shards listed in
// `model.safetensors.index.json` ("weight_map"). F32, F16 and BF16 tensors.
//
// Names: model.embed_tokens.weight -> token_embd.weight,
//   model.layers.N.input_layernorm.weight          -> blk.N.attn_norm.weight
//   model.layers.N.self_attn.{q,k,v}_proj.{weight,bias}
//                                                  -> blk.N.attn_{q,k,v}.{weight,bias}
//   model.layers.N.self_attn.o_proj.weight         -> blk.N.attn_output.weight
//   model.layers.N.post_attention_layernorm.weight -> blk.N.ffn_norm.weight
//   model.layers.N.mlp.{gate,up,down}_proj.weight  -> blk.N.ffn_{gate,up,down}.weight
//   model.norm.weight -> output_norm.weight, lm_head.weight -> output.weight.
// Exactly the tensors the config implies are exposed: biases only when
// config().qkv_bias; output.weight only when !config().tied_embeddings
// (tie_word_embeddings, or no lm_head.weight stored). Other checkpoint tensors
// (rotary inv_freq buffers, layers past num_hidden_layers) are ignored.
//
// Weights keep the HF row order, so config().rope_style is kHalves: RoPE
// rotates (x[i], x[i + d/2]). GGUF files permute q/k rows instead.
//
// Ownership: every safetensors file stays mapped for the lifetime of the
// HfCheckpoint; the TensorViews (named with their GGUF name) point into those
// mappings and are valid until the HfCheckpoint is destroyed.
// Thread-safety: immutable after Open; const methods are safe from any thread.
// Failure: Open returns, never throws: kNotFound (no config.json, no weights,
// a tensor the config implies is missing — the first one is named),
// kCorrupt (bad JSON, a field of the wrong type, a mis-shaped tensor, a shard
// index that disagrees with its shards, any SafetensorsFile error),
// kUnsupported (another architecture, hidden_act other than silu, a rope
// scaling other than llama3, an o_proj bias), kInvalidArgument (numbers that
// contradict each other, per ModelConfig::Validate). Messages name the file.
// The tokenizer (tokenizer.json) is not read here: see LoadTokenizerJson.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/format/safetensors_file.h"
#include "pipeline/model_config.h"
#include "pipeline/status.h"
#include "pipeline/tensor_view.h"

namespace troupe {

// Parses the text of a config.json into a ModelConfig (rope_style kHalves).
// `origin` (usually the file path) prefixes every error message. The caller
// settles tied_embeddings against the weights (HfCheckpoint::Open does).
// Defaults follow transformers: num_key_value_heads = num_attention_heads,
// head_dim = hidden_size / num_attention_heads, rope_theta 10000,
// rms_norm_eps 1e-6, tie_word_embeddings false. Mistral's sliding_window (and
// Qwen2's, when use_sliding_window) caps max_positions: within the window the
// attention is the plain causal one.
Result<ModelConfig> ParseHfConfig(const std::string& json_text, const std::string& origin);

class HfCheckpoint {
 public:
  // Reads `dir`/config.json and the safetensors weights, and checks that every
  // tensor the config implies is present with the right shape.
  static Result<std::unique_ptr<HfCheckpoint>> Open(const std::string& dir);

  HfCheckpoint(const HfCheckpoint&) = delete;
  HfCheckpoint& operator=(const HfCheckpoint&) = delete;

  const ModelConfig& config() const { return config_; }
  // The tensor with GGUF name `gguf_name` (e.g. "blk.0.attn_q.weight"), or nullptr.
  const TensorView* Find(const std::string& gguf_name) const;
  // Every exposed GGUF tensor name, sorted.
  std::vector<std::string> names() const;
  const std::string& dir() const { return dir_; }

 private:
  HfCheckpoint() = default;

  std::string dir_;
  ModelConfig config_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;  // one per shard, kept mapped
  std::map<std::string, TensorView> tensors_;            // GGUF name -> view into files_
};

}  // namespace troupe
