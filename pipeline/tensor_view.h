// TensorView: a borrowed, read-only view of one weight tensor as stored in a
// model file (GGUF block-quantized or plain, safetensors plain).
//
// The bytes belong to the file mapping that produced the view (GgufFile,
// SafetensorsFile); a view is valid while that object lives. Shapes are in
// torch order (row-major, last dimension contiguous): a GGUF tensor with dims
// [576, 192] has shape {192, 576}. Quantized types pack whole blocks along the
// last dimension.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

// Element/block encodings, numbered as in GGUF (ggml_type).
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q8_0 = 8,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  BF16 = 30,
};

// True for the codes Troupe can dequantize; anything else is rejected on load.
bool ggml_type_supported(uint32_t code);
const char* ggml_type_name(GgmlType type);
// Values per block (1 for plain types) and bytes per block.
int64_t ggml_block_values(GgmlType type);
int64_t ggml_block_bytes(GgmlType type);
// Bytes of a row of `n` values; n must be a multiple of ggml_block_values.
int64_t ggml_row_bytes(GgmlType type, int64_t n);

struct TensorView {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<int64_t> shape;  // torch order
  const uint8_t* data = nullptr;
  size_t n_bytes = 0;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t rows() const { return shape.empty() ? 0 : numel() / shape.back(); }
  int64_t cols() const { return shape.empty() ? 0 : shape.back(); }
};

}  // namespace troupe
