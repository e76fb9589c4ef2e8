// Matrix kernels behind QuantMatrix::Multiply, one set per instruction set.
//
// A RowsKernel computes y[t, r] = W[r, :] . x[t, :] for every activation row
// t in [0, n) and weight rows r in [r0, r1). Quantized weight types read the
// activations quantized by QuantizeActRow (activations.h); float types read
// the fp32 activations. Kernels only read their inputs and write their own
// rows of y, so disjoint row ranges may run on different threads at once.
// Each output y[t, r] depends only on W[r, :], activation row t and the
// matrix's path (MatmulArgs::repacked, fixed per matrix), bit for bit: not on
// n, r0, r1 or the other rows (batch invariance, tile_driver.h).
//
// Three implementations exist: kScalar (portable reference, always built),
// kAvx2 (AVX2 + FMA + F16C) and kAvx512 (AVX-512 F/BW/VL + VNNI). A SIMD set
// is compiled only when the compiler targets it (-march=native on a capable
// build machine), so "compiled in" also means "this CPU runs it".
//
// For quantized weights kAvx2 and kAvx512 compute, for one activation row,
// exactly what llama.cpp's CPU backend computes on an x86 CPU with AVX2
// (same bits; ggml_reference_test.cpp checks it against llama-cpp-python's
// libggml), following the path llama.cpp takes per type and shape
// (docs/quant-paths.md):
//   Q4_1, Q5_0, Q8_0, Q5_K, Q6_K: ggml_vec_dot_<type>_q8_* (__AVX2__ branch);
//   Q4_0, Q4_K, rows % 8 == 0:  the repacked gemv (ggml_gemv_q4_0_8x8_q8_0,
//                               ggml_gemv_q4_K_8x8_q8_K), GgmlRepacks below;
//   Q4_0, Q4_K, other rows:     ggml_vec_dot_<type>_q8_* (__AVX2__ branch).
// Several activation rows give each row's one-row result (llama.cpp's own
// batched paths round differently). kScalar follows ggml's portable loops for
// the 32-value types (kernels_scalar.cpp). Float weights: our own FMA order.
#pragma once

#include <cstdint>

#include "pipeline/quant/qmatrix.h"

namespace troupe {

enum class Isa { kScalar, kAvx2, kAvx512 };

const char* IsaName(Isa isa);
// True when kernels for `isa` were compiled into this build.
bool IsaAvailable(Isa isa);
// The fastest available instruction set; Multiply uses it.
Isa BestIsa();

struct MatmulArgs {
  const uint8_t* w = nullptr;  // weight row 0; rows are row_bytes apart
  int64_t row_bytes = 0;
  int64_t cols = 0;
  const uint8_t* xq = nullptr;  // [n] quantized activation rows, xq_stride bytes apart
  int64_t xq_stride = 0;
  const float* x = nullptr;  // [n, cols] fp32 activations (float weight types)
  int64_t n = 0;
  // Layout kQ8x2 with a pair kernel (GetAvx512PairKernel) only, else
  // nullptr: the n rows as row pairs (BuildActPairs, activations.h).
  const uint8_t* xp = nullptr;
  // Layout kQ8x2 with a lane kernel (GetAvx512LaneKernel) and n in
  // [kMinLaneRows, kLaneRows] only, else nullptr: the n rows as row lanes
  // (BuildActLanes, activations.h).
  const uint8_t* xl = nullptr;
  float* y = nullptr;  // [n, ldy] outputs
  int64_t ldy = 0;
  // llama.cpp would repack this matrix (GgmlRepacks): kernels of that type
  // then follow its interleaved gemv's order instead of its vec_dot's.
  bool repacked = false;
  // Names the contents of xq for this one product (MultiplyShared gives each
  // call a new id): a kernel that lays the activation rows out again may keep
  // that layout per thread and reuse it for every run of rows with the same
  // id and xq. 0: no reuse.
  uint64_t x_id = 0;
};

// Whether llama.cpp's CPU backend, on an AVX2 CPU with its default REPACK
// extra buffer, repacks a weight of `type` with `rows` rows (ne[1]) into
// 8-row interleaved blocks for its one-token gemv: Q4_0 (q4_0_8x8) and Q4_K
// (q4_K_8x8) when rows % 8 == 0 (ggml-cpu/repack.cpp,
// ggml_repack_get_optimal_repack_type).
inline bool GgmlRepacks(GgmlType type, int64_t rows) {
  return (type == GgmlType::Q4_0 || type == GgmlType::Q4_K) && rows % 8 == 0;
}

using RowsKernel = void (*)(const MatmulArgs& args, int64_t r0, int64_t r1);

// nullptr when `isa` is not compiled in or the type is not supported.
RowsKernel GetRowsKernel(GgmlType type, Isa isa);

// QuantMatrix::Multiply / MultiplyShared with an explicit instruction set
// (kScalar when `isa` is unavailable). For tests and benchmarks.
void MultiplyWithIsa(const QuantMatrix& w, Isa isa, const float* x, int64_t n, float* y, int threads);
void MultiplySharedWithIsa(Isa isa, const MatmulOutput* outputs, int count, const float* x, int64_t n, int threads);

// Per-ISA tables, defined in kernels_<isa>.cpp.
RowsKernel GetScalarKernel(GgmlType type);
RowsKernel GetAvx2Kernel(GgmlType type);
RowsKernel GetAvx512Kernel(GgmlType type);
RowsKernel GetAvx512KQuantKernel(GgmlType type);  // Q4_K, Q6_K (kernels_avx512_k.cpp)
// Q4_1, Q5_0 and Q8_0 for n >= kMinPairRows activation rows given as row pairs
// (MatmulArgs::xp; kernels_avx512_pairs.cpp); nullptr for other types.
RowsKernel GetAvx512PairKernel(GgmlType type);
constexpr int64_t kMinPairRows = 2;
// Q4_1 and Q8_0 for kMinLaneRows..kLaneRows (activations.h) activation rows
// given as row lanes (MatmulArgs::xl; kernels_avx512_lanes.cpp); nullptr for
// other types. Below kMinLaneRows the pair kernels are faster.
RowsKernel GetAvx512LaneKernel(GgmlType type);
constexpr int64_t kMinLaneRows = 11;

}  // namespace troupe
