#include "pipeline/model/decoder.h"

#include <ATen/core/Tensor.h>

#include <string>

#include "pipeline/model/decoder_backends.h"

namespace troupe {

Result<std::unique_ptr<Decoder>> Decoder::Load(const ModelSource& source, int64_t begin, int64_t end,
                                               const ModelOptions& options) {
  const ModelConfig& c = source.config();
  if (begin < 0 || end > c.n_layers || begin >= end)
    return Status::InvalidArgument("layer range [" + std::to_string(begin) + ", " + std::to_string(end) +
                                   ") is not inside the model's " + std::to_string(c.n_layers) + " layers");
  TROUPE_ASSIGN_OR_RETURN(ResolvedBackend backend, ResolveBackend(options));
  if (backend.backend == Backend::kTorch) return LoadTorchDecoder(source, begin, end, options, backend);
  return LoadKernelDecoder(source, begin, end, options);
}

Result<int64_t> Decoder::CheckBatch(const HiddenState& hidden, const std::vector<SessionRows>& batch) const {
  const KvCacheShape want = cache_shape();
  int64_t n = 0;
  for (size_t s = 0; s < batch.size(); ++s) {
    const SessionRows& sr = batch[s];
    if (!sr.cache || sr.n_tokens <= 0) return Status::InvalidArgument("batch entry " + std::to_string(s) + " is empty");
    const KvCacheShape& cs = sr.cache->shape();
    if (cs.begin_layer != want.begin_layer || cs.end_layer != want.end_layer || cs.n_kv_heads != want.n_kv_heads ||
        cs.head_dim != want.head_dim || cs.dtype != want.dtype || cs.device != want.device || cs.layout != want.layout)
      return Status::InvalidArgument("batch entry " + std::to_string(s) + " has a KV cache for other layers");
    TROUPE_RETURN_IF_ERROR(sr.cache->Check(sr.n_tokens));
    n += sr.n_tokens;
  }
  const int64_t h = config_.hidden;
  if (!hidden.defined() || hidden.dim() != 2 || hidden.size(0) != n || hidden.size(1) != h ||
      hidden.scalar_type() != at::kFloat || !hidden.is_contiguous() || !hidden.is_cpu())
    return Status::InvalidArgument("hidden state must be a contiguous fp32 CPU tensor [" + std::to_string(n) + ", " +
                                   std::to_string(h) + "]");
  return n;
}

}  // namespace troupe
