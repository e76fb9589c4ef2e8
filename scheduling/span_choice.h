// SpanChoice: which layers a node started with `layers: auto` serves — the
// span that most raises the cluster's weakest coverage within the node's
// memory (Petals' block selection is the model).
//
// Routes go through spans that meet end to end (scheduling/registry.h), so
// the candidates are spans between the boundaries that live nodes' spans
// already have (0, n_layers, every begin and end), no longer than the node
// holds; only when no such span fits does a node take as many layers as it
// holds from a boundary on (making a new boundary the next node can fill
// from). Among candidates the best has the lowest smallest replica count,
// then the most layers at that count, then the smallest replica counts
// sorted ascending (lexicographic), then the lowest begin. So a node fills
// a gap before it adds a replica, and the gap it closes completely before
// part of a wider one; in a cluster with every layer served once it takes
// the span with the fewest replicas.
//
// Moving: a node that chose its span may later find the cluster lopsided
// (nodes died or left, so some layers have far fewer replicas than the
// ones it serves). BetterSpan says where it should go: the span ChooseSpan
// gives for the cluster without this node, when taking it raises the
// cluster's weakest coverage strictly above what it is with the node where
// it is (Petals rebalances on its throughput estimate the same way). So a
// node never moves into a tie, and never opens a gap where it leaves.
//
// Plain functions; no sockets or actors.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "pipeline/status.h"

namespace troupe::scheduling {

// What a process needs beyond its layers' weights and its KV cache budget
// (runtime, libraries, step buffers): an estimate.
constexpr uint64_t kNodeOverheadBytes = uint64_t{96} << 20;

// How many layers a node may serve: (memory_budget - cache_budget -
// overhead) / the largest layer's bytes, at most the model's layers.
// InvalidArgument naming the figures when not even one layer fits.
Result<int64_t> LayersThatFit(const std::vector<uint64_t>& layer_bytes, uint64_t memory_budget_bytes,
                              uint64_t cache_budget_bytes);

struct LayerSpan {
  int64_t begin = 0, end = 0;
};

// `replicas[i]`: live nodes serving layer i now; `spans`: their spans.
// `max_layers` >= 1. An empty model gives {0, 0}. `prefer`, when it is one
// of the best candidates, wins their tie instead of the lowest begin: a node
// that drained to move there takes it even when another node moved away at
// the same moment and left the two spans equal (both would otherwise take
// the lower one, and both move back).
LayerSpan ChooseSpan(const std::vector<uint32_t>& replicas, const std::vector<LayerSpan>& spans, int64_t max_layers,
                     std::optional<LayerSpan> prefer = std::nullopt);

// `replicas` and `spans` count this node, serving `current`. nullopt: stay.
std::optional<LayerSpan> BetterSpan(const std::vector<uint32_t>& replicas, const std::vector<LayerSpan>& spans,
                                    LayerSpan current, int64_t max_layers);

// The lowest replica count over all layers (0 for an empty model).
uint32_t WeakestCoverage(const std::vector<uint32_t>& replicas);

}  // namespace troupe::scheduling
