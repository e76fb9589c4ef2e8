#include "actors/embedding_actor.h"

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "actors/stage_actor.h"

namespace troupe::actors {
namespace {

class EmbeddingActor;
using EmbeddingInline = ActorInline<EmbeddingActor>;  // its lone steps on the sending actor's thread

class EmbeddingActor : public StageActor {
 public:
  EmbeddingActor(caf::actor_config& cfg, std::shared_ptr<NodeContext> ctx, std::shared_ptr<EmbeddingInline> here)
      : StageActor(cfg, std::move(ctx)), here_(std::move(here)) {}

  const char* name() const override { return "embedding"; }

  caf::behavior make_behavior() override {
    {
      std::lock_guard<std::mutex> lock(here_->mu);
      here_->actor = this;
    }
    return {
        [this](StepMessage& m) { Locked([&] { OnStep(m); }); },
        [this](flush_atom) { Locked([&] { RunHeld(); }); },
        [this](burst_atom) { Locked([&] { OnBurst(); }); },
        [this](retry_atom) { Locked([&] { OnRetry(); }); },
        StartHandler(),
    };
  }

  void on_exit() override {
    std::lock_guard<std::mutex> lock(here_->mu);
    here_->actor = nullptr;
    StageActor::on_exit();
    pending_.clear();
  }

  // EmbeddingInline::TryRun, with here_->mu held, on the sending stage's
  // thread: a lone step (no burst, none held) while nothing waits to be
  // resent, so the order of what this stage sends stays the actor's.
  bool RunHere(StepMessage& m) {
    if (m.step.burst_size() > 1 || gate_.held() > 0 || sender_.HasQueued()) return false;
    const OffActor off_actor(*this);
    OnStep(m);  // alone: embedded and sent at once
    ctx_->counters.inline_steps_total++;
    return true;
  }

 private:
  template <typename F>
  void Locked(F&& f) {
    std::lock_guard<std::mutex> lock(here_->mu);
    f();
  }

  void OnStep(StepMessage& m) {
    if (m.step.burst_size() <= 1 && gate_.held() == 0) {  // alone: at once
      std::vector<StepMessage> one;
      one.push_back(std::move(m));
      return Embed(one);
    }
    Hold(m.step);
    pending_.push_back(std::move(m));
    ScheduleFlush();
  }

  void RunHeld() {
    FlushStarted();
    std::vector<StepMessage> batch = std::move(pending_);
    pending_.clear();
    for (const StepMessage& m : batch) Release(m.step);
    Embed(batch);
    ScheduleFlush();
  }

  // Embeds each step (a long prompt in chunks) and sends them all on
  // together: those for one node leave as one message.
  void Embed(std::vector<StepMessage>& batch) {
    std::vector<v1::Step> nexts;
    std::vector<at::Tensor> hiddens;
    std::vector<size_t> owner;  // index into batch of each next step
    for (size_t b = 0; b < batch.size(); ++b) {
      if (!EmbedOne(batch[b], &nexts, &hiddens)) continue;
      owner.resize(nexts.size(), b);
    }
    const std::vector<Status> sent = sender_.ForwardSteps(std::move(nexts), std::move(hiddens));
    std::vector<bool> failed(batch.size(), false);
    for (size_t i = 0; i < sent.size(); ++i) {
      const StepMessage& m = batch[owner[i]];
      if (sent[i].ok() || failed[owner[i]]) continue;
      failed[owner[i]] = true;
      ReportFailure(m.step.session_id(), v1::UNAVAILABLE, "embedding cannot forward: " + sent[i].ToString(), m.from,
                    m.request_id);
    }
    ScheduleRetry();
  }

  // Appends the steps (and hidden states) that `m` becomes, or reports its
  // failure and appends nothing (false).
  bool EmbedOne(StepMessage& m, std::vector<v1::Step>* nexts, std::vector<at::Tensor>* hiddens) {
    const v1::Step& s = m.step;
    const int64_t n = s.token_ids_size();
    if (n == 0 || n != s.token_count()) {
      ReportFailure(s.session_id(), v1::BAD_REQUEST,
                    "an embedding step needs token_count (" + std::to_string(s.token_count()) + ") token ids, got " +
                        std::to_string(n),
                    m.from, m.request_id);
      return false;
    }
    // Only the shard hops: where a chunk that needs no logits ends.
    google::protobuf::RepeatedPtrField<v1::RouteHop> shards_only;
    for (const v1::RouteHop& hop : s.rest_of_route()) {
      if (hop.stage() == v1::STAGE_SHARD) *shards_only.Add() = hop;
    }
    const size_t first_out = nexts->size();
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
        nexts->resize(first_out);  // none of this step's chunks go
        hiddens->resize(first_out);
        ReportFailure(s.session_id(),
                      hidden.status().code() == StatusCode::kInvalidArgument ? v1::BAD_REQUEST : v1::INTERNAL,
                      hidden.status().ToString(), m.from, m.request_id);
        return false;
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
      nexts->push_back(std::move(next));
      hiddens->push_back(std::move(*hidden));
    }
    return true;
  }

  std::shared_ptr<EmbeddingInline> here_;
  std::vector<StepMessage> pending_;  // held behind gate_
};

}  // namespace

caf::actor SpawnEmbedding(caf::actor_system& system, std::shared_ptr<NodeContext> ctx) {
  auto here = std::make_shared<EmbeddingInline>();
  ctx->inline_embedding = here;
  return system.spawn<EmbeddingActor, caf::lazy_init>(std::move(ctx), std::move(here));
}

}  // namespace troupe::actors
