// ModelConfig: the hyper-parameters of a decoder-only transformer, the same
// whichever file they came from (GGUF metadata or a Hugging Face config.json).
// The family traits below (activation ... rope_theta_sliding) are filled from
// the family table (model_family.h), not read field by field by each reader.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

// How RoPE pairs the features of a head. GGUF files store q/k rows permuted by
// llama.cpp's converter, so they rotate adjacent pairs (x[2i], x[2i+1]); Hugging
// Face checkpoints rotate halves (x[i], x[i + d/2]).
enum class RopeStyle { kAdjacentPairs, kHalves };

// Llama-3 style frequency scaling ("rope_type": "llama3"); factor 1 = none.
struct RopeScaling {
  float factor = 1.0f;
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  int64_t original_max_positions = 8192;
  bool llama3 = false;
};

// The feed-forward gate: SwiGLU silu(gate) ⊙ up, or GeGLU gelu_tanh(gate) ⊙ up.
enum class Activation { kSilu, kGeluTanh };

struct ModelConfig {
  std::string architecture = "llama";
  std::string name;  // human-readable, for logs
  int64_t n_layers = 0;
  int64_t hidden = 0;  // model width (embedding length)
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;    // grouped-query attention: n_heads % n_kv_heads == 0
  int64_t head_dim = 0;      // usually hidden / n_heads
  int64_t intermediate = 0;  // SwiGLU feed-forward width
  int64_t vocab = 0;
  int64_t max_positions = 0;  // context length the model was trained for
  float rms_eps = 1e-5f;
  float rope_theta = 10000.0f;
  RopeScaling rope_scaling;
  RopeStyle rope_style = RopeStyle::kAdjacentPairs;
  bool tied_embeddings = false;  // no separate output matrix: logits = h · embᵀ
  bool qkv_bias = false;         // Qwen2-style biases on q, k, v

  // Family traits (model_family.h says what each means).
  Activation activation = Activation::kSilu;
  bool embedding_scaled = false;     // embeddings × √hidden
  bool qk_norm = false;              // RMSNorm per q/k head
  bool post_norms = false;           // RMSNorm of attention/MLP outputs before the residual add
  float query_scale = 0;             // q × this before attention, softmax scale 1; 0 = softmax scales by 1/√head_dim
  int64_t sliding_window = 0;        // sliding layers see keys at distance < this; 0 = none
  std::vector<bool> sliding_layers;  // per layer (empty: none slides)
  float rope_theta_sliding = 10000.0f;

  // True when layer `l` attends within sliding_window only.
  bool IsSliding(int64_t l) const {
    return l >= 0 && l < static_cast<int64_t>(sliding_layers.size()) && sliding_layers[l];
  }

  // Checks the numbers are positive and consistent; names the first that is not.
  std::string Validate() const;  // empty = valid
};

}  // namespace troupe
