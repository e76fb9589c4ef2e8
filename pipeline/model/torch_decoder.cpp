// The torch Decoder (decoder.h): the same Llama block as the kernels, in
// libtorch ops on any device.
//
//   x (fp32, the residual stream, on the device)
//   x += Wo · Attention(RoPE(q), RoPE(k), v),  [q k v] = Wqkv · RmsNorm(x)
//   x += Wdown · (silu(g) ⊙ u),                 [g u]   = Wgu · RmsNorm(x)
//
// Weights are expanded from the file's blocks to the compute dtype once, at
// load, with q/k/v and gate/up fused into one matrix each (one product
// apiece; torch_weights.h says what each dtype computes).
// Norms, RoPE and the residual stream stay fp32; products run in the dtype;
// keys and values are cached in the dtype on the device
// (KvCache::storage()). RoPE angles come from the same Rope as the kernels'.
// Attention runs per session against its cache: through
// at::scaled_dot_product_attention (GQA, causal mask offset by the cache
// length) where libtorch has it (>= 2.5), else (Debian's libtorch 1.13) as
// fp32 matmul + softmax with an explicit mask.
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <string>

#include "pipeline/model/decoder_backends.h"
#include "pipeline/model/rope.h"
#include "pipeline/model/torch_weights.h"
#include "pipeline/model/weights.h"

#if __has_include(<ATen/ops/scaled_dot_product_attention.h>) && __has_include(<torch/headeronly/version.h>)
#define TROUPE_TORCH_SDPA 1
#else
#define TROUPE_TORCH_SDPA 0
#endif

namespace troupe {

namespace {

struct TorchBlock {
  at::Tensor attn_norm;  // [hidden] fp32
  TorchLinear qkv;       // [Dq + 2 Dkv, hidden]: q, k, v fused
  TorchLinear wo;        // [hidden, Dq]
  at::Tensor ffn_norm;   // [hidden] fp32
  TorchLinear gu;        // [2 intermediate, hidden]: gate, up fused
  TorchLinear down;      // [hidden, intermediate]
};

KvDtype KvDtypeOf(c10::ScalarType t) {
  return t == c10::kBFloat16 ? KvDtype::kBF16 : t == c10::kHalf ? KvDtype::kF16 : KvDtype::kF32;
}

class TorchDecoder : public Decoder {
 public:
  TorchDecoder(const ModelConfig& c, int64_t begin, int64_t end, ResolvedBackend backend)
      : Decoder(c, begin, end), backend_(std::move(backend)), place_(PlacementOf(backend_)) {}

  KvCacheShape cache_shape() const override {
    KvCacheShape s{begin_layer(), end_layer(), config().n_kv_heads, config().head_dim};
    s.dtype = KvDtypeOf(place_.dtype);
    s.device = backend_.device;
    s.layout = KvLayout::kPositionMajor;
    return s;
  }
  std::string Describe() const override { return backend_.Describe(); }

  Status Load(const ModelSource& source, const ModelOptions& options) {
    const ModelConfig& c = config();
    const int64_t H = c.hidden, Dq = c.n_heads * c.head_dim, Dkv = c.n_kv_heads * c.head_dim, I = c.intermediate;
    const c10::Device dev = place_.device;
    for (int64_t l = begin_layer(); l < end_layer(); ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      TorchBlock b;
      TROUPE_ASSIGN_OR_RETURN(b.attn_norm, LoadTorchTensor(source, p + "attn_norm.weight", {H}, dev, at::kFloat));
      std::vector<std::string> biases;
      if (c.qkv_bias) biases = {p + "attn_q.bias", p + "attn_k.bias", p + "attn_v.bias"};
      TROUPE_ASSIGN_OR_RETURN(b.qkv,
                              LoadTorchLinear(source, {p + "attn_q.weight", p + "attn_k.weight", p + "attn_v.weight"},
                                              {Dq, Dkv, Dkv}, H, biases, place_));
      TROUPE_ASSIGN_OR_RETURN(b.wo, LoadTorchLinear(source, {p + "attn_output.weight"}, {H}, Dq, {}, place_));
      TROUPE_ASSIGN_OR_RETURN(b.ffn_norm, LoadTorchTensor(source, p + "ffn_norm.weight", {H}, dev, at::kFloat));
      TROUPE_ASSIGN_OR_RETURN(
          b.gu, LoadTorchLinear(source, {p + "ffn_gate.weight", p + "ffn_up.weight"}, {I, I}, H, {}, place_));
      TROUPE_ASSIGN_OR_RETURN(b.down, LoadTorchLinear(source, {p + "ffn_down.weight"}, {H}, I, {}, place_));
      blocks_.push_back(std::move(b));
      if (options.progress)
        options.progress(static_cast<double>(l - begin_layer() + 1) / (end_layer() - begin_layer()));
    }
    std::vector<float> freq_factors;
    if (source.Find("rope_freqs.weight")) {
      TROUPE_ASSIGN_OR_RETURN(freq_factors, LoadVector(source, "rope_freqs.weight", c.head_dim / 2));
    }
    rope_ = std::make_unique<Rope>(c, std::move(freq_factors));
    return Status::Ok();
  }

