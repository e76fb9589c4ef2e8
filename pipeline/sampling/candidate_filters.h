// The sampling filters as free functions over a list of candidate tokens.
//
// The Sampler chains these; they are public so tests (and anyone composing a
// different chain) can check exactly which tokens each one keeps.
//
// Conventions shared by every function here:
//  * A candidate list holds distinct ids. Logits are finite or -inf (the
//    Sampler maps NaN to -inf and +inf to the largest float before filtering).
//  * "Rank order" is logit descending, ties broken by the lower id first. It
//    is the only order any filter sorts into, so every result is
//    deterministic, ties included.
//  * Probabilities used by top-p and top-a are the softmax of the logits of
//    the candidates still in the list when the filter runs: temperature-free
//    (temperature comes last in the chain, as in llama.cpp) and renormalized
//    after each earlier filter (llama.cpp's top-p does the same; min-p does
//    not depend on normalization).
//  * Threshold comparisons allow a relative slack of kThresholdSlack so a
//    token exactly on a boundary (a cumulative sum equal to top_p, a
//    probability equal to min_p * p_max) is kept despite float rounding.
//  * Every filter keeps at least one token (the first in rank order) when
//    given a non-empty list with a finite logit; "off" values return at once,
//    leaving the list (and its order) untouched.
//  * Filters shrink the vector with resize(), so a list reused across calls
//    does not allocate. They may reorder the list; the p field is only
//    meaningful after Softmax().
//
// Pure functions of their arguments; thread-safe on distinct lists; never fail.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace troupe {

struct Candidate {
  int32_t id;
  float logit;
  float p;  // probability; set by Softmax(), otherwise undefined
};

// Relative slack for threshold comparisons (see the conventions above).
inline constexpr double kThresholdSlack = 1e-6;

// True if a ranks before b: higher logit, or equal logit and lower id.
inline bool RanksBefore(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// Sets p = exp(logit - max) / sum over the list. -inf logits get p = 0. Does
// nothing to an empty list or one whose logits are all -inf.
void Softmax(std::vector<Candidate>* cands);

// The distinct ids among the last `last_n` entries of `history`, sorted
// ascending, written to *ids (capacity reused). last_n = 0: none; last_n < 0:
// the whole history.
void RecentDistinctIds(const std::vector<int32_t>& history, int32_t last_n, std::vector<int32_t>* ids);

// Repetition penalty (llama.cpp semantics), applied once per id in `ids`
// (which must be distinct): logit > 0 becomes logit / penalty, logit <= 0
// becomes logit * penalty. `by_id` must be indexed by id ((*by_id)[i].id == i);
// ids outside [0, size) and -inf logits are ignored; a finite logit stays
// finite (clamped to the float range). penalty == 1 does nothing.
void ApplyRepetitionPenalty(const std::vector<int32_t>& ids, float penalty, std::vector<Candidate>* by_id);

// OpenAI's presence and frequency penalties over `generated` (the answer's
// tokens so far): logit -= count * frequency + (count > 0) * presence, count
// being how often the id occurs there. `by_id` indexed by id; ids outside it
// and -inf logits are ignored; a finite logit stays finite.
void ApplyPresenceFrequencyPenalty(const int32_t* generated, size_t n, float presence, float frequency,
                                   std::vector<Candidate>* by_id);

// Hugging Face's no_repeat_ngram_size: every id that would complete an n-gram
// already in `history` (the last n - 1 tokens followed by it) gets logit -inf.
// n <= 0, or a history shorter than n - 1: nothing.
void BanRepeatedNgrams(const std::vector<int32_t>& history, int32_t n, std::vector<Candidate>* by_id);

// OpenAI's logit_bias: adds each bias to its id's logit (ids outside `by_id`
// ignored; -inf stays -inf; a finite logit stays finite).
void ApplyLogitBias(const std::vector<std::pair<int32_t, float>>& bias, std::vector<Candidate>* by_id);

// Top-k: keeps the k first candidates in rank order and sorts them into rank
// order. k <= 0 or k >= size: no-op. Cost O(n log k) (partial sort).
void KeepTopK(int64_t k, std::vector<Candidate>* cands);

// Top-p (nucleus): keeps the shortest prefix of the list in rank order whose
// cumulative probability is >= top_p (at least one token). A token tied with
// the last kept one but of higher id is dropped. top_p >= 1: no-op. The kept
// candidates are left in an unspecified order. Never sorts the whole list:
// a pass drops tokens too small to matter, a partial sort finds a small
// nucleus, and a weighted quickselect a large one (O(n) expected).
void KeepTopP(float top_p, std::vector<Candidate>* cands);

// Min-p: keeps candidates with p >= min_p * p_max, i.e. logit >= max_logit +
// log(min_p). Preserves the relative order of kept candidates. min_p <= 0:
// no-op.
void KeepMinP(float min_p, std::vector<Candidate>* cands);

// Top-a (KoboldAI): keeps candidates with p >= top_a * p_max^2. Preserves the
// relative order of kept candidates; if the threshold exceeds p_max (top_a *
// p_max > 1) only the first candidate in rank order is kept. top_a <= 0:
// no-op.
void KeepTopA(float top_a, std::vector<Candidate>* cands);

// Temperature: logit = (logit - max_logit) / temperature. Shifting by the max
// leaves the softmax unchanged and keeps tiny temperatures from overflowing.
// temperature must be > 0.
void ApplyTemperature(float temperature, std::vector<Candidate>* cands);

// The first candidate in rank order (argmax, ties to the lowest id); -1 for an
// empty list.
int32_t ArgmaxId(const std::vector<Candidate>& cands);

// Inverse-CDF draw: walks the list in its current order and returns the id of
// the first candidate whose cumulative p exceeds u * sum(p). u in [0, 1).
// Candidates with p = 0 are never returned unless every p is 0, in which case
// the result is ArgmaxId(). -1 for an empty list.
int32_t DrawId(const std::vector<Candidate>& cands, double u);

}  // namespace troupe
