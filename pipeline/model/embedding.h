// Embedding: token ids -> hidden states [tokens, hidden] fp32 — the first
// stage of the ring. Borrows the token embedding matrix from the ModelSource
// (which must outlive it) and expands each row exactly from its blocks. The
// same on every backend: a row lookup is a memory copy, not math, and the
// hidden states leave as fp32 CPU tensors anyway (a GPU would add a transfer
// and a second copy of the table). Families with scaled embeddings (Gemma)
// multiply each row by √hidden in fp32, as llama.cpp does. Thread-safety:
// Forward is reentrant.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "pipeline/format/model_source.h"
#include "pipeline/model/hidden_state.h"
#include "pipeline/quant/qmatrix.h"

namespace troupe {

class Embedding {
 public:
  static Result<std::unique_ptr<Embedding>> Load(const ModelSource& source);
  // InvalidArgument naming the id when one is outside the vocabulary.
  Result<HiddenState> Forward(const std::vector<int32_t>& ids) const;
  const QuantMatrix& matrix() const { return table_; }

 private:
  QuantMatrix table_;  // [vocab, hidden]
  float scale_ = 1.0f;
};

}  // namespace troupe
