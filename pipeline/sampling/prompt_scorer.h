// PromptScorer: the logprobs of a prompt's own tokens — each token's
// log-probability given the tokens before it and the most likely tokens at
// its position (logprobs.h), from the logits of every prompt position, which
// may arrive in chunks (rows of positions [first, first + n), in order).
// What OpenAI's `echo` with `logprobs` returns and lm-evaluation-harness's
// log-likelihood tasks read. The first prompt token has no logprob.
//
// Plain bookkeeping over logit rows; no torch. Thread-safety: one session.
#pragma once

#include <cstdint>
#include <vector>

#include "pipeline/sampling/logprobs.h"
#include "pipeline/status.h"

namespace troupe {

class PromptScorer {
 public:
  PromptScorer(std::vector<int32_t> prompt, int32_t top_n) : prompt_(std::move(prompt)), top_n_(top_n) {}

  // Rows `rows` [n, vocab] of logits for positions [first, first + n).
  // Positions before the last prompt token score the token after them; the
  // last prompt position (whose row is the first answer token's) is skipped.
  // InvalidArgument when `first` is not the next position expected.
  Status Add(int64_t first, const float* rows, int64_t n, int64_t vocab);

  // Every position but the last has been scored.
  bool done() const { return next_ + 1 >= static_cast<int64_t>(prompt_.size()); }
  // scored()[i] is prompt token i + 1's.
  const std::vector<TokenLogprobs>& scored() const { return scored_; }
  const std::vector<int32_t>& prompt() const { return prompt_; }
  // Starts over (a replay computes every row again).
  void Reset() {
    scored_.clear();
    next_ = 0;
  }

 private:
  std::vector<int32_t> prompt_;
  int32_t top_n_;
  int64_t next_ = 0;  // the next position expected
  std::vector<TokenLogprobs> scored_;
};

}  // namespace troupe
