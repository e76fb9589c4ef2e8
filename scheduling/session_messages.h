// Session messages: the route and the envelopes the head sends about one
// session — the ring a session takes, SessionOpen and SessionClose for its
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

// The ring through `spans`: embedding, the shards in layer order, LM head,
// sampler; every stage but the shards on the head (`head`, at `endpoint`).
std::vector<v1::RouteHop> Ring(const std::string& head, const std::string& endpoint,
                               const std::vector<Span>& spans);

struct SessionSetup {
  uint64_t session_id = 0;
  uint64_t job_id = 0;
  const std::vector<v1::RouteHop>* route = nullptr;  // the ring
  int64_t capacity = 0;                              // cache positions to reserve
  const v1::SamplingParams* sampling = nullptr;      // seed set
  std::string fingerprint;                           // of the model
};

v1::Envelope SessionOpenEnvelope(const SessionSetup& setup);
v1::Envelope SessionCloseEnvelope(uint64_t session_id, const std::string& reason);

// Step 0 of a session: the whole prompt, to go round `route` (the embedding chunks it).
v1::Step PrefillStep(uint64_t session_id, const std::vector<int32_t>& prompt, const std::vector<v1::RouteHop>& route);

}  // namespace troupe::scheduling
