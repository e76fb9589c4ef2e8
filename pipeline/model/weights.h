// Loading helpers shared by the model stages: look a tensor up by its GGUF
// name, check its shape, and wrap it (QuantMatrix for matrices, an fp32 copy
// for vectors such as norm weights and biases).
#pragma once

#include <string>
#include <vector>

#include "pipeline/format/model_source.h"
#include "pipeline/model/weight_arena.h"
#include "pipeline/quant/qmatrix.h"
#include "pipeline/status.h"

namespace troupe {

// A [rows, cols] matrix kept in its file encoding: read from the file
// mapping, or from its copy in `arena` when one is given (weight_arena.h).
Result<QuantMatrix> LoadMatrix(const ModelSource& source, const std::string& name, int64_t rows, int64_t cols,
                               WeightArena* arena = nullptr);
// A [n] vector expanded to fp32 (a copy).
Result<std::vector<float>> LoadVector(const ModelSource& source, const std::string& name, int64_t n);

}  // namespace troupe
