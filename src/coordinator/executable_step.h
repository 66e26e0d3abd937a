#pragma once

// ExecutableStep: the step the coordinator carries out for a move the balancer planned, the one
// rule shared by the balancer rounds (BalancerLoop::BalanceOnce) and the plan preview
// (BalancerLoop::Plan), so that `shoal plan` lists the moves a change will make.
//
// Invariant (docs/design/replication.md §7): a replicated bucket's primary never goes to a copy
// being built. A planned step that would make its new copy the primary (Algorithm 2 replaced the
// primary's copy) starts as a handoff to a backup that stays in the target, is up and is not
// leaving: of those, the one that leads the fewest primaries in `led`, the first in the source
// among equals; the next plan then moves the old primary's copy as a backup's. Where no backup
// qualifies because the backups go too (two leaving nodes holding every copy of a bucket), the
// primary stays and one backup that goes is replaced by the target's incoming copy first, which
// takes the primary at a later step: a handoff between two leaving nodes would be handed back
// by the next plan, for good. Every other move is carried out as planned. None when no backup
// may take the primary now and none goes.
//
// `led` counts the primaries each node leads once the moves in flight are done (PrimariesLed)
// and the steps the caller already took this round (TakeStep): a leave then spreads the leaving
// node's primaries over its heirs, which leaves fewer handoffs to even out primaries afterwards.
//
// Pure apart from `is_down` (the failure detector's verdict); thread-safe if `is_down` is.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>

#include "src/cluster/migration_plan.h"
#include "src/cluster/shard_map.h"

namespace shoal::coordinator {

using LedPrimaries = std::map<NodeId, uint32_t>;

// Per node, the buckets it leads once the moves in flight are done (their target's primary).
[[nodiscard]] LedPrimaries PrimariesLed(const cluster::ShardMap& map);

[[nodiscard]] std::optional<cluster::MoveIntent> ExecutableStep(
    const cluster::ShardMap& map, const cluster::MoveIntent& planned,
    const std::function<bool(NodeId)>& is_down, const LedPrimaries& led);

// Counts a step the caller took into `led` (a step that changes the primary moves one).
void TakeStep(const cluster::MoveIntent& step, LedPrimaries* led);

}  // namespace shoal::coordinator
