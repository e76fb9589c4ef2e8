#include "pipeline/model/lm_head.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include "pipeline/model/cpu_ops.h"
#include "pipeline/model/decoder_backends.h"
#include "pipeline/model/output_buffers.h"
#include "pipeline/model/weights.h"
#include "pipeline/quant/qmatrix.h"

namespace troupe {

namespace {

// The quantized-kernel LM head: RmsNorm, then the output matrix in its blocks.
class KernelLmHead : public LmHead {
 public:
  Result<at::Tensor> Forward(const HiddenState& hidden) const override {
    const int64_t H = config_.hidden;
    if (!hidden.defined() || hidden.dim() != 2 || hidden.size(1) != H || hidden.scalar_type() != at::kFloat ||
        !hidden.is_contiguous() || !hidden.is_cpu())
      return Status::InvalidArgument("LM head input must be a contiguous fp32 CPU tensor [rows, " + std::to_string(H) +
                                     "]");
    const int64_t rows = hidden.size(0);
    std::vector<float> xn(rows * H);
    RmsNorm(hidden.data_ptr<float>(), norm_.data(), rows, H, config_.rms_eps, xn.data());
    at::Tensor logits = logits_->Take(rows);
    output_.Multiply(xn.data(), rows, logits.data_ptr<float>(), threads_);
    return logits;
  }
  int64_t vocab() const override { return output_.rows(); }
  std::string Describe() const override { return "kernels (cpu)"; }

  ModelConfig config_;
  int threads_ = 1;
  std::vector<float> norm_;                // [hidden]
  WeightArena weights_;                    // output_'s bytes, in 2 MB pages where granted
  QuantMatrix output_;                     // [vocab, hidden]
  std::unique_ptr<OutputBuffers> logits_;  // [rows, vocab], reused (output_buffers.h)
};

}  // namespace

Result<std::unique_ptr<LmHead>> LoadKernelLmHead(const ModelSource& source, const ModelOptions& options) {
  const ModelConfig& c = source.config();
  auto h = std::make_unique<KernelLmHead>();
  h->config_ = c;
  h->threads_ = ResolveThreads(options);
  TROUPE_ASSIGN_OR_RETURN(h->norm_, LoadVector(source, "output_norm.weight", c.hidden));
  const char* name = c.tied_embeddings ? "token_embd.weight" : "output.weight";
  TROUPE_ASSIGN_OR_RETURN(h->output_, LoadMatrix(source, name, c.vocab, c.hidden, &h->weights_));
  h->logits_ = std::make_unique<OutputBuffers>(h->output_.rows());
  return std::unique_ptr<LmHead>(std::move(h));
}

Result<std::unique_ptr<LmHead>> LmHead::Load(const ModelSource& source, const ModelOptions& options) {
  TROUPE_ASSIGN_OR_RETURN(ResolvedBackend backend, ResolveBackend(options));
  if (backend.backend == Backend::kTorch) return LoadTorchLmHead(source, options, backend);
  return LoadKernelLmHead(source, options);
}

}  // namespace troupe
