// Small fp32 kernels of the decoder that are not matrix products: RMSNorm,
// SwiGLU gating, residual add, causal attention of one session (or of a
// batch's sessions at once) against its KV cache; the matrix products live in
// pipeline/quant (QuantMatrix).
// SwiGLU and attention follow ggml's CPU code operation for operation (its
// SIMD exp approximation and reduction orders), so that the forward pass is
// bit-identical to llama.cpp's one-token path. The variant is chosen at
// compile time like ggml's own (-march=native builds): AVX-512 F+DQ, else
// AVX2+FMA+F16C, else ggml's portable C.
//
// All pointers are CPU fp32, row-major, non-overlapping unless stated.
// Thread-safety: reentrant; Attention parallelizes over heads (and sessions) itself.
#pragma once

#include <cstdint>

namespace troupe {

// out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight   (out may be x)
void RmsNorm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* out);

// gate[i] = silu(gate[i]) * up[i] for i < n: one row of ggml_vec_swiglu_f32
// (ggml_v_silu in blocks of 16 from i = 0 on AVX-512, x / (1 + expf(-x)) for
// the rest). Call it per row: block boundaries are counted from `gate`.
void SiluMul(float* gate, const float* up, int64_t n);

// gate[i] = gelu_tanh(gate[i]) * up[i] for i < n: ggml_vec_geglu_f32 with
// GGML_GELU_FP16 — gate <= -10 gives 0, gate >= 10 gives gate * up, otherwise
// gelu is looked up in a 65536-entry fp16 table indexed by fp16(gate).
void GeluMul(float* gate, const float* up, int64_t n);

// ggml_table_gelu_f16: entry h is fp16(ggml_gelu_f32(fp32(h))), where
// ggml_gelu_f32(x) = 0.5x(1 + tanh(√(2/π)·x·(1 + 0.044715x²))) with ggml's
// contraction of 1 + 0.044715x·x into one fma (without it one entry
// differs); NaN entries are the quiet NaN of their sign. Exposed for tests.
const uint16_t* GeluTable();

// ggml's formulas, exposed for tests (see cpu_ops.cpp for their order of
// operations; AVX-512 F+DQ builds use ggml's AVX-512 variants):
// y[i] = ggml_v_expf(x[i]) (std::exp on builds without AVX-512).
void GgmlExp(const float* x, float* y, int64_t n);
// ggml_vec_dot_f16(n, x, y).
float GgmlDotF16(const uint16_t* x, const uint16_t* y, int64_t n);
// out[j] = GgmlDotF16(x + j * stride, y, n) for j < 16, bit for bit (the
// attention's scores of 16 keys; faster when n is a multiple of 64).
void GgmlDotF16Rows16(const uint16_t* x, int64_t stride, const uint16_t* y, int64_t n, float* out);
// The exp-and-sum part of ggml_vec_soft_max_f32: y = exp(x - max), returns
// the double sum in ggml's order.
double GgmlSoftMaxExp(const float* x, float max, float* y, int64_t n);

// x[i] += y[i] for i < n.
void AddInPlace(float* x, const float* y, int64_t n);

struct AttentionShape {
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t cache_stride = 0;  // floats between kv heads in the cache = max_length * head_dim
  float scale = 0;           // multiplies q·k before the softmax; 0 = 1/√head_dim
  int64_t window = 0;        // sliding window: a query at p sees keys at p - window < j <= p; 0 = all
};

// Causal attention for `t` new query rows of one session, at positions
// [start, start + t). q: [t, n_heads * head_dim] fp32; keys/values: base
// pointers of this layer's fp16 cache ([n_kv_heads][max_length][head_dim])
// already holding positions [0, start + t). out: [t, n_heads * head_dim] fp32.
// Arithmetic: llama.cpp's CPU attention without flash attention, bit for bit
// (q rounded to fp16, ggml_vec_dot_f16 scores, ggml's softmax with its exp
// approximation, probabilities rounded to fp16, ggml_vec_dot_f16 over the
// positions); see cpu_ops.cpp. Keys outside a sliding window are masked as
// llama.cpp masks them (-inf scores, exact zeros in every sum), which matches
// its sliding-window cache while that cache has not wrapped around (up to
// window + n_ubatch positions).
void Attention(const float* q, const uint16_t* keys, const uint16_t* values, const AttentionShape& shape, int64_t start,
               int64_t t, float* out, int threads);

// One session's part of a batch's attention: `t` query rows at positions
// [start, start + t) against its cache (base pointers and cache_stride as
// for Attention), written to `out`.
struct AttentionRows {
  const float* q = nullptr;
  const uint16_t* keys = nullptr;
  const uint16_t* values = nullptr;
  int64_t cache_stride = 0;
  int64_t start = 0;
  int64_t t = 0;
  float* out = nullptr;
};

// Attention for every session of a batch in one parallel pass over all
// their query rows (the heads that share a kv head together, reading its
// keys and values once, when that leaves items enough for the threads):
// each output is Attention's for that session, bit for bit; a batch of many
// one-token sessions splits across threads once instead of once per session. shape.cache_stride is unused
// (each session has its own).
void AttentionBatch(const AttentionShape& shape, const AttentionRows* sessions, int count, int threads);

// dst[i] = fp16(src[i]) for i < n (round to nearest even).
void ToHalf(const float* src, uint16_t* dst, int64_t n);

}  // namespace troupe
