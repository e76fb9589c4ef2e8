// Sampler: turns one session's logits into its next token.
//
// One Sampler per session, built from the session's SamplingParams and the
// model's eos ids. Sample() runs the chain (llama.cpp
// order):
//
//   logits ─▶ logit bias ─▶ repetition penalty ─▶ presence/frequency penalty
//          ─▶ no-repeat n-grams ─▶ mask eos while step < min_tokens
//          ─▶ greedy?  argmax (ties to the lowest id)
//          ─▶ else     top-k ─▶ top-p ─▶ min-p ─▶ top-a ─▶ temperature
//                      ─▶ softmax ─▶ draw with UniformAt(seed, step)
//
// The draw walks the kept tokens in id order (inverse CDF), so the CDF moves
// continuously with the logits: a replay whose logits differ by rounding
// (prefill instead of step-by-step decode) changes the token only if u lands
// within that rounding of a boundary.
//
// The filters are defined in candidate_filters.h (probabilities for top-p and
// top-a: temperature-free softmax over the candidates left at that point).
//
// Determinism: the token is a pure function of (params, eos ids, logits,
// step, history). There is no RNG state: the draw at step s uses
// UniformAt(seed, s), so calling steps out of order, twice, or on a fresh
// Sampler after a replay gives the same tokens. The Sampler does not enforce
// max_tokens or stop strings (the session loop and StopMatcher do).
//
// Ownership: the Sampler copies its params and ids; Sample() reads `logits`
// and `history` during the call only. It keeps scratch buffers sized to the
// vocabulary so steady-state calls do not allocate.
//
// Thread-safety: none; one thread at a time per Sampler (distinct Samplers are
// independent).
//
// Failure: the constructor requires params.Validate().ok() (checked by assert;
// use Create() to get the Status instead). Sample() never fails on logits: NaN
// counts as -inf and +inf as the largest float; history ids outside
// [0, vocab) are ignored. If the eos mask would leave no possible token it is
// not applied; if no logit is finite the result is the lowest id. Sample()
// returns -1 only for unusable arguments (logits == nullptr, vocab < 1 or
// vocab > INT32_MAX).
#pragma once

#include <cstdint>
#include <vector>

#include "pipeline/sampling/candidate_filters.h"
#include "pipeline/sampling/sampling_params.h"
#include "pipeline/status.h"

namespace troupe {

class Sampler {
 public:
  // params must validate; eos_ids are the eos ids (any
  // order, duplicates allowed).
  Sampler(SamplingParams params, std::vector<int32_t> eos_ids);

  // Validates params first; the error names the bad field.
  static Result<Sampler> Create(SamplingParams params, std::vector<int32_t> eos_ids);

  // The token to emit at `step` (0 for the first new token). logits: [vocab]
  // f32 for the position being generated. history: prompt + tokens generated
  // so far (the repetition-penalty window).
  int32_t Sample(const float* logits, int64_t vocab, int64_t step, const std::vector<int32_t>& history);

  // True if `token` is one of the eos ids.
  bool IsEos(int32_t token) const;

  const SamplingParams& params() const { return params_; }

 private:
  // Greedy with no bias or penalty: the chain's token is then the argmax of
  // the sanitized logits (eos masked as MaskEos does), which GreedyId finds
  // by scanning the logits, without building the candidate list (49152
  // candidates a token for the default model; 11 % of a head's CPU time with
  // 16 greedy sessions before it).
  bool PlainGreedy() const;
  int32_t GreedyId(const float* logits, int64_t vocab, bool mask_eos) const;
  // Copies logits into cands_ (indexed by id), sanitized, biased and
  // penalized; the last `step` entries of history are the answer so far.
  void LoadCandidates(const float* logits, int64_t vocab, int64_t step, const std::vector<int32_t>& history);
  // Sets eos logits to -inf unless that leaves nothing finite.
  void MaskEos();
  // Puts cands_ (finite logits) in id order: sort if few, bucket if many.
  void OrderById(int64_t vocab);

  SamplingParams params_;
  std::vector<int32_t> eos_ids_;  // sorted, distinct
  std::vector<Candidate> cands_;  // scratch: the working candidate list
  std::vector<int32_t> recent_;   // scratch: ids in the penalty window
  std::vector<float> by_id_;      // scratch: [vocab] logits for OrderById
};

}  // namespace troupe
