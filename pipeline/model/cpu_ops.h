// Small fp32 kernels of the decoder that are not matrix products: RMSNorm,
// SwiGLU gating, residual add, causal attention of one session against its
// KV cache. Plain loops the compiler vectorizes; the matrix products live in
// pipeline/quant (QuantMatrix).
//
// All pointers are CPU fp32, row-major, non-overlapping unless stated.
// Thread-safety: reentrant; Attention parallelizes over heads itself.
#pragma once

#include <cstdint>

namespace troupe {

// out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight   (out may be x)
void RmsNorm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* out);

// gate[i] = silu(gate[i]) * up[i] for i < n.
void SiluMul(float* gate, const float* up, int64_t n);

// x[i] += y[i] for i < n.
void AddInPlace(float* x, const float* y, int64_t n);

struct AttentionShape {
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t cache_stride = 0;  // floats between kv heads in the cache = capacity * head_dim
};

// Causal attention for `t` new query rows of one session, at positions
// [start, start + t). q: [t, n_heads * head_dim] fp32; keys/values: base
// pointers of this layer's fp16 cache ([n_kv_heads][capacity][head_dim])
// already holding positions [0, start + t). out: [t, n_heads * head_dim] fp32.
// Arithmetic: q is rounded to fp16 like the cache, scores and softmax are
// fp32, and the probabilities are rounded to fp16 before weighting the values
// — the precision of llama.cpp's CPU attention, which our conformance tests
// compare against.
void Attention(const float* q, const uint16_t* keys, const uint16_t* values, const AttentionShape& shape,
               int64_t start, int64_t t, float* out, int threads);

// dst[i] = fp16(src[i]) for i < n (round to nearest even).
void ToHalf(const float* src, uint16_t* dst, int64_t n);

}  // namespace troupe
