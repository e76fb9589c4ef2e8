// LmHead: final RMSNorm and output projection, hidden states -> logits
// [rows, vocab] fp32 — the last model stage of the ring. With tied embeddings
// the projection is the token embedding matrix. The kernels backend borrows
// weights from the ModelSource (which must outlive it); the torch backend
// holds them expanded on its device (model_options.h). Thread-safety:
// Forward is reentrant.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pipeline/format/model_source.h"
#include "pipeline/model/hidden_state.h"
#include "pipeline/model/model_options.h"

namespace troupe {

class LmHead {
 public:
  // Errors as Decoder::Load.
  static Result<std::unique_ptr<LmHead>> Load(const ModelSource& source, const ModelOptions& options);
  virtual ~LmHead() = default;
  // hidden: [rows, hidden] fp32 CPU contiguous. Returns logits [rows, vocab]
  // fp32 CPU; ResourceExhausted on a device out-of-memory.
  virtual Result<at::Tensor> Forward(const HiddenState& hidden) const = 0;
  virtual int64_t vocab() const = 0;
  virtual std::string Describe() const = 0;
};

}  // namespace troupe
