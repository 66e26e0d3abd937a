#pragma once

// Placement metrics (pure): per-node load, the imbalance index I = σ/μ of paper 001 §5.1,
// max/mean, keys moved by a membership change against the optimum, and partition fullness
// size/Θmax of paper 001 §5.4.

#include <cstdint>
#include <span>
#include <vector>

#include "src/common/ids.h"
#include "src/partition/scheme.h"

namespace shoal::partition {

struct NodeLoad {
  NodeId node;
  uint64_t keys = 0;
  uint64_t bytes = 0;
};

// Summary of a load vector: σ is the population standard deviation (paper 001 §5.1).
struct Spread {
  double mean = 0;
  double stddev = 0;
  double min = 0;
  double max = 0;
  // σ/μ; 0 when μ = 0.
  double imbalance = 0;
  // max/μ; 0 when μ = 0.
  double max_over_mean = 0;
};

[[nodiscard]] Spread SpreadOf(std::span<const double> values);

struct LoadReport {
  std::vector<NodeLoad> per_node;  // one entry per node, sorted by node id
  Spread keys;
  Spread bytes;
};

// Load per node given each key's owner and size. `nodes` lists every node (a node that owns
// nothing still counts, with load 0); every owner must be one of them.
[[nodiscard]] LoadReport ComputeLoad(std::span<const NodeId> nodes, std::span<const NodeId> owners,
                                     std::span<const uint32_t> key_bytes);

struct MoveReport {
  uint64_t moved_keys = 0;
  uint64_t moved_bytes = 0;
  double moved_fraction = 0;    // moved keys / all keys
  double optimal_fraction = 0;  // see OptimalMovedFraction
};

// The least fraction of keys any scheme must move to go from `before` to `after` with an even
// share per node: 1 - |kept nodes| / max(|before|, |after|). Adding k nodes to n gives k/(n+k)
// (1/(n+1) for one), removing k of n gives k/n.
[[nodiscard]] double OptimalMovedFraction(std::span<const NodeId> before,
                                          std::span<const NodeId> after);

// Keys whose owner differs between `owners_before` and `owners_after` (same key order).
[[nodiscard]] MoveReport CountMoves(std::span<const NodeId> owners_before,
                                    std::span<const NodeId> owners_after,
                                    std::span<const uint32_t> key_bytes,
                                    std::span<const NodeId> nodes_before,
                                    std::span<const NodeId> nodes_after);

// Fullness = partition bytes / Θmax over the partitions a scheme reports (paper 001 §5.4).
struct FullnessReport {
  size_t partitions = 0;
  Spread fullness;
};
[[nodiscard]] FullnessReport ComputeFullness(std::span<const PartitionInfo> partitions,
                                             uint64_t theta_max_bytes);

}  // namespace shoal::partition
