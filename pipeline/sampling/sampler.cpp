#include "pipeline/sampling/sampler.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <utility>

#include "pipeline/sampling/counter_rng.h"

namespace troupe {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kMaxFloat = std::numeric_limits<float>::max();

// NaN -> -inf (impossible), +inf -> the largest float (certain, but still
// comparable and safe to subtract).
float Sanitize(float logit) {
  if (std::isnan(logit)) return kNegInf;
  return std::min(logit, kMaxFloat);
}

}  // namespace

Sampler::Sampler(SamplingParams params, std::vector<int32_t> eos_ids)
    : params_(std::move(params)), eos_ids_(std::move(eos_ids)) {
  assert(params_.Validate().ok());
  std::sort(eos_ids_.begin(), eos_ids_.end());
  eos_ids_.erase(std::unique(eos_ids_.begin(), eos_ids_.end()), eos_ids_.end());
}

Result<Sampler> Sampler::Create(SamplingParams params, std::vector<int32_t> eos_ids) {
  TROUPE_RETURN_IF_ERROR(params.Validate());
  return Sampler(std::move(params), std::move(eos_ids));
}

bool Sampler::IsEos(int32_t token) const { return std::binary_search(eos_ids_.begin(), eos_ids_.end(), token); }

int32_t Sampler::Sample(const float* logits, int64_t vocab, int64_t step, const std::vector<int32_t>& history) {
  if (logits == nullptr || vocab < 1 || vocab > std::numeric_limits<int32_t>::max()) return -1;

  if (PlainGreedy()) return GreedyId(logits, vocab, step < params_.min_tokens);
  LoadCandidates(logits, vocab, step, history);
  if (step < params_.min_tokens) MaskEos();
  if (params_.greedy()) return ArgmaxId(cands_);

  // Impossible tokens leave the list; if none is possible, fall back to argmax
  // (the lowest id, as every logit is -inf).
  auto end = std::remove_if(cands_.begin(), cands_.end(), [](const Candidate& c) { return c.logit == kNegInf; });
  if (end == cands_.begin()) return ArgmaxId(cands_);
  cands_.resize(static_cast<size_t>(end - cands_.begin()));

  KeepTopK(params_.top_k, &cands_);
  KeepTopP(params_.top_p, &cands_);
  KeepMinP(params_.min_p, &cands_);
  KeepTopA(params_.top_a, &cands_);
  OrderById(vocab);
  ApplyTemperature(params_.temperature, &cands_);
  Softmax(&cands_);
  return DrawId(cands_, UniformAt(params_.seed, static_cast<uint64_t>(step)));
}

bool Sampler::PlainGreedy() const {
  const SamplingParams& p = params_;
  return p.greedy() && p.logit_bias.empty() && (p.repeat_penalty == 1.0f || p.repeat_last_n == 0) &&
         p.presence_penalty == 0.0f && p.frequency_penalty == 0.0f && p.no_repeat_ngram_size <= 0;
}

int32_t Sampler::GreedyId(const float* logits, int64_t vocab, bool mask_eos) const {
  const auto n = static_cast<int32_t>(vocab);
  if (mask_eos) {
    // MaskEos, then argmax: the first best of the tokens that are not eos,
    // if one of them is possible at all.
    int32_t best = -1;
    float best_logit = kNegInf;
    for (int32_t i = 0; i < n; ++i) {
      const float l = Sanitize(logits[i]);
      if (l > best_logit && !IsEos(i)) {
        best = i;
        best_logit = l;
      }
    }
    if (best >= 0) return best;
  }
  // The largest sanitized logit, then the first id that has it. A NaN never
  // wins a comparison, so it never becomes the maximum (if every logit is NaN
  // or -inf, the maximum is -inf, which Sanitize makes of both). Sixteen
  // independent maxima, so the loop is not one chain of dependent compares.
  constexpr int kLanes = 16;
  float lane[kLanes];
  for (float& m : lane) m = kNegInf;
  int32_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const float l = std::min(logits[i + j], kMaxFloat);
      lane[j] = l > lane[j] ? l : lane[j];
    }
  }
  for (; i < n; ++i) {
    const float l = std::min(logits[i], kMaxFloat);
    lane[0] = l > lane[0] ? l : lane[0];
  }
  float best_logit = kNegInf;
  for (float m : lane) best_logit = m > best_logit ? m : best_logit;
  for (i = 0; i < n; ++i) {
    if (Sanitize(logits[i]) == best_logit) return i;
  }
  return 0;  // not reached: best_logit is one of the sanitized logits
}

void Sampler::LoadCandidates(const float* logits, int64_t vocab, int64_t step, const std::vector<int32_t>& history) {
  cands_.resize(static_cast<size_t>(vocab));
  for (int32_t i = 0; i < static_cast<int32_t>(vocab); ++i) {
    cands_[static_cast<size_t>(i)] = Candidate{i, Sanitize(logits[i]), 0.0f};
  }
  ApplyLogitBias(params_.logit_bias, &cands_);
  if (params_.repeat_penalty != 1.0f && params_.repeat_last_n != 0) {
    RecentDistinctIds(history, params_.repeat_last_n, &recent_);
    ApplyRepetitionPenalty(recent_, params_.repeat_penalty, &cands_);
  }
  const size_t answer = std::min(history.size(), static_cast<size_t>(std::max<int64_t>(step, 0)));
  ApplyPresenceFrequencyPenalty(history.data() + (history.size() - answer), answer, params_.presence_penalty,
                                params_.frequency_penalty, &cands_);
  BanRepeatedNgrams(history, params_.no_repeat_ngram_size, &cands_);
}

void Sampler::MaskEos() {
  const int64_t vocab = static_cast<int64_t>(cands_.size());
  bool other_possible = false;
  for (int32_t i = 0; i < static_cast<int32_t>(vocab) && !other_possible; ++i) {
    other_possible = cands_[static_cast<size_t>(i)].logit != kNegInf && !IsEos(i);
  }
  if (!other_possible) return;  // masking would leave nothing to sample
  for (int32_t id : eos_ids_) {
    if (id >= 0 && id < vocab) cands_[static_cast<size_t>(id)].logit = kNegInf;
  }
}

void Sampler::OrderById(int64_t vocab) {
  auto by_id = [](const Candidate& a, const Candidate& b) { return a.id < b.id; };
  if (std::is_sorted(cands_.begin(), cands_.end(), by_id)) return;
  if (static_cast<int64_t>(cands_.size()) * 32 < vocab) {
    std::sort(cands_.begin(), cands_.end(), by_id);
    return;
  }
  // Many survivors: scatter by id (NaN marks a dropped token), then gather.
  by_id_.assign(static_cast<size_t>(vocab), std::numeric_limits<float>::quiet_NaN());
  for (const Candidate& c : cands_) by_id_[static_cast<size_t>(c.id)] = c.logit;
  cands_.clear();
  for (int32_t i = 0; i < static_cast<int32_t>(vocab); ++i) {
    const float logit = by_id_[static_cast<size_t>(i)];
    if (!std::isnan(logit)) cands_.push_back(Candidate{i, logit, 0.0f});
  }
}

}  // namespace troupe
