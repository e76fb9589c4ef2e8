#include "actors/embedding_actor.h"

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <vector>

#include "actors/stage_actor.h"

namespace troupe::actors {
namespace {

class EmbeddingActor : public StageActor {
 public:
  EmbeddingActor(caf::actor_config& cfg, std::shared_ptr<NodeContext> ctx) : StageActor(cfg, std::move(ctx)) {}

  const char* name() const override { return "embedding"; }

  caf::behavior make_behavior() override {
    return {
        [this](StepMessage& m) { OnStep(m); },
        StartHandler(),
        RetryHandler(),
    };
  }

 private:
  void OnStep(StepMessage& m) {
    const v1::Step& s = m.step;
    const int64_t n = s.token_ids_size();
    if (n == 0 || n != s.token_count()) {
      return ReportFailure(s.session_id(), v1::BAD_REQUEST,
                           "an embedding step needs token_count (" + std::to_string(s.token_count()) +
                               ") token ids, got " + std::to_string(n),
                           m.from, m.request_id);
    }
    // Only the shard hops: where a chunk that needs no logits ends.
    google::protobuf::RepeatedPtrField<v1::RouteHop> shards_only;
    for (const v1::RouteHop& hop : s.rest_of_route()) {
      if (hop.stage() == v1::STAGE_SHARD) *shards_only.Add() = hop;
    }
    for (int64_t begin = 0; begin < n; begin += kPrefillChunk) {
      const int64_t end = std::min(n, begin + kPrefillChunk);
      std::vector<int32_t> ids(s.token_ids().begin() + begin, s.token_ids().begin() + end);
      Result<at::Tensor> hidden = Status::Internal("not run");
      const int64_t compute_begin = SteadyNs();
      try {
        ComputeTimer timer(ctx_->counters.compute_ns);
        hidden = ctx_->embedding->Forward(ids);
      } catch (const std::exception& e) {
        hidden = Status::Internal(std::string("embedding: ") + e.what());
      }
      const int64_t compute_end = SteadyNs();
      if (!hidden.ok()) {
        return ReportFailure(s.session_id(),
                             hidden.status().code() == StatusCode::kInvalidArgument ? v1::BAD_REQUEST : v1::INTERNAL,
                             hidden.status().ToString(), m.from, m.request_id);
      }
      v1::Step next;
      next.set_session_id(s.session_id());
      const uint32_t first = s.first_position() + static_cast<uint32_t>(begin);
      next.set_first_position(first);
      next.set_token_count(static_cast<uint32_t>(end - begin));
      // A chunk before the last ends at the shards, unless every row's logits are wanted.
      *next.mutable_rest_of_route() = end == n || s.all_logits() ? s.rest_of_route() : shards_only;
      next.set_all_logits(s.all_logits());
      if (n <= kPrefillChunk) {  // one step out for one in: it stays in its burst
        next.set_burst_id(s.burst_id());
        next.set_burst_size(s.burst_size());
      }
      next.set_shadow_of(s.shadow_of());              // a spot check's shadow stays one
      *next.mutable_parent_rows() = s.parent_rows();  // a beam step: one token per row (never chunked)
      StampHop(s, next, *ctx_, v1::STAGE_EMBEDDING, begin == 0 ? m.arrived_ns : compute_begin, compute_begin,
               compute_end);
      ctx_->counters.steps_total++;
      Status st = sender_.ForwardStep(std::move(next), std::move(*hidden));
      if (!st.ok()) {
        return ReportFailure(s.session_id(), v1::UNAVAILABLE, "embedding cannot forward: " + st.ToString(), m.from,
                             m.request_id);
      }
    }
    ScheduleRetry();
  }
};

}  // namespace

caf::actor SpawnEmbedding(caf::actor_system& system, std::shared_ptr<NodeContext> ctx) {
  return system.spawn<EmbeddingActor, caf::lazy_init>(std::move(ctx));
}

}  // namespace troupe::actors
