// Engine: the whole model in one process — Embedding, every layer in one
// Decoder, LmHead — plus the tokenizer. What `troupe generate`, `troupe score`
// and the conformance tests run; the reference the distributed ring must
// reproduce token for token.
//
// Flow: Load → [LoadAmateur] → (Tokenize / Tokenizer) → Generate(prompt ids,
// params, callback), GenerateBeams(prompt ids, params) for beam search, or
// Score(ids). Thread-safety: one call at a time per Engine.
//
// Contrastive decoding (params.contrastive): the amateur model loaded by
// LoadAmateur runs beside the expert with its own KvCache for the call — the
// prompt as a prefill, then every sampled token — and its logits row joins
// the expert's in Generation::Next (pipeline/sampling/contrastive.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/format/model_source.h"
#include "pipeline/model/generation.h"
#include "pipeline/model/model_options.h"
#include "pipeline/sampling/beam_search.h"
#include "pipeline/status.h"
#include "pipeline/text/tokenizer.h"

namespace troupe {

class Embedding;
class Decoder;
class LmHead;
class AmateurModel;

struct GenerateStats {
  int64_t prompt_tokens = 0;     // the whole context before generating
  int64_t cached_tokens = 0;     // of them, reused from a cache rather than prefilled
  int64_t generated_tokens = 0;  // tokens of the answer (an eos token is not counted)
  int64_t decode_steps = 0;      // forward passes after the prefill
  double prefill_seconds = 0;    // prompt through the model to the first logits
  double decode_seconds = 0;     // every later step
  FinishReason finish = FinishReason::kNone;
};

struct ScoreResult {
  std::vector<int32_t> tokens;
  std::vector<int32_t> argmax;  // [n]: argmax[i] is the most likely token after tokens[0..i]
  std::vector<float> logprobs;  // [n-1]: logprobs[i]: log p(tokens[i+1] | tokens[0..i])
};

// What GenerateBeams returns: the best num_return_sequences sequences, best
// first; stats describe the best one (generated_tokens, finish) and the run.
struct BeamGenerateResult {
  GenerateStats stats;
  std::vector<BeamHypothesis> sequences;
  int64_t cache_copies = 0;  // beam rows whose KV cache was refilled from another's
};

class Engine {
 public:
  // `path`: a GGUF file or Hugging Face folder.
  static Result<std::unique_ptr<Engine>> Load(const std::string& path, const ModelOptions& options);
  ~Engine();

  const ModelConfig& config() const;
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const ModelSource& source() const { return *source_; }

  // Loads the amateur model of contrastive decoding (see AmateurModel::Load:
  // InvalidArgument naming both models when the vocabularies differ). Replaces
  // any amateur loaded before.
  Status LoadAmateur(const std::string& path, const ModelOptions& options);
  const AmateurModel* amateur() const { return amateur_.get(); }

  // Runs prompt + generation; calls on_token for every sampled token.
  // InvalidArgument for bad params, beam search (GenerateBeams), an empty
  // prompt, or params.contrastive without an amateur loaded; OutOfRange when
  // the prompt does not fit the model's (or the amateur's) context.
  Result<GenerateStats> Generate(const std::vector<int32_t>& prompt, const SamplingParams& params,
                                 const std::function<void(const TokenEvent&)>& on_token);

  // Beam search (params.num_beams >= 1; pipeline/sampling/beam_search.h):
  // the beams are rows of one batch, each with its own KV cache, reordered by
  // parent after every step (ReorderBeamCaches). At most max_tokens new
  // tokens, fewer if the context ends first. Errors as Generate.
  Result<BeamGenerateResult> GenerateBeams(const std::vector<int32_t>& prompt, const SamplingParams& params);

  // Teacher-forced scoring of a token sequence (at least 2 tokens).
  Result<ScoreResult> Score(const std::vector<int32_t>& tokens);

 private:
  Engine() = default;
  std::unique_ptr<ModelSource> source_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<Embedding> embedding_;
  std::unique_ptr<Decoder> decoder_;
  std::unique_ptr<LmHead> lm_head_;
  std::unique_ptr<AmateurModel> amateur_;  // null unless LoadAmateur succeeded
};

}  // namespace troupe
