// BeamSearch: Hugging Face `generate` beam search for one prompt — the pure
// decision logic, no model and no torch. The caller runs the model on every
// live beam row, hands the logits to Advance(), then reorders its caches by
// parents() (Petals' hypo_ids) and feeds next_tokens() as the next step's
// input, until done(); Finish() gives the best num_return_sequences.
//
// Rules (transformers' BeamSearchScorer / BeamHypotheses, v4.38–4.47):
//  * Each step, every row's logits go through log_softmax (in double; a NaN
//    logit counts as -inf); before min_tokens tokens the eos ids get -inf (the
//    min-new-tokens processor). A candidate's score is its beam's sum of
//    logprobs plus the token's logprob. The best
//    max(2, 1 + number of eos ids) * num_beams candidates over all rows are
//    ranked by score, ties to the lower (row * vocab + token).
//  * Walking that ranking: an eos candidate ranked within the first num_beams
//    finishes a hypothesis (its beam's tokens, the eos not included; its
//    length counts the eos), a lower-ranked eos candidate is dropped; any
//    other candidate becomes the next live beam, until num_beams are live.
//  * The kept hypotheses hold at most num_beams, each scored
//    sum_logprobs / generated_len ^ length_penalty; a new one enters while
//    fewer are kept or when it beats the worst (which then leaves).
//  * After each step (cur_len = tokens generated including this step,
//    best = the top candidate's sum of logprobs), the search is done once
//    num_beams hypotheses are kept and: early_stopping true — always;
//    false — worst kept >= best / cur_len ^ length_penalty; never —
//    worst kept >= best / max_new_tokens ^ length_penalty when
//    length_penalty > 0, else as false.
//  * It also ends after max_new_tokens steps; unless it was done, Finish()
//    then offers every live beam (length max_new_tokens, no eos) to the kept
//    hypotheses first. Finish() returns the kept hypotheses best first
//    (equal scores: the later kept first, as Python's stable sort + pop).
// Sums are kept in double (Hugging Face keeps float32), so the result is a
// pure function of the logits that a float64 reference reproduces exactly.
//
// Rows: the first Advance() takes 1 row (the prompt's last position); every
// later one num_beams rows, row i being live beam i. After Advance(), new row
// i continues old row parents()[i] with token next_tokens()[i].
//
// Thread-safety: none (one session, one thread). Failure: Create() names the
// bad field; Advance() returns InvalidArgument for a wrong row count, a
// non-positive vocab, a call after done(), or too few non-eos candidates
// (a vocabulary smaller than the ranking needs).
#pragma once

#include <cstdint>
#include <vector>

#include "pipeline/sampling/sampling_params.h"
#include "pipeline/status.h"

namespace troupe {

// One finished sequence: the generated tokens (no eos), its score and why it
// ended (an eos token, or max_new_tokens).
struct BeamHypothesis {
  std::vector<int32_t> tokens;
  double score = 0;  // sum_logprobs / generated_len ^ length_penalty
  double sum_logprobs = 0;
  bool eos = false;  // ended by an eos token (counted in the length, not in tokens)
};

class BeamSearch {
 public:
  // params must validate and have num_beams >= 1 (1 works: one live beam);
  // max_new_tokens >= 1 (max_tokens, cut to what the context holds).
  static Result<BeamSearch> Create(const SamplingParams& params, std::vector<int32_t> eos_ids, int64_t max_new_tokens);

  int32_t num_beams() const { return num_beams_; }
  // Rows the next Advance() takes: 1 before the first step, num_beams after.
  int32_t rows() const { return step_ == 0 ? 1 : num_beams_; }
  int64_t step() const { return step_; }  // steps taken = tokens in each live beam
  bool done() const { return done_ || step_ >= max_new_tokens_; }

  // logits: [n_rows, vocab] f32, row-major; n_rows must equal rows().
  // After an error the search is unusable.
  Status Advance(const float* logits, int64_t n_rows, int64_t vocab);

  // After an Advance(): [num_beams] each new row's old row, and its token.
  const std::vector<int32_t>& parents() const { return parents_; }
  const std::vector<int32_t>& next_tokens() const { return next_tokens_; }
  // Live beam `row`'s generated tokens (next_tokens() included): what a
  // replay prefills after the prompt.
  const std::vector<int32_t>& beam_tokens(int32_t row) const { return beams_[static_cast<size_t>(row)].tokens; }

  // The best num_return_sequences hypotheses, best first. Empty before the
  // first step; call once done().
  std::vector<BeamHypothesis> Finish() const;

 private:
  struct Beam {
    std::vector<int32_t> tokens;
    double sum_logprobs = 0;
  };
  // Hugging Face's BeamHypotheses: the kept finished sequences.
  struct Kept {
    std::vector<BeamHypothesis> hyps;
    double worst = 1e9;
    void Add(BeamHypothesis hyp, int64_t generated_len, float length_penalty, int32_t capacity);
  };

  BeamSearch() = default;
  bool IsEos(int32_t token) const;
  bool KeptIsDone(double best_sum_logprobs, int64_t cur_len) const;

  int32_t num_beams_ = 1;
  int32_t num_return_ = 1;
  float length_penalty_ = 1.0f;
  EarlyStopping early_stopping_ = EarlyStopping::kFalse;
  int64_t max_new_tokens_ = 1;
  int32_t min_tokens_ = 0;
  std::vector<int32_t> eos_ids_;  // sorted, distinct

  int64_t step_ = 0;
  bool done_ = false;  // Hugging Face's _done: no live beam can matter any more
  std::vector<Beam> beams_{Beam{}};
  Kept kept_;
  std::vector<int32_t> parents_;
  std::vector<int32_t> next_tokens_;
};

}  // namespace troupe
