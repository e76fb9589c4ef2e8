// AmateurModel: the second, smaller model of contrastive decoding
// (pipeline/sampling/contrastive.h) — a whole model (embedding, every layer,
// LM head) loaded beside the expert: in `troupe generate`'s Engine, and on a
// cluster's head next to the Sampler. It must share the expert's vocabulary:
// the same number of tokens and the same token bytes, compared by
// VocabularyFingerprint.
//
// Each session that decodes contrastively opens an AmateurSession, which owns
// the amateur's KvCache for that session. The session is driven by the token
// history alone: LogitsAfter(tokens) feeds whatever of `tokens` the cache has
// not seen yet (the prompt as a prefill, then one token per step) and returns
// the amateur's logits for the next position. A replay (failover re-sending
// prompt + answer so far) calls it with the same history and gets the same
// row; a history that diverges from what was fed is re-fed from the first
// differing token. Prefill computes bit for bit what one-token decoding does
// (README), so how the history arrives does not change the logits.
//
// Ownership: AmateurModel owns its ModelSource and weights; an AmateurSession
// borrows the AmateurModel, which must outlive it. Thread-safety: as the
// Decoder's — one Forward at a time per AmateurModel, so every session of one
// model must be driven from one thread (the Engine's caller, or the sampler
// actor).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/format/model_source.h"
#include "pipeline/model/model_options.h"
#include "pipeline/status.h"
#include "pipeline/tokenizer_spec.h"

namespace troupe {

class Embedding;
class Decoder;
class LmHead;
class KvCache;
class AmateurSession;

// A stable hash (hex, 16 digits) of the vocabulary: its size and every
// token's bytes in id order. Two models with the same fingerprint map every
// id to the same token.
std::string VocabularyFingerprint(const TokenizerSpec& spec);

class AmateurModel {
 public:
  // Loads the model at `path` (GGUF file or Hugging Face folder) and checks it
  // against the expert: InvalidArgument naming both models when the
  // vocabulary size (tokenizer or LM head rows) or the token bytes differ;
  // the errors of ModelSource::Open and the layer loaders otherwise.
  static Result<std::unique_ptr<AmateurModel>> Load(const std::string& path, const ModelOptions& options,
                                                    const ModelSource& expert);
  ~AmateurModel();

  const ModelSource& source() const { return *source_; }
  const std::string& path() const { return source_->path(); }
  int64_t vocab() const;

  // A session holding up to `max_length` positions (prompt + answer).
  // OutOfRange when max_length exceeds the amateur's context;
  // ResourceExhausted when the cache cannot be allocated.
  Result<std::unique_ptr<AmateurSession>> OpenSession(int64_t max_length) const;

 private:
  friend class AmateurSession;
  AmateurModel() = default;
  std::unique_ptr<ModelSource> source_;
  std::unique_ptr<Embedding> embedding_;
  std::unique_ptr<Decoder> decoder_;
  std::unique_ptr<LmHead> lm_head_;
};

class AmateurSession {
 public:
  ~AmateurSession();

  // The amateur's logits ([vocab] fp32) for the position after `tokens`
  // (prompt + answer so far, non-empty). The pointer stays valid until the
  // next call. InvalidArgument for an empty history or a token outside the
  // vocabulary; ResourceExhausted when the history outgrows max_length.
  // After an error the session re-feeds from scratch on the next call.
  Result<const float*> LogitsAfter(const std::vector<int32_t>& tokens);

  int64_t length() const { return static_cast<int64_t>(fed_.size()); }  // positions in the cache

 private:
  friend class AmateurModel;
  AmateurSession(const AmateurModel& model, std::unique_ptr<KvCache> cache);
  const AmateurModel* model_;
  std::unique_ptr<KvCache> cache_;
  std::vector<int32_t> fed_;   // the tokens the cache holds, in order
  std::vector<float> logits_;  // [vocab] after fed_ (valid when !fed_.empty())
};

}  // namespace troupe
