// QuantMatrix: a [rows, cols] weight matrix kept in its file encoding (F32,
// F16, BF16, Q4_0, Q4_1, Q8_0, Q4_K, Q6_K) and multiplied without expanding it.
//
// This is the engine's hot path: decode reads every weight once per token, so
// the speed limit is memory bandwidth, and keeping 4-bit blocks 4-bit is what
// lets a CPU node keep up with llama.cpp.
//
// Ownership: the matrix borrows `data` (a file mapping or an owned buffer held
// by the caller) and must not outlive it. Thread-safety: const methods may be
// called from any number of threads at once.
#pragma once

#include <cstdint>

#include "pipeline/status.h"
#include "pipeline/tensor_view.h"

namespace troupe {

class QuantMatrix {
 public:
  QuantMatrix() = default;
  // Fails when the type is unsupported, cols is not a multiple of the block
  // size, or n_bytes does not equal rows * ggml_row_bytes(type, cols).
  static Result<QuantMatrix> Create(GgmlType type, int64_t rows, int64_t cols,
                                    const uint8_t* data, size_t n_bytes);
  static Result<QuantMatrix> FromView(const TensorView& view);  // 2-D views only

  GgmlType type() const { return type_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  const uint8_t* data() const { return data_; }
  int64_t row_bytes() const { return row_bytes_; }

  // y[t, r] = sum_c W[r, c] * x[t, c] for t in [0, n), r in [0, rows).
  // x: [n, cols] fp32 row-major; y: [n, rows] fp32 row-major.
  // Uses up to `threads` OpenMP threads (0 = omp default).
  void Multiply(const float* x, int64_t n, float* y, int threads = 0) const;

  // Writes row r expanded to fp32 into out[0, cols). (Embedding look-up.)
  void DequantizeRow(int64_t r, float* out) const;

 private:
  GgmlType type_ = GgmlType::F32;
  int64_t rows_ = 0, cols_ = 0, row_bytes_ = 0;
  const uint8_t* data_ = nullptr;
};

// Expands n values (a whole number of blocks) of `type` at src into dst.
void dequantize(GgmlType type, const uint8_t* src, float* dst, int64_t n);

}  // namespace troupe
