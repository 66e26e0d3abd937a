#pragma once

// ExecutableStep: the step the coordinator carries out for a move the balancer planned, the one
// rule shared by the balancer rounds (BalancerLoop::BalanceOnce) and the plan preview
// (BalancerLoop::Plan), so that `shoal plan` lists the moves a change will make.
//
// Invariant (docs/design/replication.md §7): a replicated bucket's primary never goes to a copy
// being built. A planned step that would make its new copy the primary (Algorithm 2 replaced the
// primary's copy) starts as a handoff to the first backup that stays in the target and is up;
// the next plan then moves the old primary's copy as a backup's. Every other move is carried out
// as planned. None when no backup may take the primary now.
//
// Pure apart from `is_down` (the failure detector's verdict); thread-safe if `is_down` is.

#include <functional>
#include <optional>

#include "src/cluster/migration_plan.h"
#include "src/cluster/shard_map.h"

namespace shoal::coordinator {

[[nodiscard]] std::optional<cluster::MoveIntent> ExecutableStep(
    const cluster::ShardMap& map, const cluster::MoveIntent& planned,
    const std::function<bool(NodeId)>& is_down);

}  // namespace shoal::coordinator
