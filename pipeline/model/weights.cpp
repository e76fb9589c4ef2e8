#include "pipeline/model/weights.h"

namespace troupe {

Result<QuantMatrix> LoadMatrix(const ModelSource& source, const std::string& name, int64_t rows, int64_t cols,
                               WeightArena* arena) {
  TROUPE_ASSIGN_OR_RETURN(const TensorView* view, source.Require(name, {rows, cols}));
  auto m = QuantMatrix::FromView(arena != nullptr ? arena->Place(*view) : *view);
  if (!m.ok()) return Status(m.status().code(), source.path() + ": tensor '" + name + "': " + m.status().message());
  return m;
}

Result<std::vector<float>> LoadVector(const ModelSource& source, const std::string& name, int64_t n) {
  TROUPE_ASSIGN_OR_RETURN(const TensorView* view, source.Require(name, {n}));
  std::vector<float> out(n);
  dequantize(view->type, view->data, out.data(), n);
  return out;
}

}  // namespace troupe
