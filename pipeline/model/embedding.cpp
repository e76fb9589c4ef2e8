#include "pipeline/model/embedding.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <cmath>

#include "pipeline/model/weights.h"

namespace troupe {

Result<std::unique_ptr<Embedding>> Embedding::Load(const ModelSource& source) {
  const ModelConfig& c = source.config();
  auto e = std::make_unique<Embedding>();
  TROUPE_ASSIGN_OR_RETURN(e->table_, LoadMatrix(source, "token_embd.weight", c.vocab, c.hidden));
  // Gemma: llama.cpp's ggml_scale by sqrtf(n_embd), one fp32 multiply per value.
  if (c.embedding_scaled) e->scale_ = std::sqrt(static_cast<float>(c.hidden));
  return e;
}

Result<HiddenState> Embedding::Forward(const std::vector<int32_t>& ids) const {
  if (ids.empty()) return Status::InvalidArgument("no tokens to embed");
  for (int32_t id : ids)
    if (id < 0 || id >= table_.rows())
      return Status::InvalidArgument("token id " + std::to_string(id) + " is outside the vocabulary of " +
                                     std::to_string(table_.rows()));
  at::Tensor out = at::empty({static_cast<int64_t>(ids.size()), table_.cols()}, at::kFloat);
  float* o = out.data_ptr<float>();
  for (size_t i = 0; i < ids.size(); ++i) table_.DequantizeRow(ids[i], o + i * table_.cols());
  if (scale_ != 1.0f)
    for (int64_t i = 0; i < out.numel(); ++i) o[i] *= scale_;
  return out;
}

}  // namespace troupe
