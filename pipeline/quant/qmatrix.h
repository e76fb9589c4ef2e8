// QuantMatrix: a [rows, cols] weight matrix kept in its file encoding (F32,
// F16, BF16, Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K) and multiplied
// without expanding it.
//
// Quantized products equal llama.cpp's CPU results bit for bit (x86 with
// AVX2 or AVX-512, one activation row): each type follows the path llama.cpp
// takes for it — vec_dot for Q4_1, Q5_0, Q8_0, Q5_K, Q6_K, and for Q4_0 / Q4_K
// unless rows % 8 == 0, when llama.cpp repacks them and runs its 8x8 gemv
// (kernels.h, docs/quant-paths.md).
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
  static Result<QuantMatrix> Create(GgmlType type, int64_t rows, int64_t cols, const uint8_t* data, size_t n_bytes);
  static Result<QuantMatrix> FromView(const TensorView& view);  // 2-D views only

  GgmlType type() const { return type_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  const uint8_t* data() const { return data_; }
  int64_t row_bytes() const { return row_bytes_; }

  // y[t, r] = sum_c W[r, c] * x[t, c] for t in [0, n), r in [0, rows).
  // x: [n, cols] fp32 row-major; y: [n, rows] fp32 row-major.
  // Uses up to `threads` threads (0 = omp_get_max_threads(): OMP_NUM_THREADS
  // or the core count). For quantized weights x is first quantized to 8 bits
  // exactly as llama.cpp's CPU backend does (ggml Q8_0/Q8_1 per 32 values
  // with fp16 scales, Q8_K per 256 for the K-quants; activations.h) and each
  // row is then llama.cpp's one-token result bit for bit (see above), so
  // |y - exact| <= sum_c |W[r, c]| * d_b / 2 plus the fp16 rounding of the
  // scales and fp32 rounding (multiply_test.cpp states the full bound),
  // d_b = max|x| over the block / 127. Float weights: fp32 FMA throughout.
  // Batch invariant: row t of y is bit-identical whatever n, t's place in
  // the batch and `threads` are (and the same as in MultiplyShared). For
  // quantized weights AVX2 and AVX-512 give the same bits (llama.cpp's); the
  // scalar fallback and float weights round in their own orders, per
  // instruction set.
  void Multiply(const float* x, int64_t n, float* y, int threads = 0) const;

  // Writes row r expanded to fp32 into out[0, cols). (Embedding look-up.)
  void DequantizeRow(int64_t r, float* out) const;

 private:
  GgmlType type_ = GgmlType::F32;
  int64_t rows_ = 0, cols_ = 0, row_bytes_ = 0;
  const uint8_t* data_ = nullptr;
};

// One product of a shared-input multiply: y [n, w->rows()] = x . W^T.
struct MatmulOutput {
  const QuantMatrix* w;
  float* y;
};

// y_i = W_i x for several matrices that read the same activations (q/k/v,
// gate/up): x [n, cols] is quantized once per weight format and all products
// run in one parallel pass, rows split over the threads in proportion to
// weight bytes. Every W_i should have the same cols (otherwise this falls back
// to one Multiply each); outputs must not overlap. Thread-safe like Multiply;
// each y_i is bit-identical to W_i.Multiply(x, n, y_i).
void MultiplyShared(const MatmulOutput* outputs, int count, const float* x, int64_t n, int threads = 0);

// Expands n values (a whole number of blocks) of `type` at src into dst.
void dequantize(GgmlType type, const uint8_t* src, float* dst, int64_t n);

}  // namespace troupe
