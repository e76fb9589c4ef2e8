// Decoder: the transformer blocks [begin, end) of one model — what a Shard
// runs. Holds that range's weights (read-only, shared by every session) and
// nothing per session: each step brings its session's KvCache.
//
// Block (Llama family):
//   x += Wo · Attention(RoPE(Wq · RmsNorm(x)), RoPE(Wk · RmsNorm(x)), Wv · RmsNorm(x))
//   x += Wdown · (silu(Wgate · RmsNorm(x)) ⊙ Wup · RmsNorm(x))
// with grouped-query attention (n_heads / n_kv_heads queries share a kv head)
// and optional q/k/v biases (Qwen2).
//
// Batching: Forward takes the rows of several sessions concatenated; the
// matrix products run once over all rows, attention per session against its
// own cache. Weights are borrowed from the ModelSource, which must outlive the
// Decoder. Thread-safety: Forward may not run concurrently on one Decoder
// (scratch is shared); it is the shard actor's single thread that calls it.
#pragma once

#include <cstdint>
#include <memory>
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
  // Loads layers [begin, end): InvalidArgument for a bad range; NotFound /
  // InvalidArgument naming the tensor when one is missing or mis-shaped.
  static Result<std::unique_ptr<Decoder>> Load(const ModelSource& source, int64_t begin, int64_t end,
                                               const ModelOptions& options);
  ~Decoder();

  int64_t begin_layer() const;
  int64_t end_layer() const;
  const ModelConfig& config() const;
  // The cache shape every session on this decoder needs.
  KvCacheShape cache_shape() const;

  // hidden: [sum of n_tokens, hidden] fp32, updated in place. On success every
  // session's cache has advanced by its n_tokens. Fails without touching any
  // cache when a cache lacks room (ResourceExhausted), is for other layers, or
  // the rows do not add up (InvalidArgument).
  Status Forward(HiddenState& hidden, const std::vector<SessionRows>& batch);

 private:
  struct Impl;
  explicit Decoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace troupe
