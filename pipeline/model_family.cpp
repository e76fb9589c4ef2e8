#include "pipeline/model_family.h"

#include <cmath>

namespace troupe {
namespace {

ModelFamily Llama(std::string_view architecture, RopeStyle rope) {
  ModelFamily f;
  f.architecture = architecture;
  f.gguf_rope = rope;
  return f;
}

// Gemma 3: facts from llama.cpp's src/models/gemma3.cpp (graph) and
// llama-hparams (swa pattern 6, sliding layers' RoPE base 10000).
ModelFamily Gemma3() {
  ModelFamily f;
  f.architecture = "gemma3";
  f.gguf_rope = RopeStyle::kHalves;
  f.activation = Activation::kGeluTanh;
  f.embedding_scaled = true;
  f.qk_norm = true;
  f.post_norms = true;
  f.query_prescaled = true;
  f.sliding_pattern = 6;
  f.sliding_rope_theta = 10000.0f;
  return f;
}

const ModelFamily kFamilies[] = {
    Llama("llama", RopeStyle::kAdjacentPairs),
    Llama("mistral", RopeStyle::kAdjacentPairs),
    Llama("qwen2", RopeStyle::kHalves),
    Gemma3(),
};

}  // namespace

const ModelFamily* FindFamily(std::string_view architecture) {
  for (const ModelFamily& f : kFamilies)
    if (f.architecture == architecture) return &f;
  return nullptr;
}

std::string KnownArchitectures() {
  std::string s;
  for (const ModelFamily& f : kFamilies) {
    if (!s.empty()) s += ", ";
    s += f.architecture;
  }
  return s;
}

void ApplyFamily(const ModelFamily& family, ModelConfig* c) {
  c->architecture = std::string(family.architecture);
  c->rope_style = family.gguf_rope;
  c->activation = family.activation;
  c->embedding_scaled = family.embedding_scaled;
  c->qk_norm = family.qk_norm;
  c->post_norms = family.post_norms;
  c->query_scale = 0;
  if (family.query_prescaled && c->head_dim > 0) {
    // llama.cpp (gemma3.cpp) scales by 1/√head_dim, except for Gemma 3 27B
    // (62 layers), whose query_pre_attn_scalar is hidden / n_heads.
    const float d = c->n_layers == 62 && c->n_heads > 0 ? static_cast<float>(c->hidden / c->n_heads)
                                                        : static_cast<float>(c->head_dim);
    c->query_scale = 1.0f / std::sqrt(d);
  }
  c->sliding_layers.clear();
  if (family.sliding_pattern > 0 && c->sliding_window > 0) {
    const int n = family.sliding_pattern;
    for (int64_t l = 0; l < c->n_layers; ++l) c->sliding_layers.push_back(l % n < n - 1);
    c->rope_theta_sliding = family.sliding_rope_theta;
  }
}

}  // namespace troupe
