// The quantized-kernel Decoder (decoder.h): bit-exact with llama.cpp's
// one-token path, batch invariant.
#include <ATen/core/Tensor.h>

#include <string>

#include "pipeline/model/cpu_ops.h"
#include "pipeline/model/decoder_backends.h"
#include "pipeline/model/rope.h"
#include "pipeline/model/weights.h"

namespace troupe {

namespace {

// One transformer block's weights, named as in GGUF.
struct Block {
  std::vector<float> attn_norm;   // [hidden]
  QuantMatrix attn_q;             // [n_heads * head_dim, hidden]
  QuantMatrix attn_k;             // [n_kv_heads * head_dim, hidden]
  QuantMatrix attn_v;             // [n_kv_heads * head_dim, hidden]
  std::vector<float> bq, bk, bv;  // biases (Qwen2) or empty
  QuantMatrix attn_output;        // [hidden, n_heads * head_dim]
  std::vector<float> ffn_norm;    // [hidden]
  // Family extras (model_family.h), empty when the family has none.
  std::vector<float> attn_q_norm, attn_k_norm;  // [head_dim]: qk_norm
  std::vector<float> post_attention_norm;       // [hidden]: post_norms
  std::vector<float> post_ffw_norm;             // [hidden]: post_norms
  QuantMatrix ffn_gate;                         // [intermediate, hidden]
  QuantMatrix ffn_up;                           // [intermediate, hidden]
  QuantMatrix ffn_down;                         // [hidden, intermediate]
};

DecoderProbe g_probe = nullptr;

inline void Probe(const char* name, int64_t layer, const float* data, int64_t n) {
  if (g_probe) g_probe(name, layer, data, n);
}

void AddBias(float* rows, const std::vector<float>& bias, int64_t n_rows) {
  if (bias.empty()) return;
  const int64_t w = static_cast<int64_t>(bias.size());
  for (int64_t r = 0; r < n_rows; ++r) AddInPlace(rows + r * w, bias.data(), w);
}

class KernelDecoder : public Decoder {
 public:
  KernelDecoder(const ModelConfig& c, int64_t begin, int64_t end) : Decoder(c, begin, end) {}
  KvCacheShape cache_shape() const override {
    return KvCacheShape{begin_layer(), end_layer(), config().n_kv_heads, config().head_dim};
  }
  std::string Describe() const override { return "kernels (cpu)"; }
  Status Forward(HiddenState& hidden, const std::vector<SessionRows>& batch) override;

