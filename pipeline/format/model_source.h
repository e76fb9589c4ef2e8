// ModelSource: one opened model — a GGUF file or a Hugging Face folder — seen
// the same way by everything above: a ModelConfig, a TokenizerSpec and weight
// tensors under GGUF names ("blk.3.attn_q.weight"), with config.rope_style
// telling how q/k rows are laid out.
//
// Ownership: the source owns its file mappings; TensorViews it hands out are
// valid for its lifetime. Thread-safety: immutable after Open.
// Failure: Open names the path and the problem (missing key, bad shape, a
// tensor the config implies but the file lacks, an unsupported architecture).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pipeline/model_config.h"
#include "pipeline/status.h"
#include "pipeline/tensor_view.h"
#include "pipeline/tokenizer_spec.h"

namespace troupe {

class GgufFile;

class ModelSource {
 public:
  // `path` is a .gguf file or a folder with config.json + *.safetensors.
  static Result<std::unique_ptr<ModelSource>> Open(const std::string& path);
  virtual ~ModelSource() = default;

  virtual const std::string& path() const = 0;
  virtual const ModelConfig& config() const = 0;
  virtual const TokenizerSpec& tokenizer_spec() const = 0;
  // nullptr when absent.
  virtual const TensorView* Find(const std::string& name) const = 0;
  // Every tensor's name (GGUF names), in file order.
  virtual std::vector<std::string> tensor_names() const = 0;
  // A short stable identity of the model (architecture, sizes, a hash of the
  // header and a few weight bytes) that SessionOpen and announces carry; the
  // weights of each layer are checked by pipeline/format/weight_digest.h.
  virtual std::string fingerprint() const = 0;

  // Like Find, but NotFound naming the tensor when absent and InvalidArgument
  // when its shape differs from `shape`.
  Result<const TensorView*> Require(const std::string& name, const std::vector<int64_t>& shape) const;
};

// The pieces of a GGUF file, exposed for tests and tools.
Result<ModelConfig> ModelConfigFromGguf(const GgufFile& file);
Result<TokenizerSpec> TokenizerSpecFromGguf(const GgufFile& file);

}  // namespace troupe
