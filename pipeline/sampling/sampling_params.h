// SamplingParams: how one session turns logits into tokens, and when it stops.
//
// Plain data, copied freely; safe to share read-only between threads. Every
// "off" value below is the default, so a default-constructed SamplingParams is
// greedy decoding with no filters and no penalty. Validate() names the first
// bad field; a Sampler must only be built from params that validate.
//
// Decisions (documented once, here):
//  * temperature <= 0 means greedy, including negative values (llama.cpp does
//    the same); NaN or infinite temperature is an error.
//  * top_a >= 0, finite (top-a is not in llama.cpp; its definition follows
//    KoboldAI, see candidate_filters.h).
//  * repeat_last_n: 0 disables the penalty, -1 means the whole history
//    (llama.cpp's "context size"); below -1 is an error.
//  * max_tokens is enforced by the session loop, not the Sampler; it must be
//    >= 1. min_tokens > max_tokens is allowed (no eos token is
//    ever sampled and generation ends at max_tokens).
//  * Stop strings are matched on decoded text (StopMatcher); an empty stop
//    string is an error because it would match before any text.
//  * Beam search (num_beams > 1, Hugging Face's `generate` rules, see
//    beam_search.h) is deterministic: it needs temperature <= 0 and refuses
//    every field that only sampling or the Sampler's logit chain reads
//    (top_k, top_p, min_p, top_a, repeat_penalty, presence_penalty,
//    frequency_penalty, no_repeat_ngram_size, logit_bias, stop,
//    top_logprobs), naming it. min_tokens applies (eos gets -inf log-prob
//    before that many tokens, as Hugging Face's min-new-tokens processor).
//    The seed is ignored. num_return_sequences <= num_beams (so 1 without
//    beams); length_penalty and early_stopping are read only with beams.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/sampling/contrastive.h"
#include "pipeline/status.h"

namespace troupe {

// Hugging Face's `early_stopping` of beam search (its three values; the wire
// enum v1::EarlyStopping has the same numbers).
enum class EarlyStopping : int32_t {
  kFalse = 0,  // heuristic: stop when no running beam can beat the worst kept one at today's length
  kTrue = 1,   // stop as soon as num_beams hypotheses are finished
  kNever = 2,  // stop only when no running beam can ever beat it (canonical beam search)
};

// "true", "false", "never".
const char* early_stopping_name(EarlyStopping mode);
// Parses "true" / "false" / "never"; InvalidArgument naming early_stopping otherwise.
Result<EarlyStopping> ParseEarlyStopping(const std::string& text);

struct SamplingParams {
  float temperature = 0.0f;                           // <= 0: greedy (argmax, ties to the lowest id)
  int32_t top_k = 0;                                  // keep the k highest logits; 0 = off
  float top_p = 1.0f;                                 // nucleus, in (0, 1]; 1 = off
  float min_p = 0.0f;                                 // keep p >= min_p * p_max, in [0, 1]; 0 = off
  float top_a = 0.0f;                                 // keep p >= top_a * p_max^2, >= 0; 0 = off
  float repeat_penalty = 1.0f;                        // > 0; 1 = off
  int32_t repeat_last_n = 64;                         // window over prompt + generated; 0 off, -1 all
  float presence_penalty = 0.0f;                      // OpenAI's, over the answer so far, in [-2, 2]; 0 = off
  float frequency_penalty = 0.0f;                     // OpenAI's, over the answer so far, in [-2, 2]; 0 = off
  int32_t no_repeat_ngram_size = 0;                   // Hugging Face's: no n-gram twice in prompt + answer; 0 = off
  std::vector<std::pair<int32_t, float>> logit_bias;  // OpenAI's: (token id, bias in [-100, 100])
  int32_t min_tokens = 0;                             // no eos token before this many
  int32_t max_tokens = 256;                           // new tokens at most (enforced by the caller)
  // Randomness is a pure function of (seed, step). Sessions that should not
  // share draws need distinct seeds: when the client gives none, the
  // scheduler derives one from the session (e.g. Mix64 of its id).
  uint64_t seed = 0;
  std::vector<std::string> stop;  // stop strings, matched on decoded text
  // Report each sampled token's logprob and this many most likely tokens
  // (pipeline/sampling/logprobs.h), 0..20; -1 = no logprobs.
  int32_t top_logprobs = -1;
  // Score the prompt too: each prompt token's logprob given the tokens
  // before it and this many most likely tokens at its position, 0..20
  // (what OpenAI's echo with logprobs returns); -1 = none.
  int32_t prompt_logprobs = -1;
  // Contrastive decoding (pipeline/sampling/contrastive.h): combine the
  // expert's logits with an amateur model's before the rest of the chain.
  // Needs an amateur model where the session runs (a Generation fed without
  // amateur logits refuses to sample); alpha and beta are validated even when
  // off.
  bool contrastive = false;
  float contrastive_alpha = 0.1f;  // keep p_expert >= alpha * max p_expert, in [0, 1]
  float contrastive_beta = 0.5f;   // score = (1+beta) log p_expert - beta log p_amateur, finite, >= 0
  // Beam search (beam_search.h): 1 = off. Hugging Face's generate parameters.
  int32_t num_beams = 1;        // 1..kMaxBeams
  float length_penalty = 1.0f;  // score = sum logprobs / generated_len^length_penalty
  EarlyStopping early_stopping = EarlyStopping::kFalse;
  int32_t num_return_sequences = 1;  // 1..num_beams

  static constexpr int32_t kMaxBeams = 64;

  // Ok, or InvalidArgument naming the first bad field and its value, e.g.
  // "SamplingParams.top_p = 1.5: must be in (0, 1]".
  Status Validate() const;

  bool greedy() const { return !(temperature > 0.0f); }
  ContrastiveParams contrastive_params() const { return ContrastiveParams{contrastive_alpha, contrastive_beta}; }
  bool beam_search() const { return num_beams > 1; }
};

}  // namespace troupe
