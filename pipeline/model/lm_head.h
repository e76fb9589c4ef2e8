// LmHead: final RMSNorm and output projection, hidden states -> logits
// [rows, vocab] fp32 — the last model stage of the ring. With tied embeddings
// the projection is the token embedding matrix. Borrows weights from the
// ModelSource (which must outlive it). Thread-safety: Forward is reentrant.
#pragma once

#include <memory>
#include <vector>

#include "pipeline/format/model_source.h"
#include "pipeline/model/hidden_state.h"
#include "pipeline/model/model_options.h"
#include "pipeline/quant/qmatrix.h"

namespace troupe {

class LmHead {
 public:
  static Result<std::unique_ptr<LmHead>> Load(const ModelSource& source, const ModelOptions& options);
  // hidden: [rows, hidden] fp32 CPU contiguous. Returns logits [rows, vocab].
  Result<at::Tensor> Forward(const HiddenState& hidden) const;
  int64_t vocab() const { return output_.rows(); }

 private:
  ModelConfig config_;
  int threads_ = 1;
  std::vector<float> norm_;  // [hidden]
  QuantMatrix output_;       // [vocab, hidden]
};

}  // namespace troupe