  Status Forward(HiddenState& hidden, const std::vector<SessionRows>& batch) override {
    TROUPE_ASSIGN_OR_RETURN(const int64_t n, CheckBatch(hidden, batch));
    return TorchGuard("torch forward on " + backend_.device, [&]() -> Status {
      c10::InferenceMode inference;
      at::Tensor x = hidden.to(place_.device);  // fp32; the same tensor on the CPU
      const auto [cos, sin] = Angles(batch, n);
      for (int64_t l = begin_layer(); l < end_layer(); ++l) Layer(l, x, cos, sin, batch);
      if (!x.is_same(hidden)) hidden.copy_(x);
      for (const SessionRows& sr : batch) sr.cache->Commit(sr.n_tokens);
      return Status::Ok();
    });
  }

 private:
  // cos and sin of every row's position: [n, 1, head_dim / 2] fp32 on the device.
  std::pair<at::Tensor, at::Tensor> Angles(const std::vector<SessionRows>& batch, int64_t n) const {
    const int64_t hd = config().head_dim;
    at::Tensor host = at::empty({n, hd}, at::kFloat);
    float* a = host.data_ptr<float>();
    int64_t r = 0;
    for (const SessionRows& sr : batch)
      for (int64_t i = 0; i < sr.n_tokens; ++i, ++r) rope_->Angles(sr.cache->length() + i, a + r * hd);
    at::Tensor dev = host.to(place_.device).view({n, 1, hd});
    return {dev.narrow(2, 0, hd / 2), dev.narrow(2, hd / 2, hd / 2)};
  }

  // Rotates x [n, heads, head_dim] fp32 by the angles, in the model's pairing.
  at::Tensor Rotate(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) const {
    const int64_t hd = config().head_dim;
    if (config().rope_style == RopeStyle::kAdjacentPairs) {
      at::Tensor pairs = x.view({x.size(0), x.size(1), hd / 2, 2});
      at::Tensor x0 = pairs.select(3, 0), x1 = pairs.select(3, 1);
      return at::stack({x0 * cos - x1 * sin, x0 * sin + x1 * cos}, 3).view_as(x);
    }
    at::Tensor x0 = x.narrow(2, 0, hd / 2), x1 = x.narrow(2, hd / 2, hd / 2);
    return at::cat({x0 * cos - x1 * sin, x1 * cos + x0 * sin}, 2);
  }

  // Causal attention of one session's t new rows at [start, start + t):
  // q [t, n_heads, hd], keys/values [start + t, n_kv, hd] (the cache's
  // positions so far), in the dtype. Returns [n_heads, t, hd].
  at::Tensor Attend(const at::Tensor& q, const at::Tensor& keys, const at::Tensor& values, int64_t start) const {
    const ModelConfig& c = config();
    const int64_t t = q.size(0), s = start + t, group = c.n_heads / c.n_kv_heads;
    at::Tensor k = keys.transpose(0, 1), v = values.transpose(0, 1);  // [n_kv, s, hd]
#if TROUPE_TORCH_SDPA
    if (t == 1) {
      // A decode step sees every cached position: each kv head's `group`
      // query heads are its query rows, so plain attention (no GQA, no mask)
      // does it in one fused kernel.
      at::Tensor qg = q.view({c.n_kv_heads, group, c.head_dim}).unsqueeze(0);
      return at::scaled_dot_product_attention(qg, k.unsqueeze(0), v.unsqueeze(0)).reshape({c.n_heads, 1, c.head_dim});
    }
#endif
    at::Tensor mask;  // [t, s], true = attend; undefined when causal from position 0
    if (start > 0) {
      at::Tensor rows = at::arange(start, s, at::TensorOptions().dtype(at::kLong).device(q.device())).unsqueeze(1);
      at::Tensor cols = at::arange(0, s, at::TensorOptions().dtype(at::kLong).device(q.device())).unsqueeze(0);
      mask = cols <= rows;
    }
    at::Tensor qh = q.transpose(0, 1);  // [n_heads, t, hd]
#if TROUPE_TORCH_SDPA
    return at::scaled_dot_product_attention(qh.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0),
                                            mask.defined() ? std::optional<at::Tensor>(mask) : std::nullopt, 0.0,
                                            /*is_causal=*/start == 0 && t > 1, std::nullopt,
                                            /*enable_gqa=*/group > 1)
        .squeeze(0);
#else
    // fp32 scores and softmax; each kv head serves `group` query heads, as
    // rows [n_kv, group * t, hd].
    at::Tensor kf = k.to(at::kFloat), vf = v.to(at::kFloat);
    at::Tensor scores =
        at::matmul(qh.to(at::kFloat).reshape({c.n_kv_heads, group * t, c.head_dim}), kf.transpose(1, 2)) /
        std::sqrt(static_cast<double>(c.head_dim));  // [n_kv, group * t, s]
    if (t > 1) {
      if (!mask.defined()) mask = at::ones({t, s}, at::TensorOptions().dtype(at::kBool).device(q.device())).tril();
      scores = scores.view({c.n_kv_heads, group, t, s})
                   .masked_fill(mask.logical_not(), -std::numeric_limits<float>::infinity())
                   .view({c.n_kv_heads, group * t, s});
    }
    return at::matmul(at::softmax(scores, -1), vf).view({c.n_heads, t, c.head_dim}).to(q.scalar_type());
#endif
  }

