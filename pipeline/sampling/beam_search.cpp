#include "pipeline/sampling/beam_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace troupe {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct Candidate {
  double score;  // beam sum of logprobs + this token's logprob
  int64_t flat;  // row * vocab + token
};

// Best first; equal scores to the lower flat index.
bool Better(const Candidate& a, const Candidate& b) {
  return a.score > b.score || (a.score == b.score && a.flat < b.flat);
}

// log_softmax of one row in double; NaN counts as -inf, +inf as the largest float.
void LogSoftmax(const float* logits, int64_t vocab, std::vector<double>* out) {
  out->resize(static_cast<size_t>(vocab));
  double max = kNegInf;
  for (int64_t v = 0; v < vocab; ++v) {
    float x = logits[v];
    double d = std::isnan(x) ? kNegInf : static_cast<double>(std::min(x, std::numeric_limits<float>::max()));
    (*out)[static_cast<size_t>(v)] = d;
    max = std::max(max, d);
  }
  if (max == kNegInf) return;  // nothing possible: every logprob stays -inf
  double sum = 0;
  for (double d : *out) sum += std::exp(d - max);
  const double lse = max + std::log(sum);
  for (double& d : *out) d -= lse;
}

double LengthNormalized(double sum_logprobs, int64_t generated_len, float length_penalty) {
  return sum_logprobs / std::pow(static_cast<double>(generated_len), static_cast<double>(length_penalty));
}

}  // namespace

Result<BeamSearch> BeamSearch::Create(const SamplingParams& params, std::vector<int32_t> eos_ids,
                                      int64_t max_new_tokens) {
  TROUPE_RETURN_IF_ERROR(params.Validate());
  if (max_new_tokens < 1) {
    return Status::InvalidArgument("beam search needs max_new_tokens >= 1, got " + std::to_string(max_new_tokens));
  }
  BeamSearch bs;
  bs.num_beams_ = params.num_beams;
  bs.num_return_ = params.num_return_sequences;
  bs.length_penalty_ = params.length_penalty;
  bs.early_stopping_ = params.early_stopping;
  bs.max_new_tokens_ = max_new_tokens;
  bs.min_tokens_ = params.min_tokens;
  std::sort(eos_ids.begin(), eos_ids.end());
  eos_ids.erase(std::unique(eos_ids.begin(), eos_ids.end()), eos_ids.end());
  bs.eos_ids_ = std::move(eos_ids);
  return bs;
}

bool BeamSearch::IsEos(int32_t token) const { return std::binary_search(eos_ids_.begin(), eos_ids_.end(), token); }

void BeamSearch::Kept::Add(BeamHypothesis hyp, int64_t generated_len, float length_penalty, int32_t capacity) {
  hyp.score = LengthNormalized(hyp.sum_logprobs, generated_len, length_penalty);
  const double score = hyp.score;
  if (static_cast<int32_t>(hyps.size()) >= capacity && !(score > worst)) return;
  hyps.push_back(std::move(hyp));
  if (static_cast<int32_t>(hyps.size()) > capacity) {
    // Drop the worst (equal scores: the earliest kept), the next worst is the new bar.
    std::vector<std::pair<double, size_t>> order;
    for (size_t i = 0; i < hyps.size(); ++i) order.emplace_back(hyps[i].score, i);
    std::sort(order.begin(), order.end());
    hyps.erase(hyps.begin() + static_cast<std::ptrdiff_t>(order[0].second));
    worst = order[1].first;
  } else {
    worst = std::min(score, worst);
  }
}

bool BeamSearch::KeptIsDone(double best_sum_logprobs, int64_t cur_len) const {
  if (static_cast<int32_t>(kept_.hyps.size()) < num_beams_) return false;
  switch (early_stopping_) {
    case EarlyStopping::kTrue: return true;
    case EarlyStopping::kNever:
      if (length_penalty_ > 0.0f) {
        return kept_.worst >= LengthNormalized(best_sum_logprobs, max_new_tokens_, length_penalty_);
      }
      break;
    case EarlyStopping::kFalse: break;
  }
  return kept_.worst >= LengthNormalized(best_sum_logprobs, cur_len, length_penalty_);
}

