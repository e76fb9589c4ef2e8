// Session messages: the route and the envelopes the head sends about one
// session — the route a session takes, SessionOpen and SessionClose for its
// shards, and the prefill step for its embedding. The first message of a
// session carries all its setup; the rest name it by id.
//
// Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "messages/troupe.pb.h"
#include "scheduling/registry.h"

namespace troupe::scheduling {

// The route through `spans`: embedding, the shards in layer order, LM head,
// sampler; every stage but the shards on the head (`head`, at `endpoint`),
// unless `embedding` or `lm_head` names a stage node to run it.
// With `int8_link_rtt_ms` > 0, the hidden states sent over a link to or from
// a shard whose round trip exceeds it go as int8 blocks (RouteHop.encoding
// on the shard and LM head hops; lossy, so answers may differ from f32).
std::vector<v1::RouteHop> RouteThrough(const std::string& head, const std::string& endpoint,
                                       const std::vector<Span>& spans, double int8_link_rtt_ms = 0,
                                       const Span* embedding = nullptr, const Span* lm_head = nullptr);

// SessionOpen for a shard: reserve `max_length` cache positions for a session
// of the model `fingerprint`.
// `rows` > 1: a beam search session, one cache per beam row (SessionOpen.rows).
v1::Envelope SessionOpenEnvelope(uint64_t session_id, int64_t max_length, const std::string& fingerprint,
                                 int32_t rows = 1);
v1::Envelope SessionCloseEnvelope(uint64_t session_id);

// The prefill of a session: prompt[from, end) at positions [from, end), to go
// round `route` (the embedding chunks it). `from` is 0 but where the shards'
// caches already hold the prompt's first tokens (a kept session).
v1::Step PrefillStep(uint64_t session_id, const std::vector<int32_t>& prompt, int64_t from,
                     const std::vector<v1::RouteHop>& route);

}  // namespace troupe::scheduling
