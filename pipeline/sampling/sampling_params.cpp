#include "pipeline/sampling/sampling_params.h"

#include <cmath>
#include <sstream>

namespace troupe {
namespace {

template <class T>
Status Bad(const char* field, T value, const char* rule) {
  std::ostringstream os;
  os << "SamplingParams." << field << " = " << value << ": " << rule;
  return Status::InvalidArgument(os.str());
}

// With beams: the first field only sampling (or the Sampler's logit chain)
// reads that is not at its "off" value, or nullptr.
const char* SamplingOnlyField(const SamplingParams& p) {
  if (p.temperature > 0.0f) return "temperature";
  if (p.top_k != 0) return "top_k";
  if (p.top_p != 1.0f) return "top_p";
  if (p.min_p != 0.0f) return "min_p";
  if (p.top_a != 0.0f) return "top_a";
  if (p.repeat_penalty != 1.0f) return "repeat_penalty";
  if (p.presence_penalty != 0.0f) return "presence_penalty";
  if (p.frequency_penalty != 0.0f) return "frequency_penalty";
  if (p.no_repeat_ngram_size != 0) return "no_repeat_ngram_size";
  if (!p.logit_bias.empty()) return "logit_bias";
  if (!p.stop.empty()) return "stop";
  if (p.top_logprobs != -1) return "top_logprobs";
  if (p.prompt_logprobs != -1) return "prompt_logprobs";
  return nullptr;
}

}  // namespace

const char* early_stopping_name(EarlyStopping mode) {
  switch (mode) {
    case EarlyStopping::kTrue: return "true";
    case EarlyStopping::kNever: return "never";
    case EarlyStopping::kFalse: break;
  }
  return "false";
}

Result<EarlyStopping> ParseEarlyStopping(const std::string& text) {
  if (text == "true") return EarlyStopping::kTrue;
  if (text == "false") return EarlyStopping::kFalse;
  if (text == "never") return EarlyStopping::kNever;
  return Status::InvalidArgument("SamplingParams.early_stopping = " + text + ": must be true, false or never");
}

Status SamplingParams::Validate() const {
  if (!std::isfinite(temperature)) {
    return Bad("temperature", temperature, "must be finite (<= 0 means greedy)");
  }
  if (top_k < 0) return Bad("top_k", top_k, "must be >= 0 (0 = off)");
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    return Bad("top_p", top_p, "must be in (0, 1] (1 = off)");
  }
  if (!(min_p >= 0.0f && min_p <= 1.0f)) {
    return Bad("min_p", min_p, "must be in [0, 1] (0 = off)");
  }
  if (!(top_a >= 0.0f && std::isfinite(top_a))) {
    return Bad("top_a", top_a, "must be finite and >= 0 (0 = off)");
  }
  if (!(repeat_penalty > 0.0f && std::isfinite(repeat_penalty))) {
    return Bad("repeat_penalty", repeat_penalty, "must be finite and > 0 (1 = off)");
  }
  if (repeat_last_n < -1) {
    return Bad("repeat_last_n", repeat_last_n, "must be >= -1 (0 = off, -1 = whole history)");
  }
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) {
    return Bad("presence_penalty", presence_penalty, "must be in [-2, 2] (0 = off)");
  }
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) {
    return Bad("frequency_penalty", frequency_penalty, "must be in [-2, 2] (0 = off)");
  }
  if (no_repeat_ngram_size < 0) return Bad("no_repeat_ngram_size", no_repeat_ngram_size, "must be >= 0 (0 = off)");
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0) return Bad("logit_bias", id, "token ids must be >= 0");
    if (!(bias >= -100.0f && bias <= 100.0f)) return Bad("logit_bias", bias, "biases must be in [-100, 100]");
  }
  if (min_tokens < 0) return Bad("min_tokens", min_tokens, "must be >= 0");
  if (max_tokens < 1) return Bad("max_tokens", max_tokens, "must be >= 1");
  if (top_logprobs < -1 || top_logprobs > 20) {
    return Bad("top_logprobs", top_logprobs, "must be in [0, 20] (-1 = no logprobs)");
  }
  if (prompt_logprobs < -1 || prompt_logprobs > 20) {
    return Bad("prompt_logprobs", prompt_logprobs, "must be in [0, 20] (-1 = none)");
  }
  if (!(contrastive_alpha >= 0.0f && contrastive_alpha <= 1.0f)) {
    return Bad("contrastive_alpha", contrastive_alpha, "must be in [0, 1]");
  }
  if (!(contrastive_beta >= 0.0f && std::isfinite(contrastive_beta))) {
    return Bad("contrastive_beta", contrastive_beta, "must be finite and >= 0");
  }
  for (size_t i = 0; i < stop.size(); ++i) {
    if (stop[i].empty()) {
      const std::string field = "stop[" + std::to_string(i) + "]";
      return Bad(field.c_str(), "\"\"", "must not be empty");
    }
  }
  if (num_beams < 1 || num_beams > kMaxBeams) {
    return Bad("num_beams", num_beams, "must be in [1, 64] (1 = no beam search)");
  }
  if (!std::isfinite(length_penalty)) return Bad("length_penalty", length_penalty, "must be finite");
  if (early_stopping != EarlyStopping::kFalse && early_stopping != EarlyStopping::kTrue &&
      early_stopping != EarlyStopping::kNever) {
    return Bad("early_stopping", static_cast<int32_t>(early_stopping), "must be false (0), true (1) or never (2)");
  }
  if (num_return_sequences < 1 || num_return_sequences > num_beams) {
    return Bad("num_return_sequences", num_return_sequences, "must be in [1, num_beams]");
  }
  if (beam_search()) {
    if (const char* field = SamplingOnlyField(*this)) {
      return Status::InvalidArgument(std::string("SamplingParams.") + field +
                                     ": beam search (num_beams > 1) is deterministic and does not take this "
                                     "sampling option; leave it at its default");
    }
  }
  return Status::Ok();
}

}  // namespace troupe
