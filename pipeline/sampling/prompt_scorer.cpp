#include "pipeline/sampling/prompt_scorer.h"

#include <string>

namespace troupe {

Status PromptScorer::Add(int64_t first, const float* rows, int64_t n, int64_t vocab) {
  if (first != next_) {
    return Status::InvalidArgument("prompt logits for position " + std::to_string(first) + ", expected " +
                                   std::to_string(next_));
  }
  const int64_t last = static_cast<int64_t>(prompt_.size()) - 1;
  for (int64_t r = 0; r < n; ++r) {
    const int64_t position = first + r;
    if (position >= last) break;  // the answer's row, not the prompt's
    const int32_t next_token = prompt_[static_cast<size_t>(position + 1)];
    if (next_token < 0 || next_token >= vocab)
      return Status::InvalidArgument("a prompt token is outside the vocabulary");
    scored_.push_back(ComputeLogprobs(rows + r * vocab, vocab, next_token, top_n_));
  }
  next_ = first + n;
  return Status::Ok();
}

}  // namespace troupe
