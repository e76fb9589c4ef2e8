// ModelFamily: what one decoder family needs, declared as data — the one
// place that says how a Llama, a Qwen 2 or a Gemma 3 block differs. The GGUF
// and Hugging Face readers look the family up by architecture name and copy
// its traits into ModelConfig; the decoders, the embedding and the LM head
// read only ModelConfig. Adding a family is a row in model_family.cpp (plus
// the metadata keys it reads, if any, in ModelConfigFromGguf) and its tests.
//
// The traits (each row of kFamilies says which it uses):
//   activation         SwiGLU (silu(gate) ⊙ up) or GeGLU with tanh-GELU
//   embedding_scaled   token embeddings multiplied by √hidden
//   qk_norm            RMSNorm over each q and k head (attn_q_norm, attn_k_norm)
//   post_norms         RMSNorm of the attention and MLP outputs before their
//                      residual adds (post_attention_norm, post_ffw_norm)
//   query_prescaled    q multiplied by 1/√head_dim before attention, whose
//                      softmax then scales by 1 (llama.cpp's Gemma order)
//   sliding_pattern    every layer is sliding-window except each n-th
//                      (layer % n == n - 1); 0 = all layers see everything.
//                      Applies when the file gives a window size.
//   sliding_rope_theta RoPE base of sliding layers (global layers use the
//                      file's rope.freq_base)
//   gguf_rope          how GGUF q/k rows rotate (llama.cpp's converter
//                      permutes Llama/Mistral rows, not the others')
// Norm weights are used as stored: llama.cpp's converter already stores
// Gemma's (1 + w).
//
// Thread-safety: immutable static data.
#pragma once

#include <string>
#include <string_view>

#include "pipeline/model_config.h"

namespace troupe {

struct ModelFamily {
  std::string_view architecture;  // GGUF general.architecture
  RopeStyle gguf_rope = RopeStyle::kAdjacentPairs;
  Activation activation = Activation::kSilu;
  bool embedding_scaled = false;
  bool qk_norm = false;
  bool post_norms = false;
  bool query_prescaled = false;
  int sliding_pattern = 0;
  float sliding_rope_theta = 10000.0f;
};

// The family of a GGUF architecture name, or nullptr when Troupe has none.
const ModelFamily* FindFamily(std::string_view architecture);

// "llama, mistral, qwen2, gemma3": for error messages.
std::string KnownArchitectures();

// Copies the family's traits into `config` (architecture included). The
// per-layer sliding flags need config->n_layers and config->sliding_window
// set first (with a window of 0 no layer slides), and query_scale needs
// n_layers, hidden, n_heads and head_dim.
void ApplyFamily(const ModelFamily& family, ModelConfig* config);

}  // namespace troupe
