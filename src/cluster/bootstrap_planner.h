#pragma once

// Planners for a node that joins (two-phase bootstrapping, paper 001 §3.2) and a node that leaves
// (decommissioning, paper 001 §3.3). Pure functions of (ShardMap, LoadReport, options) that treat
// moves in flight as done (a moving bucket counts at its destination and is never re-planned);
// planning again after the moves are applied continues where the last plan ended.
//
// Paper 001 §3.2 placement rules, as applied here:
//   Rule 1: moving buckets are not split and splitting buckets are not moved (a bucket with a
//     transition is never chosen; splits are separate edits).
//   Rule 2: a bucket keeps its replica count: a move replaces one replica in place (same slot,
//     so the primary stays primary), and never onto a node already holding the bucket.
//   Rule 3: heavily loaded nodes give first (sorted by utilization, highest first).
//   Rule 4: with R̄ = total replicas / (n + 1), the new node takes no more than R̄ replicas and a
//     node gives only while it holds more than R̄.
// Which bucket a node gives: its buckets sorted by EMA hit count (EmaUpdate), traversed from the
// middle (then wrapping), first one the destination does not already hold: neither the hottest
// nor the coldest, which would destabilize the system (paper 001 §3.2).
//
// Free space: a node never receives a bucket beyond its LoadReport::node_room_bytes (less the
// moves in flight to it and those of the plan); the decommission planner prefers nodes with room
// and, when none has room, still places the replica (it must leave).
//
// Thread-safe (no state).

#include <cstdint>

#include "src/cluster/migration_plan.h"
#include "src/cluster/shard_map.h"

namespace shoal::cluster {

// Paper 001 Equation 3: H_t = α h_{t-1} + (1 - α) H_{t-1}, the exponential moving average of
// a bucket's hit count; `hits` is the count of the last period, α in [0, 1] (clamped).
[[nodiscard]] double EmaUpdate(double previous_ema, double hits, double alpha);

struct BootstrapOptions {
  // A node is heavily loaded when its utilization is above `heavy_utilization` and at least
  // (1 + heavy_above_average) times the average utilization of the existing nodes.
  double heavy_utilization = 0.5;
  double heavy_above_average = 0.2;
  // Share of a heavy node's buckets handed over in pre-bootstrapping (at least one).
  double pre_bootstrap_share = 0.1;
  // Pre-bootstrap moves made even when no node is heavy (or the heavy ones gave fewer), one per
  // node from the most loaded (rule 3), within rule 4. Paper 001 §3.2 hands over buckets only
  // from heavy nodes; in a balanced cluster that would leave the new node serving nothing until
  // its first copy-then-switch move commits, a time that grows with the bucket size. One
  // switch-then-copy move makes it serve at once whatever the data size. 0 = the paper's rule.
  uint32_t min_pre_bootstrap_moves = 1;
  // Pre-bootstrapping relieves load at once: switch-then-copy by default.
  TransitionMode pre_bootstrap_mode = TransitionMode::kSwitchThenCopy;
  TransitionMode post_bootstrap_mode = TransitionMode::kCopyThenSwitch;
  // Most moves one PostBootstrap plan returns; 0 = as many as rule 4 allows.
  uint32_t max_post_bootstrap_moves = 0;
};

class BootstrapPlanner {
 public:
  // Phase 1: each heavily loaded node gives about options.pre_bootstrap_share of its buckets to
  // `new_node`, within rule 4; then, up to options.min_pre_bootstrap_moves in all, the most
  // loaded nodes give one bucket each. NotFound / FailedPrecondition if `new_node` is not an active
  // member.
  [[nodiscard]] static StatusOr<MigrationPlan> PreBootstrap(const ShardMap& map,
                                                            const LoadReport& load, NodeId new_node,
                                                            const BootstrapOptions& options);
  // Phase 2: `new_node` pulls buckets from the nodes sorted by rule 3, one per node per round,
  // until it holds about R̄ (rule 4). Empty once the new node is at the average.
  [[nodiscard]] static StatusOr<MigrationPlan> PostBootstrap(const ShardMap& map,
                                                             const LoadReport& load,
                                                             NodeId new_node,
                                                             const BootstrapOptions& options);
};

struct DecommissionOptions {
  TransitionMode mode = TransitionMode::kCopyThenSwitch;
};

class DecommissionPlanner {
 public:
  // Every bucket replica on `leaving` goes to the least loaded remaining active node (bytes held,
  // counting the moves of this plan; ties to the lower id) that does not hold the bucket yet.
  // FailedPrecondition if some bucket has nowhere to go (rule 2 would break).
  [[nodiscard]] static StatusOr<MigrationPlan> Plan(const ShardMap& map, const LoadReport& load,
                                                    NodeId leaving,
                                                    const DecommissionOptions& options = {});
};

}  // namespace shoal::cluster
