#include "pipeline/format/layer_tensors.h"

#include <algorithm>

namespace troupe {

int64_t LayerOf(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  const size_t dot = name.find('.', 4);
  if (dot == std::string::npos || dot == 4 || dot - 4 > 9) return -1;
  int64_t layer = 0;
  for (size_t i = 4; i < dot; ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    layer = layer * 10 + (name[i] - '0');
  }
  return layer;
}

std::vector<std::vector<std::string>> LayerTensors(const ModelSource& source) {
  std::vector<std::vector<std::string>> layers(static_cast<size_t>(std::max<int64_t>(0, source.config().n_layers)));
  for (std::string& name : source.tensor_names()) {
    const int64_t layer = LayerOf(name);
    if (layer >= 0 && layer < static_cast<int64_t>(layers.size())) layers[layer].push_back(std::move(name));
  }
  for (auto& names : layers) std::sort(names.begin(), names.end());
  return layers;
}

std::vector<uint64_t> LayerBytes(const ModelSource& source) {
  const std::vector<std::vector<std::string>> layers = LayerTensors(source);
  std::vector<uint64_t> bytes(layers.size(), 0);
  for (size_t i = 0; i < layers.size(); ++i) {
    for (const std::string& name : layers[i]) {
      if (const TensorView* t = source.Find(name)) bytes[i] += t->n_bytes;
    }
  }
  return bytes;
}

std::vector<uint64_t> LayerValues(const ModelSource& source) {
  const std::vector<std::vector<std::string>> layers = LayerTensors(source);
  std::vector<uint64_t> values(layers.size(), 0);
  for (size_t i = 0; i < layers.size(); ++i) {
    for (const std::string& name : layers[i]) {
      if (const TensorView* t = source.Find(name)) values[i] += static_cast<uint64_t>(t->numel());
    }
  }
  return values;
}

}  // namespace troupe
