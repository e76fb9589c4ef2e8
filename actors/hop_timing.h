// Hop timing: each stage adds its share of a step (v1::HopTime: queue wait,
// compute, send, on this node's clock) to the step it hands on, after the
// times the step brought, when the node's config has hop_timing on (the
// default); and, on or off, observes the queue wait and compute in the
// node's /metrics histograms (NodeContext::stages). The sampler turns them into the session's timeline
// (scheduling/timelines.h). Costs a few clock reads and ~30 bytes per hop.
#pragma once

#include <chrono>
#include <cstdint>

#include "actors/node_context.h"
#include "messages/troupe.pb.h"

namespace troupe::actors {

inline int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Copies `in`'s times into `next` and appends this stage's: queue from
// `arrived_ns` to `compute_begin_ns`, compute to `compute_end_ns`, send to now.
// Times before 0 (a step made here, never received) count as 0.
inline void StampHop(const v1::Step& in, v1::Step& next, const NodeContext& ctx, v1::Stage stage, int64_t arrived_ns,
                     int64_t compute_begin_ns, int64_t compute_end_ns) {
  if (stage >= 0 && static_cast<size_t>(stage) < ctx.stages.size()) {
    StageHistograms& h = ctx.stages[stage];
    if (arrived_ns > 0) h.queue_ms.Observe(static_cast<double>(compute_begin_ns - arrived_ns) / 1e6);
    h.compute_ms.Observe(static_cast<double>(compute_end_ns - compute_begin_ns) / 1e6);
  }
  if (!ctx.config.hop_timing) return;
  if (&in != &next) *next.mutable_times() = in.times();
  auto us = [](int64_t ns) { return static_cast<uint32_t>(ns > 0 ? ns / 1000 : 0); };
  v1::HopTime* t = next.add_times();
  t->set_node_id(ctx.node_id);
  t->set_stage(stage);
  t->set_queue_us(arrived_ns > 0 ? us(compute_begin_ns - arrived_ns) : 0);
  t->set_compute_us(us(compute_end_ns - compute_begin_ns));
  t->set_send_us(us(SteadyNs() - compute_end_ns));
}

}  // namespace troupe::actors
