#include "pipeline/model/generation.h"

#include <cassert>
#include <cmath>
#include <limits>

#include "pipeline/sampling/contrastive.h"

namespace troupe {

Result<Generation> Generation::Create(const Tokenizer& tokenizer, SamplingParams params, std::vector<int32_t> prompt) {
  if (prompt.empty()) return Status::InvalidArgument("the prompt has no tokens");
  if (params.max_tokens <= 0) return Status::InvalidArgument("max_tokens must be positive");
  std::vector<int32_t> eos;
  if (tokenizer.eos_id() >= 0) eos.push_back(tokenizer.eos_id());
  if (tokenizer.eot_id() >= 0) eos.push_back(tokenizer.eot_id());
  TROUPE_ASSIGN_OR_RETURN(Sampler sampler, Sampler::Create(std::move(params), std::move(eos)));
  return Generation(tokenizer, std::move(sampler), std::move(prompt));
}

Generation::Generation(const Tokenizer& tokenizer, Sampler sampler, std::vector<int32_t> prompt)
    : tokenizer_(&tokenizer),
      sampler_(std::move(sampler)),
      stream_(tokenizer),
      stop_(sampler_.params().stop),
      tokens_(std::move(prompt)),
      prompt_tokens_(static_cast<int64_t>(tokens_.size())) {}

TokenEvent Generation::Next(const float* logits, int64_t vocab, const float* amateur) {
  TokenEvent ev;
  if (finished()) return ev;
  const int64_t step = generated_tokens();
  const float* chain_input = logits;
  assert(!contrastive() || amateur != nullptr);
  if (contrastive() && amateur != nullptr && logits != nullptr && vocab > 0) {
    const float* expert = logits;
    if (step < sampler_.params().min_tokens) {
      // No eos yet: take it out of the expert row before the plausibility
      // cut, or a step where eos alone is plausible could only end the answer.
      expert_.assign(logits, logits + vocab);
      if (MaskEos(vocab)) expert = expert_.data();
    }
    contrastive_.resize(static_cast<size_t>(vocab));
    ContrastiveLogits(expert, amateur, vocab, sampler_.params().contrastive_params(), contrastive_.data());
    chain_input = contrastive_.data();
  }
  ev.id = sampler_.Sample(chain_input, vocab, step, tokens_);
  if (sampler_.params().top_logprobs >= 0) {
    ev.logprobs = ComputeLogprobs(logits, vocab, ev.id, sampler_.params().top_logprobs);
  }
  tokens_.push_back(ev.id);
  if (sampler_.IsEos(ev.id)) {
    ev.eos = true;
    finish_ = FinishReason::kEos;
  } else {
    StopMatcher::Released r = stop_.Feed(stream_.Feed(ev.id));
    ev.text = std::move(r.text);
    if (r.stopped) {
      finish_ = FinishReason::kStop;
    } else if (generated_tokens() >= sampler_.params().max_tokens) {
      finish_ = FinishReason::kLength;
    }
  }
  if (finished() && finish_ != FinishReason::kStop) {
    // Whatever was held back (a partial character, a possible stop string
    // that never completed) belongs to the answer.
    StopMatcher::Released r = stop_.Feed(stream_.Flush());
    ev.text += r.text;
    if (!r.stopped) ev.text += stop_.Flush();
  }
  ev.finish = finish_;
  return ev;
}

bool Generation::MaskEos(int64_t vocab) {
  bool other_possible = false;
  for (int64_t i = 0; i < vocab && !other_possible; ++i) {
    other_possible = !sampler_.IsEos(static_cast<int32_t>(i)) && !std::isnan(expert_[static_cast<size_t>(i)]) &&
                     expert_[static_cast<size_t>(i)] != -std::numeric_limits<float>::infinity();
  }
  if (!other_possible) return false;  // as the Sampler: never mask the only possible tokens
  for (int32_t id : {tokenizer_->eos_id(), tokenizer_->eot_id()}) {
    if (id >= 0 && id < vocab) expert_[static_cast<size_t>(id)] = -std::numeric_limits<float>::infinity();
  }
  return true;
}

}  // namespace troupe
