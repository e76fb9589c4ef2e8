#include "pipeline/model/engine.h"

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/from_blob.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "pipeline/model/amateur.h"
#include "pipeline/model/decoder.h"
#include "pipeline/model/embedding.h"
#include "pipeline/model/kv_cache.h"
#include "pipeline/model/lm_head.h"

namespace troupe {
namespace {

constexpr int64_t kPrefillChunk = 512;  // bounds scratch memory on long prompts

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Engine::~Engine() = default;

const ModelConfig& Engine::config() const { return source_->config(); }

Result<std::unique_ptr<Engine>> Engine::Load(const std::string& path, const ModelOptions& options) {
  std::unique_ptr<Engine> e(new Engine());
  TROUPE_ASSIGN_OR_RETURN(e->source_, ModelSource::Open(path));
  TROUPE_ASSIGN_OR_RETURN(e->tokenizer_, Tokenizer::Create(e->source_->tokenizer_spec()));
  TROUPE_ASSIGN_OR_RETURN(e->embedding_, Embedding::Load(*e->source_));
  TROUPE_ASSIGN_OR_RETURN(e->decoder_, Decoder::Load(*e->source_, 0, e->source_->config().n_layers, options));
  TROUPE_ASSIGN_OR_RETURN(e->lm_head_, LmHead::Load(*e->source_, options));
  at::set_num_threads(ResolveThreads(options));
  return e;
}

Status Engine::LoadAmateur(const std::string& path, const ModelOptions& options) {
  TROUPE_ASSIGN_OR_RETURN(amateur_, AmateurModel::Load(path, options, *source_));
  return Status::Ok();
}

Result<GenerateStats> Engine::Generate(const std::vector<int32_t>& prompt, const SamplingParams& params,
                                       const std::function<void(const TokenEvent&)>& on_token) {
  if (params.beam_search()) {
    return Status::InvalidArgument("SamplingParams.num_beams = " + std::to_string(params.num_beams) +
                                   ": beam search runs in Engine::GenerateBeams");
  }
  TROUPE_ASSIGN_OR_RETURN(Generation gen, Generation::Create(*tokenizer_, params, prompt));
  const int64_t max_pos = config().max_positions;
  const int64_t n_prompt = static_cast<int64_t>(prompt.size());
  if (n_prompt >= max_pos)
    return Status::OutOfRange("the prompt has " + std::to_string(n_prompt) + " tokens; the model's context is " +
                              std::to_string(max_pos));
  const int64_t max_length = std::min<int64_t>(max_pos, n_prompt + params.max_tokens);
  TROUPE_ASSIGN_OR_RETURN(auto cache, KvCache::Create(decoder_->cache_shape(), max_length));
  std::unique_ptr<AmateurSession> amateur;
  if (params.contrastive) {
    if (amateur_ == nullptr) {
      return Status::InvalidArgument("contrastive decoding needs an amateur model (--amateur-model PATH)");
    }
    TROUPE_ASSIGN_OR_RETURN(amateur, amateur_->OpenSession(max_length));
  }
  // The amateur's row for the position after gen.tokens(), or nullptr when
  // not decoding contrastively.
  auto amateur_row = [&]() -> Result<const float*> {
    if (amateur == nullptr) return static_cast<const float*>(nullptr);
    return amateur->LogitsAfter(gen.tokens());
  };

  GenerateStats stats;
  stats.prompt_tokens = n_prompt;
  auto t0 = std::chrono::steady_clock::now();
  // Prefill in chunks; only the last position's logits are needed.
  at::Tensor last;
  for (int64_t begin = 0; begin < n_prompt; begin += kPrefillChunk) {
    const int64_t end = std::min(n_prompt, begin + kPrefillChunk);
    std::vector<int32_t> chunk(prompt.begin() + begin, prompt.begin() + end);
    TROUPE_ASSIGN_OR_RETURN(at::Tensor h, embedding_->Forward(chunk));
    TROUPE_RETURN_IF_ERROR(decoder_->Forward(h, {SessionRows{cache.get(), end - begin}}));
    last = h.slice(0, end - begin - 1, end - begin).contiguous();
  }
  TROUPE_ASSIGN_OR_RETURN(at::Tensor logits, lm_head_->Forward(last));
  TROUPE_ASSIGN_OR_RETURN(const float* amateur_logits, amateur_row());
  stats.prefill_seconds = SecondsSince(t0);
  auto t1 = std::chrono::steady_clock::now();
  while (true) {
    TokenEvent ev = gen.Next(logits.data_ptr<float>(), logits.size(1), amateur_logits);
    on_token(ev);
    if (gen.finished()) break;
    if (cache->length() >= max_length) {  // context exhausted before max_tokens
      break;
    }
    TROUPE_ASSIGN_OR_RETURN(at::Tensor h, embedding_->Forward({ev.id}));
    TROUPE_RETURN_IF_ERROR(decoder_->Forward(h, {SessionRows{cache.get(), 1}}));
    TROUPE_ASSIGN_OR_RETURN(logits, lm_head_->Forward(h));
    TROUPE_ASSIGN_OR_RETURN(amateur_logits, amateur_row());
    ++stats.decode_steps;
  }
  stats.decode_seconds = SecondsSince(t1);
  stats.generated_tokens = gen.generated_tokens() - (gen.finish_reason() == FinishReason::kEos ? 1 : 0);
  stats.finish = gen.finished() ? gen.finish_reason() : FinishReason::kLength;
  return stats;
}

Result<ScoreResult> Engine::Score(const std::vector<int32_t>& tokens) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n < 2) return Status::InvalidArgument("scoring needs at least 2 tokens, got " + std::to_string(n));
  if (n > config().max_positions)
    return Status::OutOfRange("the text has " + std::to_string(n) + " tokens; the model's context is " +
                              std::to_string(config().max_positions));
  TROUPE_ASSIGN_OR_RETURN(auto cache, KvCache::Create(decoder_->cache_shape(), n));
  ScoreResult out;
  out.tokens = tokens;
  for (int64_t begin = 0; begin < n; begin += kPrefillChunk) {
    const int64_t end = std::min(n, begin + kPrefillChunk);
    std::vector<int32_t> chunk(tokens.begin() + begin, tokens.begin() + end);
    TROUPE_ASSIGN_OR_RETURN(at::Tensor h, embedding_->Forward(chunk));
    TROUPE_RETURN_IF_ERROR(decoder_->Forward(h, {SessionRows{cache.get(), end - begin}}));
    TROUPE_ASSIGN_OR_RETURN(at::Tensor logits, lm_head_->Forward(h));
    const int64_t V = logits.size(1);
    const float* lg = logits.data_ptr<float>();
    for (int64_t i = begin; i < end; ++i) {
      const float* row = lg + (i - begin) * V;
      const int64_t am = std::max_element(row, row + V) - row;
      double sum = 0;
      for (int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(row[v] - row[am]));
      out.argmax.push_back(static_cast<int32_t>(am));
      if (i + 1 == n) break;
      out.logprobs.push_back(static_cast<float>(row[tokens[i + 1]] - row[am] - std::log(sum)));
    }
  }
  return out;
}

}  // namespace troupe