Status BeamSearch::Advance(const float* logits, int64_t n_rows, int64_t vocab) {
  if (done()) return Status::InvalidArgument("beam search: Advance() after the search is done");
  if (n_rows != rows()) {
    return Status::InvalidArgument("beam search: got logits for " + std::to_string(n_rows) + " rows, expected " +
                                   std::to_string(rows()));
  }
  if (logits == nullptr || vocab < 1 || vocab > std::numeric_limits<int32_t>::max()) {
    return Status::InvalidArgument("beam search: no logits or a bad vocabulary size " + std::to_string(vocab));
  }
  const int64_t n_eos = static_cast<int64_t>(eos_ids_.size());
  const int64_t n_keep = std::min(std::max<int64_t>(2, 1 + n_eos) * num_beams_, n_rows * vocab);

  // Each row's best n_keep candidates, then the best n_keep of them all.
  std::vector<Candidate> ranked;
  std::vector<double> logprobs;
  std::vector<Candidate> row_cands;
  for (int64_t r = 0; r < n_rows; ++r) {
    LogSoftmax(logits + r * vocab, vocab, &logprobs);
    if (step_ < min_tokens_) {
      for (int32_t id : eos_ids_) {
        if (id >= 0 && id < vocab) logprobs[static_cast<size_t>(id)] = kNegInf;
      }
    }
    const double base = beams_[static_cast<size_t>(r)].sum_logprobs;
    row_cands.resize(static_cast<size_t>(vocab));
    for (int64_t v = 0; v < vocab; ++v) {
      row_cands[static_cast<size_t>(v)] = Candidate{base + logprobs[static_cast<size_t>(v)], r * vocab + v};
    }
    const int64_t k = std::min(n_keep, vocab);
    std::partial_sort(row_cands.begin(), row_cands.begin() + k, row_cands.end(), Better);
    ranked.insert(ranked.end(), row_cands.begin(), row_cands.begin() + k);
  }
  std::sort(ranked.begin(), ranked.end(), Better);
  ranked.resize(static_cast<size_t>(n_keep));

  // Walk the ranking: eos candidates in the top num_beams finish a
  // hypothesis; the others fill the next live beams.
  const int64_t cur_len = step_ + 1;
  std::vector<Beam> next;
  std::vector<int32_t> parents, tokens;
  for (int64_t rank = 0; rank < n_keep && static_cast<int32_t>(next.size()) < num_beams_; ++rank) {
    const Candidate& c = ranked[static_cast<size_t>(rank)];
    const int32_t row = static_cast<int32_t>(c.flat / vocab);
    const int32_t token = static_cast<int32_t>(c.flat % vocab);
    const Beam& parent = beams_[static_cast<size_t>(row)];
    if (IsEos(token)) {
      if (rank >= num_beams_) continue;
      kept_.Add(BeamHypothesis{parent.tokens, 0.0, c.score, true}, cur_len, length_penalty_, num_beams_);
      continue;
    }
    Beam beam{parent.tokens, c.score};
    beam.tokens.push_back(token);
    next.push_back(std::move(beam));
    parents.push_back(row);
    tokens.push_back(token);
  }
  if (static_cast<int32_t>(next.size()) < num_beams_) {
    return Status::InvalidArgument("beam search: fewer than num_beams = " + std::to_string(num_beams_) +
                                   " non-eos candidates among the best " + std::to_string(n_keep) + " (vocabulary " +
                                   std::to_string(vocab) + ")");
  }
  done_ = done_ || KeptIsDone(ranked[0].score, cur_len);
  beams_ = std::move(next);
  parents_ = std::move(parents);
  next_tokens_ = std::move(tokens);
  ++step_;
  return Status::Ok();
}

std::vector<BeamHypothesis> BeamSearch::Finish() const {
  if (step_ == 0) return {};
  Kept kept = kept_;
  if (!done_) {
    for (const Beam& beam : beams_) {
      kept.Add(BeamHypothesis{beam.tokens, 0.0, beam.sum_logprobs, false}, step_, length_penalty_, num_beams_);
    }
  }
  // Ascending by score, stable; the best are taken from the back.
  std::stable_sort(kept.hyps.begin(), kept.hyps.end(),
                   [](const BeamHypothesis& a, const BeamHypothesis& b) { return a.score < b.score; });
  std::vector<BeamHypothesis> out;
  for (int32_t i = 0; i < num_return_ && !kept.hyps.empty(); ++i) {
    out.push_back(std::move(kept.hyps.back()));
    kept.hyps.pop_back();
  }
  return out;
}

}  // namespace troupe
