#include "actors/beam_steps.h"

#include <string>

#include "pipeline/text/stream_decoder.h"

namespace troupe::actors {

v1::Step BeamStep(uint64_t session_id, uint32_t position, const std::vector<int32_t>& tokens,
                  const std::vector<int32_t>& parents, const std::vector<v1::RouteHop>& route) {
  v1::Step step;
  step.set_session_id(session_id);
  step.set_first_position(position);
  step.set_token_count(static_cast<uint32_t>(tokens.size()));
  for (int32_t t : tokens) step.add_token_ids(t);
  for (int32_t p : parents) step.add_parent_rows(static_cast<uint32_t>(p));
  for (const v1::RouteHop& hop : route) *step.add_rest_of_route() = hop;
  return step;
}

std::vector<v1::Step> BeamReplaySteps(uint64_t session_id, const std::vector<int32_t>& prompt, const BeamSearch& search,
                                      const std::vector<v1::RouteHop>& route) {
  std::vector<v1::Step> steps;
  if (search.step() == 0) return steps;
  std::vector<v1::RouteHop> shards;  // fill caches, ask for no logits
  for (const v1::RouteHop& hop : route) {
    if (hop.stage() == v1::STAGE_EMBEDDING || hop.stage() == v1::STAGE_SHARD) shards.push_back(hop);
  }
  v1::Step prefill;
  prefill.set_session_id(session_id);
  prefill.set_first_position(0);
  prefill.set_token_count(static_cast<uint32_t>(prompt.size()));
  for (int32_t t : prompt) prefill.add_token_ids(t);
  for (const v1::RouteHop& hop : shards) *prefill.add_rest_of_route() = hop;
  steps.push_back(std::move(prefill));
  const auto n_prompt = static_cast<uint32_t>(prompt.size());
  for (int64_t j = 0; j < search.step(); ++j) {
    std::vector<int32_t> tokens, parents;
    for (int32_t r = 0; r < search.num_beams(); ++r) {
      tokens.push_back(search.beam_tokens(r)[static_cast<size_t>(j)]);
      parents.push_back(j == 0 ? 0 : r);
    }
    const bool last = j + 1 == search.step();
    steps.push_back(BeamStep(session_id, n_prompt + static_cast<uint32_t>(j), tokens, parents, last ? route : shards));
  }
  return steps;
}

v1::Token BeamSequenceToken(const BeamHypothesis& sequence, uint32_t index, const Tokenizer& tokenizer) {
  StreamDecoder decoder(tokenizer);
  std::string text;
  for (int32_t t : sequence.tokens) text += decoder.Feed(t);
  text += decoder.Flush();
  v1::Token token;
  token.set_index(index);
  token.set_token_id(-1);
  token.set_text(text);
  token.set_eos(sequence.eos);
  v1::BeamSequence* b = token.mutable_beam_sequence();
  b->set_index(index);
  for (int32_t t : sequence.tokens) b->add_token_ids(t);
  b->set_score(sequence.score);
  return token;
}

}  // namespace troupe::actors