  void Layer(int64_t l, at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
             const std::vector<SessionRows>& batch) const {
    const ModelConfig& c = config();
    const TorchBlock& b = blocks_[l - begin_layer()];
    const int64_t n = x.size(0), hd = c.head_dim, Dq = c.n_heads * hd, Dkv = c.n_kv_heads * hd;
    const c10::ScalarType dt = place_.dtype;
    // Attention.
    at::Tensor qkv = b.qkv(TorchRmsNorm(x, b.attn_norm, c.rms_eps));
    at::Tensor q = Rotate(qkv.narrow(1, 0, Dq).to(at::kFloat).reshape({n, c.n_heads, hd}), cos, sin).to(dt);
    at::Tensor k = Rotate(qkv.narrow(1, Dq, Dkv).to(at::kFloat).reshape({n, c.n_kv_heads, hd}), cos, sin).to(dt);
    at::Tensor v = qkv.narrow(1, Dq + Dkv, Dkv).reshape({n, c.n_kv_heads, hd}).contiguous();
    // Every session's new keys and values into its cache (position-major:
    // one dense [t, n_kv, hd] block each), in one multi-tensor copy.
    std::vector<at::Tensor> to, from, layers;
    int64_t r0 = 0;
    for (const SessionRows& sr : batch) {
      const int64_t t = sr.n_tokens, start = sr.cache->length();
      layers.push_back(sr.cache->storage().select(0, l - begin_layer()));  // [2, max_length, n_kv, hd]
      to.push_back(layers.back().select(0, 0).narrow(0, start, t));
      to.push_back(layers.back().select(0, 1).narrow(0, start, t));
      from.push_back(k.narrow(0, r0, t));
      from.push_back(v.narrow(0, r0, t));
      r0 += t;
    }
#if TROUPE_TORCH_SDPA
    at::_foreach_copy_(to, from);
#else
    for (size_t i = 0; i < to.size(); ++i) to[i].copy_(from[i]);
#endif
    std::vector<at::Tensor> att;  // [n_heads, t, hd] per session
    r0 = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      const int64_t t = batch[i].n_tokens, start = batch[i].cache->length();
      att.push_back(Attend(q.narrow(0, r0, t), layers[i].select(0, 0).narrow(0, 0, start + t),
                           layers[i].select(0, 1).narrow(0, 0, start + t), start));
      r0 += t;
    }
    at::Tensor attn = (att.size() == 1 ? att[0] : at::cat(att, 1)).transpose(0, 1).reshape({n, Dq});
    x.add_(b.wo(attn).to(at::kFloat));
    // Feed-forward (SwiGLU).
    at::Tensor gu = b.gu(TorchRmsNorm(x, b.ffn_norm, c.rms_eps));
    at::Tensor h = at::silu(gu.narrow(1, 0, c.intermediate)) * gu.narrow(1, c.intermediate, c.intermediate);
    x.add_(b.down(h).to(at::kFloat));
  }

  ResolvedBackend backend_;
  TorchPlacement place_;
  std::vector<TorchBlock> blocks_;
  std::unique_ptr<Rope> rope_;
};

}  // namespace

Result<std::unique_ptr<Decoder>> LoadTorchDecoder(const ModelSource& source, int64_t begin, int64_t end,
                                                  const ModelOptions& options, const ResolvedBackend& backend) {
  const ModelConfig& c = source.config();
  if (c.activation != Activation::kSilu || c.qk_norm || c.post_norms || c.query_scale != 0 || !c.sliding_layers.empty())
    return Status::Unsupported(source.path() + ": the torch backend runs Llama-family blocks only, not " +
                               c.architecture + "'s; use the kernels backend (device cpu)");
  auto d = std::make_unique<TorchDecoder>(source.config(), begin, end, backend);
  TROUPE_RETURN_IF_ERROR(d->Load(source, options));
  return std::unique_ptr<Decoder>(std::move(d));
}

}  // namespace troupe
