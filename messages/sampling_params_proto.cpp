#include "messages/sampling_params_proto.h"

#include <algorithm>

namespace troupe {

v1::SamplingParams SamplingParamsToProto(const SamplingParams& params) {
  v1::SamplingParams proto;
  proto.set_temperature(params.temperature);
  proto.set_top_k(params.top_k);
  proto.set_top_p(params.top_p);
  proto.set_min_p(params.min_p);
  proto.set_top_a(params.top_a);
  proto.set_repeat_penalty(params.repeat_penalty);
  proto.set_repeat_last_n(params.repeat_last_n);
  proto.set_min_tokens(params.min_tokens);
  proto.set_max_tokens(params.max_tokens);
  proto.set_seed(params.seed);
  for (const std::string& s : params.stop) proto.add_stop(s);
  proto.set_top_logprobs(params.top_logprobs);
  proto.set_prompt_logprobs(params.prompt_logprobs);
  proto.set_presence_penalty(params.presence_penalty);
  proto.set_frequency_penalty(params.frequency_penalty);
  proto.set_no_repeat_ngram_size(params.no_repeat_ngram_size);
  for (const auto& [id, bias] : params.logit_bias) (*proto.mutable_logit_bias())[id] = bias;
  proto.set_contrastive(params.contrastive);
  proto.set_contrastive_alpha(params.contrastive_alpha);
  proto.set_contrastive_beta(params.contrastive_beta);
  proto.set_num_beams(params.num_beams);
  proto.set_length_penalty(params.length_penalty);
  proto.set_early_stopping(static_cast<v1::EarlyStopping>(params.early_stopping));
  proto.set_num_return_sequences(params.num_return_sequences);
  return proto;
}

WireResult<SamplingParams> SamplingParamsFromProto(const v1::SamplingParams& proto) {
  SamplingParams params;
  if (proto.has_temperature()) params.temperature = proto.temperature();
  if (proto.has_top_k()) params.top_k = proto.top_k();
  if (proto.has_top_p()) params.top_p = proto.top_p();
  if (proto.has_min_p()) params.min_p = proto.min_p();
  if (proto.has_top_a()) params.top_a = proto.top_a();
  if (proto.has_repeat_penalty()) params.repeat_penalty = proto.repeat_penalty();
  if (proto.has_repeat_last_n()) params.repeat_last_n = proto.repeat_last_n();
  if (proto.has_min_tokens()) params.min_tokens = proto.min_tokens();
  if (proto.has_max_tokens()) params.max_tokens = proto.max_tokens();
  if (proto.has_seed()) params.seed = proto.seed();
  params.stop.assign(proto.stop().begin(), proto.stop().end());
  if (proto.has_top_logprobs()) params.top_logprobs = proto.top_logprobs();
  if (proto.has_prompt_logprobs()) params.prompt_logprobs = proto.prompt_logprobs();
  if (proto.has_presence_penalty()) params.presence_penalty = proto.presence_penalty();
  if (proto.has_frequency_penalty()) params.frequency_penalty = proto.frequency_penalty();
  if (proto.has_no_repeat_ngram_size()) params.no_repeat_ngram_size = proto.no_repeat_ngram_size();
  params.logit_bias.assign(proto.logit_bias().begin(), proto.logit_bias().end());
  std::sort(params.logit_bias.begin(), params.logit_bias.end());  // map order is unspecified
  if (proto.has_contrastive()) params.contrastive = proto.contrastive();
  if (proto.has_contrastive_alpha()) params.contrastive_alpha = proto.contrastive_alpha();
  if (proto.has_contrastive_beta()) params.contrastive_beta = proto.contrastive_beta();
  if (proto.has_num_beams()) params.num_beams = proto.num_beams();
  if (proto.has_length_penalty()) params.length_penalty = proto.length_penalty();
  // Open enum: an unknown number reaches Validate(), which names the field.
  if (proto.has_early_stopping()) params.early_stopping = static_cast<EarlyStopping>(proto.early_stopping());
  if (proto.has_num_return_sequences()) params.num_return_sequences = proto.num_return_sequences();
  Status valid = params.Validate();
  if (!valid.ok()) return WireError{v1::BAD_REQUEST, valid.message()};
  return params;
}

}  // namespace troupe
