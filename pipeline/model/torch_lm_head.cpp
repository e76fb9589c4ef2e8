// The torch LmHead (lm_head.h): fp32 RmsNorm, then the output matrix
// expanded to the compute dtype on the device (torch_weights.h); logits
// come back fp32 CPU.
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "pipeline/model/decoder_backends.h"
#include "pipeline/model/torch_weights.h"

namespace troupe {

namespace {

class TorchLmHead : public LmHead {
 public:
  TorchLmHead(const ModelConfig& c, ResolvedBackend backend)
      : config_(c), backend_(std::move(backend)), place_(PlacementOf(backend_)) {}

  Status Load(const ModelSource& source) {
    TROUPE_ASSIGN_OR_RETURN(norm_,
                            LoadTorchTensor(source, "output_norm.weight", {config_.hidden}, place_.device, at::kFloat));
    const char* name = config_.tied_embeddings ? "token_embd.weight" : "output.weight";
    TROUPE_ASSIGN_OR_RETURN(output_, LoadTorchLinear(source, {name}, {config_.vocab}, config_.hidden, {}, place_));
    return Status::Ok();
  }

  Result<at::Tensor> Forward(const HiddenState& hidden) const override {
    const int64_t H = config_.hidden;
    if (!hidden.defined() || hidden.dim() != 2 || hidden.size(1) != H || hidden.scalar_type() != at::kFloat ||
        !hidden.is_cpu())
      return Status::InvalidArgument("LM head input must be an fp32 CPU tensor [rows, " + std::to_string(H) + "]");
    at::Tensor logits;
    Status st = TorchGuard("torch LM head on " + backend_.device, [&]() -> Status {
      c10::InferenceMode inference;
      at::Tensor x = hidden.to(place_.device);
      logits = output_(TorchRmsNorm(x, norm_, config_.rms_eps)).to(at::kFloat).to(at::kCPU).contiguous();
      return Status::Ok();
    });
    if (!st.ok()) return st;
    return logits;
  }
  int64_t vocab() const override { return config_.vocab; }
  std::string Describe() const override { return backend_.Describe(); }

 private:
  ModelConfig config_;
  ResolvedBackend backend_;
  TorchPlacement place_;
  at::Tensor norm_;     // [hidden] fp32
  TorchLinear output_;  // [vocab, hidden] dtype
};

}  // namespace

Result<std::unique_ptr<LmHead>> LoadTorchLmHead(const ModelSource& source, const ModelOptions& options,
                                                const ResolvedBackend& backend) {
  auto h = std::make_unique<TorchLmHead>(source.config(), backend);
  TROUPE_RETURN_IF_ERROR(h->Load(source));
  return std::unique_ptr<LmHead>(std::move(h));
}

}  // namespace troupe
