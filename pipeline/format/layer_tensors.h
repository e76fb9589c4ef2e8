// LayerTensors: which of a model's tensors belong to which decoder layer —
// GGUF names "blk.N.<rest>" belong to layer N; every other tensor (token
// embedding, output norm, LM head) to no layer. What a shard's memory need
// (LayerBytes) and the layer check (weight_digest.h) are computed from.
//
// Plain functions over a ModelSource; no tensor data is read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/format/model_source.h"

namespace troupe {

// Per layer 0..n_layers-1, the names of its tensors in name order.
std::vector<std::vector<std::string>> LayerTensors(const ModelSource& source);

// The layer a tensor name belongs to, or -1 ("token_embd.weight", "blk.x.y").
int64_t LayerOf(const std::string& tensor_name);

// Bytes of weights of each layer as stored in the model (what a shard that
// serves the layer maps and keeps).
std::vector<uint64_t> LayerBytes(const ModelSource& source);

// Values (weights) of each layer: times the element size, what a backend
// that expands the blocks (the torch backend's bf16 or fp32) keeps.
std::vector<uint64_t> LayerValues(const ModelSource& source);

}  // namespace troupe
