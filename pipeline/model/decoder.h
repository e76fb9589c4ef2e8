// Decoder: the transformer blocks [begin, end) of one model — what a Shard
// runs. Holds that range's weights (read-only, shared by every session) and
// nothing per session: each step brings its session's KvCache.
//
// Block (Llama family):
//   x += Wo · Attention(RoPE(Wq · RmsNorm(x)), RoPE(Wk · RmsNorm(x)), Wv · RmsNorm(x))
//   x += Wdown · (silu(Wgate · RmsNorm(x)) ⊙ Wup · RmsNorm(x))
// with grouped-query attention (n_heads / n_kv_heads queries share a kv head)
// and optional q/k/v biases (Qwen2). Family traits (model_family.h) change
// it: Gemma 3 norms each q/k head, scales q before attention, limits most
// layers to a sliding window with their own RoPE base, norms the attention
// and MLP outputs before each residual add, and gates with tanh-GELU.
// The torch backend runs only the plain Llama-family block.
//
// Batching: Forward takes the rows of several sessions concatenated; the
// matrix products run once over all rows, attention per session against its
// own cache.
//
// Backends (ModelOptions, model_options.h): the quantized kernels borrow the
// weights from the ModelSource, which must outlive the Decoder, and are
// bit-exact with llama.cpp's one-token path and batch invariant; the torch
// backend (torch_decoder.cpp) expands the weights to its dtype on its device
// (CPU or CUDA) and computes with libtorch ops — close to the kernels, not
// bit-identical. Both take and return fp32 CPU hidden states, so shards of
// either kind serve the same ring. Thread-safety: Forward may not run
// concurrently on one Decoder (scratch is shared); it is the shard actor's
// single thread that calls it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/format/model_source.h"
#include "pipeline/model/hidden_state.h"
#include "pipeline/model/kv_cache.h"
#include "pipeline/model/model_options.h"
#include "pipeline/status.h"

namespace troupe {

// One session's share of a batch: the next `n_tokens` rows of the hidden state
// continue this session at positions [cache->length(), + n_tokens).
struct SessionRows {
  KvCache* cache = nullptr;
  int64_t n_tokens = 0;
};

// Diagnostic hook (bench/forward_dump): when set, Forward reports the rows of
// each intermediate tensor, named as llama.cpp's graph names them
// ("attn_norm", "Qcur", ...). Process-wide; nullptr (the default) disables it.
using DecoderProbe = void (*)(const char* name, int64_t layer, const float* data, int64_t n);
void SetDecoderProbe(DecoderProbe probe);

class Decoder {
 public:
  // Loads layers [begin, end) on the backend `options` resolve to:
  // InvalidArgument for a bad range or option; NotFound / InvalidArgument
  // naming the tensor when one is missing or mis-shaped; Unsupported for a
  // device this build cannot use; ResourceExhausted when the weights do not
  // fit the device.
  static Result<std::unique_ptr<Decoder>> Load(const ModelSource& source, int64_t begin, int64_t end,
                                               const ModelOptions& options);
  virtual ~Decoder() = default;

  int64_t begin_layer() const { return begin_; }
  int64_t end_layer() const { return end_; }
  const ModelConfig& config() const { return config_; }
  // The cache shape every session on this decoder needs (its dtype and
  // device are the backend's).
  virtual KvCacheShape cache_shape() const = 0;
  // "kernels (cpu)" or "torch (cuda:0, bf16)".
  virtual std::string Describe() const = 0;

  // hidden: [sum of n_tokens, hidden] fp32 CPU, updated in place. On success
  // every session's cache has advanced by its n_tokens. Fails without
  // touching any cache when a cache lacks room (ResourceExhausted), is for
  // other layers, or the rows do not add up (InvalidArgument); a device
  // out-of-memory during the step is ResourceExhausted, and the caches are
  // then as before the step.
  virtual Status Forward(HiddenState& hidden, const std::vector<SessionRows>& batch) = 0;

 protected:
  Decoder(const ModelConfig& config, int64_t begin, int64_t end) : config_(config), begin_(begin), end_(end) {}
  // The checks every backend makes before a step: non-empty rows, caches of
  // cache_shape() with room, hidden a contiguous fp32 CPU [N, hidden]. Returns N.
  Result<int64_t> CheckBatch(const HiddenState& hidden, const std::vector<SessionRows>& batch) const;

 private:
  ModelConfig config_;
  int64_t begin_ = 0, end_ = 0;
};

}  // namespace troupe