  int threads = 1;
  WeightArena weights;  // the blocks' matrices, in 2 MB pages where granted
  std::vector<Block> blocks;
  std::unique_ptr<Rope> rope;
  std::unique_ptr<Rope> rope_sliding;  // sliding-window layers' own RoPE base, when the family has them
  // Scratch reused across calls (grown as needed).
  std::vector<float> xn, q, k, v, att, proj, gate, up, angles, angles_sliding;
  std::vector<AttentionRows> attention_rows;  // one layer's, one per session
};

}  // namespace

void SetDecoderProbe(DecoderProbe probe) { g_probe = probe; }

Result<std::unique_ptr<Decoder>> LoadKernelDecoder(const ModelSource& source, int64_t begin, int64_t end,
                                                   const ModelOptions& options) {
  const ModelConfig& c = source.config();
  auto impl = std::make_unique<KernelDecoder>(c, begin, end);
  impl->threads = ResolveThreads(options);
  const int64_t H = c.hidden, Dq = c.n_heads * c.head_dim, Dkv = c.n_kv_heads * c.head_dim, I = c.intermediate;
  for (int64_t l = begin; l < end; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    Block b;
    TROUPE_ASSIGN_OR_RETURN(b.attn_norm, LoadVector(source, p + "attn_norm.weight", H));
    TROUPE_ASSIGN_OR_RETURN(b.attn_q, LoadMatrix(source, p + "attn_q.weight", Dq, H, &impl->weights));
    TROUPE_ASSIGN_OR_RETURN(b.attn_k, LoadMatrix(source, p + "attn_k.weight", Dkv, H, &impl->weights));
    TROUPE_ASSIGN_OR_RETURN(b.attn_v, LoadMatrix(source, p + "attn_v.weight", Dkv, H, &impl->weights));
    if (c.qkv_bias) {
      TROUPE_ASSIGN_OR_RETURN(b.bq, LoadVector(source, p + "attn_q.bias", Dq));
      TROUPE_ASSIGN_OR_RETURN(b.bk, LoadVector(source, p + "attn_k.bias", Dkv));
      TROUPE_ASSIGN_OR_RETURN(b.bv, LoadVector(source, p + "attn_v.bias", Dkv));
    }
    TROUPE_ASSIGN_OR_RETURN(b.attn_output, LoadMatrix(source, p + "attn_output.weight", H, Dq, &impl->weights));
    TROUPE_ASSIGN_OR_RETURN(b.ffn_norm, LoadVector(source, p + "ffn_norm.weight", H));
    if (c.qk_norm) {
      TROUPE_ASSIGN_OR_RETURN(b.attn_q_norm, LoadVector(source, p + "attn_q_norm.weight", c.head_dim));
      TROUPE_ASSIGN_OR_RETURN(b.attn_k_norm, LoadVector(source, p + "attn_k_norm.weight", c.head_dim));
    }
    if (c.post_norms) {
      TROUPE_ASSIGN_OR_RETURN(b.post_attention_norm, LoadVector(source, p + "post_attention_norm.weight", H));
      TROUPE_ASSIGN_OR_RETURN(b.post_ffw_norm, LoadVector(source, p + "post_ffw_norm.weight", H));
    }
    TROUPE_ASSIGN_OR_RETURN(b.ffn_gate, LoadMatrix(source, p + "ffn_gate.weight", I, H, &impl->weights));
    TROUPE_ASSIGN_OR_RETURN(b.ffn_up, LoadMatrix(source, p + "ffn_up.weight", I, H, &impl->weights));
    TROUPE_ASSIGN_OR_RETURN(b.ffn_down, LoadMatrix(source, p + "ffn_down.weight", H, I, &impl->weights));
    impl->blocks.push_back(std::move(b));
    if (options.progress) options.progress(static_cast<double>(l - begin + 1) / (end - begin));
  }
  std::vector<float> freq_factors;
  if (source.Find("rope_freqs.weight")) {
    TROUPE_ASSIGN_OR_RETURN(freq_factors, LoadVector(source, "rope_freqs.weight", c.head_dim / 2));
  }
  if (!c.sliding_layers.empty()) {
    ModelConfig sliding = c;
    sliding.rope_theta = c.rope_theta_sliding;
    sliding.rope_scaling = RopeScaling{};  // llama.cpp: freq_scale_train_swa = 1
    impl->rope_sliding = std::make_unique<Rope>(sliding, freq_factors);
  }
  impl->rope = std::make_unique<Rope>(c, std::move(freq_factors));
  return std::unique_ptr<Decoder>(std::move(impl));
}

Status KernelDecoder::Forward(HiddenState& hidden, const std::vector<SessionRows>& batch) {
  KernelDecoder& m = *this;
  const ModelConfig& c = config();
  const int64_t H = c.hidden, hd = c.head_dim, Dq = c.n_heads * hd, Dkv = c.n_kv_heads * hd, I = c.intermediate;
  TROUPE_ASSIGN_OR_RETURN(const int64_t N, CheckBatch(hidden, batch));
  float* x = hidden.data_ptr<float>();
  m.xn.resize(N * H);
  m.q.resize(N * Dq);
  m.k.resize(N * Dkv);
  m.v.resize(N * Dkv);
  m.att.resize(N * Dq);
  m.proj.resize(N * H);
  m.gate.resize(N * I);
  m.up.resize(N * I);
  // cos/sin per row, shared by every layer (sliding layers have their own).
  m.angles.resize(N * hd);
  if (m.rope_sliding) m.angles_sliding.resize(N * hd);
  for (const SessionRows& sr : batch) sr.cache->ZeroAhead(sr.n_tokens);
  {
    int64_t r = 0;
    for (const SessionRows& sr : batch)
      for (int64_t i = 0; i < sr.n_tokens; ++i, ++r) {
        m.rope->Angles(sr.cache->length() + i, &m.angles[r * hd]);
        if (m.rope_sliding) m.rope_sliding->Angles(sr.cache->length() + i, &m.angles_sliding[r * hd]);
      }
  }
  AttentionShape ashape{c.n_heads, c.n_kv_heads, hd, 0};
  if (c.query_scale != 0) ashape.scale = 1.0f;  // q is scaled before, as llama.cpp does for Gemma
  for (int64_t l = begin_layer(); l < end_layer(); ++l) {
    const Block& b = m.blocks[l - begin_layer()];
    const bool sliding = c.IsSliding(l);
    const Rope& rope = sliding ? *m.rope_sliding : *m.rope;
    const std::vector<float>& angles = sliding ? m.angles_sliding : m.angles;
    // Attention.
    RmsNorm(x, b.attn_norm.data(), N, H, c.rms_eps, m.xn.data());
    Probe("attn_norm", l, m.xn.data(), N * H);
    const MatmulOutput qkv[] = {{&b.attn_q, m.q.data()}, {&b.attn_k, m.k.data()}, {&b.attn_v, m.v.data()}};
    MultiplyShared(qkv, 3, m.xn.data(), N, m.threads);
    AddBias(m.q.data(), b.bq, N);
    AddBias(m.k.data(), b.bk, N);
    AddBias(m.v.data(), b.bv, N);
    Probe("Qcur", l, m.q.data(), N * Dq);
    Probe("Kcur", l, m.k.data(), N * Dkv);
    Probe("Vcur", l, m.v.data(), N * Dkv);
    if (c.qk_norm) {  // RMSNorm over each head's head_dim values
      RmsNorm(m.q.data(), b.attn_q_norm.data(), N * c.n_heads, hd, c.rms_eps, m.q.data());
      RmsNorm(m.k.data(), b.attn_k_norm.data(), N * c.n_kv_heads, hd, c.rms_eps, m.k.data());
      Probe("Qcur_normed", l, m.q.data(), N * Dq);
      Probe("Kcur_normed", l, m.k.data(), N * Dkv);
    }
    int64_t r0 = 0;
    m.attention_rows.clear();
    for (const SessionRows& sr : batch) {
      KvCache& cache = *sr.cache;
      const int64_t start = cache.length();
      for (int64_t i = 0; i < sr.n_tokens; ++i) {
        const int64_t r = r0 + i;
        rope.Apply(&m.q[r * Dq], c.n_heads, &angles[r * hd]);
        rope.Apply(&m.k[r * Dkv], c.n_kv_heads, &angles[r * hd]);
        for (int64_t g = 0; g < c.n_kv_heads; ++g) {
          ToHalf(&m.k[r * Dkv + g * hd], cache.keys(l, g) + (start + i) * hd, hd);
          ToHalf(&m.v[r * Dkv + g * hd], cache.values(l, g) + (start + i) * hd, hd);
        }
      }
      Probe("Qrope", l, &m.q[r0 * Dq], sr.n_tokens * Dq);
      Probe("Krope", l, &m.k[r0 * Dkv], sr.n_tokens * Dkv);
      if (c.query_scale != 0)  // llama.cpp's ggml_scale of Gemma's q, after RoPE
        for (int64_t e = r0 * Dq; e < (r0 + sr.n_tokens) * Dq; ++e) m.q[e] *= c.query_scale;
      m.attention_rows.push_back({&m.q[r0 * Dq], cache.keys(l, 0), cache.values(l, 0), cache.max_length() * hd, start,
                                  sr.n_tokens, &m.att[r0 * Dq]});
      r0 += sr.n_tokens;
    }
    AttentionShape as = ashape;
    if (sliding) as.window = c.sliding_window;
    AttentionBatch(as, m.attention_rows.data(), static_cast<int>(m.attention_rows.size()), m.threads);
    Probe("kqv", l, m.att.data(), N * Dq);
    b.attn_output.Multiply(m.att.data(), N, m.proj.data(), m.threads);
    Probe("kqv_out", l, m.proj.data(), N * H);
    if (c.post_norms) {
      RmsNorm(m.proj.data(), b.post_attention_norm.data(), N, H, c.rms_eps, m.proj.data());
      Probe("attn_post_norm", l, m.proj.data(), N * H);
    }
    AddInPlace(x, m.proj.data(), N * H);
    Probe("ffn_inp", l, x, N * H);
    // Feed-forward (SwiGLU).
    RmsNorm(x, b.ffn_norm.data(), N, H, c.rms_eps, m.xn.data());
    Probe("ffn_norm", l, m.xn.data(), N * H);
    const MatmulOutput gate_up[] = {{&b.ffn_gate, m.gate.data()}, {&b.ffn_up, m.up.data()}};
    MultiplyShared(gate_up, 2, m.xn.data(), N, m.threads);
    Probe("ffn_gate", l, m.gate.data(), N * I);
    Probe("ffn_up", l, m.up.data(), N * I);
    if (c.activation == Activation::kGeluTanh) {
      for (int64_t r = 0; r < N; ++r) GeluMul(&m.gate[r * I], &m.up[r * I], I);
      Probe("ffn_geglu", l, m.gate.data(), N * I);
    } else {
      for (int64_t r = 0; r < N; ++r) SiluMul(&m.gate[r * I], &m.up[r * I], I);
      Probe("ffn_swiglu", l, m.gate.data(), N * I);
    }
    b.ffn_down.Multiply(m.gate.data(), N, m.proj.data(), m.threads);
    Probe("ffn_out", l, m.proj.data(), N * H);
    if (c.post_norms) {
      RmsNorm(m.proj.data(), b.post_ffw_norm.data(), N, H, c.rms_eps, m.proj.data());
      Probe("ffn_post_norm", l, m.proj.data(), N * H);
    }
    AddInPlace(x, m.proj.data(), N * H);
    Probe("l_out", l, x, N * H);
  }
  for (const SessionRows& sr : batch) sr.cache->Commit(sr.n_tokens);
  return Status::Ok();
}

}  // namespace troupe
