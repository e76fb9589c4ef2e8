#include "actors/lm_head_actor.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>

#include <algorithm>
#include <vector>

#include "actors/stage_actor.h"
#include "pipeline/quant/thread_pool.h"
#include "scheduling/spot_checks.h"

namespace troupe::actors {
namespace {

// The digest of the last row of hidden states [rows, hidden] f32.
uint64_t LastRowDigest(const at::Tensor& t) {
  const at::Tensor row = t.select(0, t.size(0) - 1).contiguous();
  return scheduling::HiddenDigest(row.data_ptr<float>(), row.numel());
}

class LmHeadActor : public StageActor {
 public:
  LmHeadActor(caf::actor_config& cfg, std::shared_ptr<NodeContext> ctx) : StageActor(cfg, std::move(ctx)) {}

  const char* name() const override { return "lm_head"; }

  caf::behavior make_behavior() override {
    return {
        [this](StepMessage& m) { OnStep(m); },
        [this](flush_atom) { RunBatch(); },
        BurstHandler(),
        StartHandler(),
        RetryHandler(),
    };
  }

  void on_exit() override {
    StageActor::on_exit();
    pending_.clear();
  }

 private:
  void OnStep(StepMessage& m) {
    const int64_t hidden = ctx_->source->config().hidden;
    const at::Tensor& t = m.tensor;
    if (!t.defined() || t.dim() != 2 || t.size(0) < 1 || t.size(1) != hidden || t.scalar_type() != at::kFloat) {
      return ReportFailure(m.step.session_id(), v1::BAD_TENSOR,
                           "the LM head needs hidden states [rows, " + std::to_string(hidden) + "] f32", m.from,
                           m.request_id);
    }
    if (m.step.shadow_of() != 0) return OnShadowStep(m);
    Hold(m.step);
    pending_.push_back(std::move(m));
    ScheduleFlush();
  }

  // A spot check's shadow: only the digest of its last row goes on.
  void OnShadowStep(StepMessage& m) {
    const int64_t n = m.tensor.size(0);
    v1::Step next = std::move(m.step);
    next.set_hidden_digest(LastRowDigest(m.tensor));
    next.set_first_position(next.first_position() + static_cast<uint32_t>(n - 1));
    next.set_token_count(1);
    next.clear_hop();
    next.clear_tensor();
    next.clear_times();
    const uint64_t id = next.session_id();
    Status st = sender_.ForwardStep(std::move(next), at::Tensor());
    if (!st.ok()) ReportFailure(id, v1::UNAVAILABLE, "LM head cannot forward: " + st.ToString(), m.from);
    ScheduleRetry();
  }

  void RunBatch() {
    FlushStarted();
    std::vector<StepMessage> batch;
    const size_t max_sessions = ctx_->config.max_batch_sessions > 0 ? ctx_->config.max_batch_sessions : pending_.size();
    const size_t take = std::min(max_sessions, pending_.size());
    for (size_t i = 0; i < take; ++i) {
      Release(pending_[i].step);
      batch.push_back(std::move(pending_[i]));
    }
    pending_.erase(pending_.begin(), pending_.begin() + take);
    ScheduleFlush();
    if (batch.empty()) return;
    // Rows each step gets logits for: every row of a beam step (one per
    // beam, Step.parent_rows), else the last position's.
    auto logit_rows = [](const StepMessage& m) {
      return m.step.parent_rows_size() > 0 || m.step.all_logits() ? m.tensor.size(0) : 1;
    };
    Result<at::Tensor> logits = Status::Internal("not run");
    int64_t n_logit_rows = 0;
    const int64_t compute_begin = SteadyNs();
    try {
      std::vector<at::Tensor> rows;
      for (const StepMessage& m : batch) {
        const int64_t n = m.tensor.size(0);
        const int64_t k = logit_rows(m);
        rows.push_back(m.tensor.slice(0, n - k, n));
        n_logit_rows += k;
      }
      at::Tensor x = rows.size() == 1 ? rows[0].contiguous() : at::cat(rows, 0);
      ComputeTimer timer(ctx_->counters.compute_ns);
      logits = ctx_->lm_head->Forward(x);
    } catch (const std::exception& e) {
      logits = Status::Internal(std::string("LM head: ") + e.what());
    }
    if (!logits.ok()) {
      for (const StepMessage& m : batch) {
        ReportFailure(m.step.session_id(), v1::INTERNAL, logits.status().ToString(), m.from, m.request_id);
      }
      return;
    }
    const int64_t compute_end = SteadyNs();
    ThreadPool::Global().Park();  // the sampler and the embedding run single-threaded; the next step is a ring away
    ctx_->stages[v1::STAGE_LM_HEAD].batch_sessions.Observe(static_cast<double>(batch.size()));
    ctx_->counters.steps_total += batch.size();
    ctx_->counters.batches_total++;
    ctx_->counters.batch_rows_total += static_cast<uint64_t>(n_logit_rows);
    if (batch.size() > ctx_->counters.max_batch_sessions) ctx_->counters.max_batch_sessions = batch.size();
    std::vector<v1::Step> nexts;
    std::vector<int64_t> ks;
    for (size_t i = 0; i < batch.size(); ++i) {
      StepMessage& m = batch[i];
      const int64_t n = m.tensor.size(0);
      ks.push_back(logit_rows(m));
      v1::Step next = std::move(m.step);
      next.set_hidden_digest(LastRowDigest(m.tensor));
      if (next.parent_rows_size() == 0 && !next.all_logits()) {
        next.set_first_position(next.first_position() + static_cast<uint32_t>(n - 1));
        next.set_token_count(1);
      }
      next.clear_hop();
      next.clear_tensor();
      StampHop(next, next, *ctx_, v1::STAGE_LM_HEAD, m.arrived_ns, compute_begin, compute_end);
      nexts.push_back(std::move(next));
    }
    // The sampler keeps the burst together (and regroups it by next node).
    scheduling::TagBursts(nexts, NewBurstId());
    std::vector<uint64_t> ids;
    std::vector<at::Tensor> rows;
    int64_t r0 = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      const int64_t k = ks[i];
      ids.push_back(nexts[i].session_id());
      rows.push_back(batch.size() == 1 ? *logits : logits->slice(0, r0, r0 + k));
      r0 += k;
    }
    const std::vector<Status> sent = sender_.ForwardSteps(std::move(nexts), std::move(rows));
    for (size_t i = 0; i < batch.size(); ++i) {
      if (!sent[i].ok()) {
        ReportFailure(ids[i], v1::UNAVAILABLE, "LM head cannot forward: " + sent[i].ToString(), batch[i].from);
      }
    }
    ScheduleRetry();
  }

  std::vector<StepMessage> pending_;  // held behind gate_
};

}  // namespace

caf::actor SpawnLmHead(caf::actor_system& system, std::shared_ptr<NodeContext> ctx) {
  return system.spawn<LmHeadActor, caf::lazy_init>(std::move(ctx));
}

}  // namespace troupe::actors
