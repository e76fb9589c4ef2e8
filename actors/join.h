// Join: what a shard started with `layers: auto` does before it loads any
// layer — it opens its model's header, asks the head which layers are
// served (a CoverageQuery over a node link with this node's keys, answered
// with a Coverage or, when the models differ, WRONG_MODEL naming both), and
// picks its span with scheduling/span_choice.h within its memory budget
// (config memory_budget_bytes, else 90% of MemAvailable).
//
// The head may not be up yet: the question is repeated every 2 s until
// `wait` has passed, and the node says so on stderr once. Errors: the
// head's refusal (its text), DeadlineExceeded naming the head's endpoint,
// InvalidArgument when the budget holds no layer.
//
// Later, while it serves, such a node asks again now and then (CheckMove):
// when the cluster has become lopsided (scheduling::BetterSpan) it drains and
// starts again, choosing anew (node.h: RunNode).
#pragma once

#include <chrono>
#include <functional>
#include <optional>

#include "cluster/node_config.h"
#include "pipeline/status.h"
#include "scheduling/span_choice.h"

namespace troupe::actors {

// `stopping` is asked between tries: true gives up (kCancelled). `prefer`:
// the span a node moving chose before it drained (ChooseSpan's tie-break).
Result<scheduling::LayerSpan> ChooseLayers(const cluster::NodeConfig& config, std::chrono::seconds wait,
                                           const std::function<bool()>& stopping,
                                           std::optional<scheduling::LayerSpan> prefer = std::nullopt);

// A better span for a node serving config.layer_begin..layer_end, and the
// cluster's weakest coverage now and after the move.
struct Move {
  scheduling::LayerSpan to;
  uint32_t weakest_now = 0, weakest_after = 0;
};

// One CoverageQuery (2 s): a Move when the node should go, nullopt when it
// should stay; Unavailable when the head did not answer (stay, ask later).
Result<std::optional<Move>> CheckMove(const cluster::NodeConfig& config);

// 90% of MemAvailable from /proc/meminfo; 0 when it cannot be read.
uint64_t DefaultMemoryBudget();

}  // namespace troupe::actors
