// QuantMatrix: validation and row look-up. The Multiply driver is multiply.cpp.

#include "pipeline/quant/qmatrix.h"

#include <limits>
#include <string>

#include "pipeline/quant/kernels.h"

namespace troupe {

Result<QuantMatrix> QuantMatrix::Create(GgmlType type, int64_t rows, int64_t cols, const uint8_t* data,
                                        size_t n_bytes) {
  const uint32_t code = static_cast<uint32_t>(type);
  if (!ggml_type_supported(code)) {
    return Status::Unsupported("QuantMatrix: unsupported weight type code " + std::to_string(code));
  }
  const std::string what = std::string("QuantMatrix ") + ggml_type_name(type) + " [" + std::to_string(rows) + ", " +
                           std::to_string(cols) + "]: ";
  if (rows <= 0 || cols <= 0) {
    return Status::InvalidArgument(what + "rows and cols must be positive");
  }
  const int64_t bv = ggml_block_values(type);
  if (cols % bv != 0) {
    return Status::InvalidArgument(what + "cols " + std::to_string(cols) + " is not a multiple of the block size " +
                                   std::to_string(bv));
  }
  int64_t row_bytes = 0, total = 0;
  if (__builtin_mul_overflow(cols / bv, ggml_block_bytes(type), &row_bytes) ||
      __builtin_mul_overflow(rows, row_bytes, &total) ||
      static_cast<uint64_t>(total) > std::numeric_limits<size_t>::max()) {
    return Status::InvalidArgument(what + "size overflows");
  }
  if (static_cast<size_t>(total) != n_bytes) {
    return Status::InvalidArgument(what + "expected " + std::to_string(total) + " bytes (" + std::to_string(rows) +
                                   " rows x " + std::to_string(row_bytes) + " bytes), got " + std::to_string(n_bytes));
  }
  if (data == nullptr) return Status::InvalidArgument(what + "data is null");
  QuantMatrix m;
  m.type_ = type;
  m.rows_ = rows;
  m.cols_ = cols;
  m.row_bytes_ = row_bytes;
  m.data_ = data;
  return m;
}

Result<QuantMatrix> QuantMatrix::FromView(const TensorView& view) {
  if (view.shape.size() != 2) {
    return Status::InvalidArgument("tensor '" + view.name + "': QuantMatrix needs a 2-D view, got " +
                                   std::to_string(view.shape.size()) + "-D");
  }
  Result<QuantMatrix> m = Create(view.type, view.shape[0], view.shape[1], view.data, view.n_bytes);
  if (!m.ok()) {
    return Status(m.status().code(), "tensor '" + view.name + "': " + m.status().message());
  }
  return m;
}

void QuantMatrix::DequantizeRow(int64_t r, float* out) const { dequantize(type_, data_ + r * row_bytes_, out, cols_); }

void QuantMatrix::Multiply(const float* x, int64_t n, float* y, int threads) const {
  const MatmulOutput out{this, y};
  MultiplySharedWithIsa(BestIsa(), &out, 1, x, n, threads);
}

void MultiplyShared(const MatmulOutput* outputs, int count, const float* x, int64_t n, int threads) {
  MultiplySharedWithIsa(BestIsa(), outputs, count, x, n, threads);
}

}  // namespace troupe
