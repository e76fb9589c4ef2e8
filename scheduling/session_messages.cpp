#include "scheduling/session_messages.h"

#include <algorithm>

#include "messages/envelope_codec.h"

namespace troupe::scheduling {
namespace {

v1::RouteHop Hop(const std::string& node, const std::string& endpoint, v1::Stage stage, int64_t begin = 0,
                 int64_t end = 0) {
  v1::RouteHop h;
  h.set_node_id(node);
  h.set_endpoint(endpoint);
  h.set_stage(stage);
  h.set_layer_begin(static_cast<uint32_t>(begin));
  h.set_layer_end(static_cast<uint32_t>(end));
  return h;
}

}  // namespace

std::vector<v1::RouteHop> RouteThrough(const std::string& head, const std::string& endpoint,
                                       const std::vector<Span>& spans, double int8_link_rtt_ms, const Span* embedding,
                                       const Span* lm_head) {
  auto slow = [int8_link_rtt_ms](double rtt) { return int8_link_rtt_ms > 0 && rtt > int8_link_rtt_ms; };
  auto stage = [&](const Span* node, v1::Stage s) {
    if (!node) return Hop(head, endpoint, s);
    v1::RouteHop h = Hop(node->node_id, node->endpoint, s);
    if (!node->public_key.empty()) h.set_public_key(node->public_key);
    return h;
  };
  std::vector<v1::RouteHop> route;
  route.push_back(stage(embedding, v1::STAGE_EMBEDDING));
  double previous_rtt = embedding ? std::max(embedding->rtt_ms, 0.0) : 0;  // the head's link to itself: 0
  for (const Span& s : spans) {
    route.push_back(Hop(s.node_id, s.endpoint, v1::STAGE_SHARD, s.layer_begin, s.layer_end));
    if (!s.public_key.empty()) route.back().set_public_key(s.public_key);
    if (slow(previous_rtt) || slow(s.rtt_ms)) route.back().set_encoding(v1::DTYPE_INT8_BLOCK32);
    previous_rtt = s.rtt_ms;
  }
  route.push_back(stage(lm_head, v1::STAGE_LM_HEAD));
  if (slow(previous_rtt) || (lm_head && slow(lm_head->rtt_ms))) route.back().set_encoding(v1::DTYPE_INT8_BLOCK32);
  route.push_back(Hop(head, endpoint, v1::STAGE_SAMPLER));
  return route;
}

v1::Envelope SessionOpenEnvelope(uint64_t session_id, int64_t max_length, const std::string& fingerprint,
                                 int32_t rows) {
  v1::Envelope open = NewEnvelope();
  v1::SessionOpen* o = open.mutable_session_open();
  o->set_session_id(session_id);
  o->set_max_length(static_cast<uint32_t>(max_length));
  o->set_model_fingerprint(fingerprint);
  if (rows > 1) o->set_rows(static_cast<uint32_t>(rows));
  return open;
}

v1::Envelope SessionCloseEnvelope(uint64_t session_id) {
  v1::Envelope env = NewEnvelope();
  env.mutable_session_close()->set_session_id(session_id);
  return env;
}

v1::Step PrefillStep(uint64_t session_id, const std::vector<int32_t>& prompt, int64_t from,
                     const std::vector<v1::RouteHop>& route) {
  v1::Step step;
  step.set_session_id(session_id);
  step.set_first_position(static_cast<uint32_t>(from));
  step.set_token_count(static_cast<uint32_t>(static_cast<int64_t>(prompt.size()) - from));
  for (size_t i = static_cast<size_t>(from); i < prompt.size(); ++i) step.add_token_ids(prompt[i]);
  for (const v1::RouteHop& h : route) *step.add_rest_of_route() = h;
  return step;
}

}  // namespace troupe::scheduling
