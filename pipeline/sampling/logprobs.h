// Logprobs: the model's log-probability of a sampled token and of the most
// likely tokens at its position — log_softmax over the raw logits, before any
// penalty, temperature or truncation of the sampling chain, which is what
// OpenAI's `logprobs` and llama.cpp's reference logits report.
//
// Pure function over one row of logits, computed in double; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace troupe {

struct TokenLogprob {
  int32_t id = -1;
  float logprob = 0.0f;
};

struct TokenLogprobs {
  float logprob = 0.0f;           // of the sampled token
  std::vector<TokenLogprob> top;  // the `top_n` most likely, most likely first (ties: lower id first)
};

// Logprobs of `chosen` and the `top_n` most likely ids (top_n clamped to
// [0, vocab]) over `logits` [vocab]. Precondition: vocab > 0, chosen in range.
TokenLogprobs ComputeLogprobs(const float* logits, int64_t vocab, int32_t chosen, int32_t top_n);

}  // namespace troupe
