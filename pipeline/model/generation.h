// Generation: the per-session bookkeeping of producing an answer — what the
// Sampler stage does with each row of logits. Samples the next token, keeps
// the session's tokens (prompt + generated), turns tokens into printable text
// (whole UTF-8 characters, stop strings held back and cut off) and decides
// when the answer is finished: an eos token, a stop string, or
// max_tokens.
//
// Pure bookkeeping: no model, no torch; the same object drives the single
// process engine and the Sampler actor. Randomness is a pure function of
// (seed, step), so replaying a session yields the same tokens.
// Ownership: borrows the Tokenizer. Thread-safety: one session, one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/sampling/finish_reason.h"
#include "pipeline/sampling/logprobs.h"
#include "pipeline/sampling/sampler.h"
#include "pipeline/sampling/stop_matcher.h"
#include "pipeline/text/stream_decoder.h"
#include "pipeline/text/tokenizer.h"

namespace troupe {

// One sampled token. `text` is what became printable with it (may be empty:
// an incomplete character or a possible stop string is held back). A token
// that ends generation by being an eos id is reported with
// `eos` set and only the flushed remainder as text.
struct TokenEvent {
  int32_t id = -1;
  std::string text;
  std::optional<TokenLogprobs> logprobs;  // when params.top_logprobs >= 0
  bool eos = false;
  FinishReason finish = FinishReason::kNone;  // set on the last event
};

class Generation {
 public:
  // InvalidArgument when params do not validate or the prompt is empty.
  static Result<Generation> Create(const Tokenizer& tokenizer, SamplingParams params, std::vector<int32_t> prompt);

  // Samples from `logits` ([vocab] fp32 for the next position) and records it.
  //
  // Contrastive decoding (params().contrastive): `amateur` is the amateur
  // model's [vocab] row for the same position (its logits after the same
  // tokens()). The two rows are combined by ContrastiveLogits
  // (pipeline/sampling/contrastive.h) and the result, not `logits`, enters the
  // Sampler's chain (logit bias, penalties, eos mask, greedy or sampling);
  // logprobs still report `logits`, the expert's own distribution. While
  // fewer than params().min_tokens tokens are generated the eos ids are
  // masked in the expert row before the combination (so the plausible set is
  // drawn from the other tokens and min_tokens holds). A caller
  // must pass `amateur` when params().contrastive is set (asserted; a release
  // build given nullptr samples `logits` alone) and may pass nullptr
  // otherwise (`amateur` is then ignored).
  TokenEvent Next(const float* logits, int64_t vocab, const float* amateur = nullptr);

  bool finished() const { return finish_ != FinishReason::kNone; }
  FinishReason finish_reason() const { return finish_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }  // prompt + generated
  int64_t prompt_tokens() const { return prompt_tokens_; }
  int64_t generated_tokens() const { return static_cast<int64_t>(tokens_.size()) - prompt_tokens_; }
  const SamplingParams& params() const { return sampler_.params(); }
  bool contrastive() const { return sampler_.params().contrastive; }

 private:
  Generation(const Tokenizer& tokenizer, Sampler sampler, std::vector<int32_t> prompt);
  // Sets the eos ids of expert_ to -inf unless nothing else is possible;
  // false when it left the row alone.
  bool MaskEos(int64_t vocab);
  const Tokenizer* tokenizer_;
  Sampler sampler_;
  StreamDecoder stream_;
  StopMatcher stop_;
  std::vector<int32_t> tokens_;
  std::vector<float> contrastive_;  // scratch: [vocab] contrastive logits
  std::vector<float> expert_;       // scratch: [vocab] expert logits with eos masked
  int64_t prompt_tokens_;
  FinishReason finish_ = FinishReason::kNone;
};

}  // namespace troupe
