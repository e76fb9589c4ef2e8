// Beam search on the wire, the sampler's side (pipeline/sampling/beam_search.h
// decides; these say it): the Step carrying a search's next tokens with each
// row's parent (Step.parent_rows), the Steps replaying every beam over a new
// route, and the Token carrying one returned sequence (Token.beam_sequence).
// Pure functions of their arguments — no actor, no socket; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "messages/troupe.pb.h"
#include "pipeline/sampling/beam_search.h"
#include "pipeline/text/tokenizer.h"

namespace troupe::actors {

// One token per beam row, all at `position`; row i continues the previous
// step's row parents[i]. `route`: the hops still to go, embedding first.
v1::Step BeamStep(uint64_t session_id, uint32_t position, const std::vector<int32_t>& tokens,
                  const std::vector<int32_t>& parents, const std::vector<v1::RouteHop>& route);

// What rebuilds every beam row's cache over a fresh route (after a reroute):
// the prompt into row 0, then one step per generated position with each row's
// own token — the first copies row 0 to every row, the later ones keep each
// row — all through the embedding and shard hops only, except the last, which
// goes round the whole `route` for the logits the search waits for. Empty
// before the search's first step (then a plain prompt replay is right).
std::vector<v1::Step> BeamReplaySteps(uint64_t session_id, const std::vector<int32_t>& prompt, const BeamSearch& search,
                                      const std::vector<v1::RouteHop>& route);

// Returned sequence `index` (0 = best) as a Token: token_id -1, text as a
// stream decodes it (whole characters, U+FFFD for stray bytes), eos when an
// eos token ended it, beam_sequence with its tokens and score. The caller
// sets session_id and job_id.
v1::Token BeamSequenceToken(const BeamHypothesis& sequence, uint32_t index, const Tokenizer& tokenizer);

}  // namespace troupe::actors
