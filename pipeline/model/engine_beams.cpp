// Engine::GenerateBeams: beam search in one process. Prefill the prompt into
// beam 0's cache once; then each step runs every live beam as one row of one
// batch (one token each, SessionRows per beam), BeamSearch picks the next
// tokens and parents, and the caches follow their parents.
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/model/beam_caches.h"
#include "pipeline/model/decoder.h"
#include "pipeline/model/embedding.h"
#include "pipeline/model/engine.h"
#include "pipeline/model/kv_cache.h"
#include "pipeline/model/lm_head.h"

namespace troupe {
namespace {

constexpr int64_t kPrefillChunk = 512;  // as Generate: bounds scratch memory on long prompts

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Result<BeamGenerateResult> Engine::GenerateBeams(const std::vector<int32_t>& prompt, const SamplingParams& params) {
  TROUPE_RETURN_IF_ERROR(params.Validate());
  if (prompt.empty()) return Status::InvalidArgument("the prompt has no tokens");
  const int64_t max_pos = config().max_positions;
  const int64_t n_prompt = static_cast<int64_t>(prompt.size());
  if (n_prompt >= max_pos)
    return Status::OutOfRange("the prompt has " + std::to_string(n_prompt) + " tokens; the model's context is " +
                              std::to_string(max_pos));
  const int64_t max_new = std::min<int64_t>(params.max_tokens, max_pos - n_prompt);
  std::vector<int32_t> eos;
  if (tokenizer_->eos_id() >= 0) eos.push_back(tokenizer_->eos_id());
  if (tokenizer_->eot_id() >= 0) eos.push_back(tokenizer_->eot_id());
  TROUPE_ASSIGN_OR_RETURN(BeamSearch search, BeamSearch::Create(params, eos, max_new));

  // One cache per beam; only beam 0's is filled by the prefill.
  std::vector<std::unique_ptr<KvCache>> caches;
  for (int32_t i = 0; i < params.num_beams; ++i) {
    TROUPE_ASSIGN_OR_RETURN(auto cache, KvCache::Create(decoder_->cache_shape(), n_prompt + max_new));
    caches.push_back(std::move(cache));
  }

  BeamGenerateResult out;
  out.stats.prompt_tokens = n_prompt;
  auto t0 = std::chrono::steady_clock::now();
  at::Tensor last;
  for (int64_t begin = 0; begin < n_prompt; begin += kPrefillChunk) {
    const int64_t end = std::min(n_prompt, begin + kPrefillChunk);
    std::vector<int32_t> chunk(prompt.begin() + begin, prompt.begin() + end);
    TROUPE_ASSIGN_OR_RETURN(at::Tensor h, embedding_->Forward(chunk));
    TROUPE_RETURN_IF_ERROR(decoder_->Forward(h, {SessionRows{caches[0].get(), end - begin}}));
    last = h.slice(0, end - begin - 1, end - begin).contiguous();
  }
  TROUPE_ASSIGN_OR_RETURN(at::Tensor logits, lm_head_->Forward(last));
  out.stats.prefill_seconds = SecondsSince(t0);

  auto t1 = std::chrono::steady_clock::now();
  while (true) {
    TROUPE_RETURN_IF_ERROR(search.Advance(logits.data_ptr<float>(), logits.size(0), logits.size(1)));
    if (search.done()) break;
    TROUPE_ASSIGN_OR_RETURN(int64_t copies, ReorderBeamCaches(search.parents(), &caches));
    out.cache_copies += copies;
    TROUPE_ASSIGN_OR_RETURN(at::Tensor h, embedding_->Forward(search.next_tokens()));
    std::vector<SessionRows> batch;
    for (const auto& cache : caches) batch.push_back(SessionRows{cache.get(), 1});
    TROUPE_RETURN_IF_ERROR(decoder_->Forward(h, batch));
    TROUPE_ASSIGN_OR_RETURN(logits, lm_head_->Forward(h));
    ++out.stats.decode_steps;
  }
  out.stats.decode_seconds = SecondsSince(t1);
  out.sequences = search.Finish();
  if (!out.sequences.empty()) {
    out.stats.generated_tokens = static_cast<int64_t>(out.sequences[0].tokens.size());
    out.stats.finish = out.sequences[0].eos ? FinishReason::kEos : FinishReason::kLength;
  }
  return out;
}

}  // namespace troupe
