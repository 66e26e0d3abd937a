#pragma once

// Shoal.Admin at the coordinator: add and remove nodes, plan, rebalance, progress, the split and
// merge thresholds. Every answer carries the progress of the moves and the thresholds, so a caller
// can draw a progress line (or show the thresholds) from any reply; a progress answer also lists
// the copies held outside their buckets' replicas (`shoal status`).
//
// Thread-safety: as the Coordinator's admin methods (any outside thread).

#include "proto/shoal.pb.h"
#include "src/coordinator/coordinator.h"

namespace shoal::process {

void HandleAdmin(coordinator::Coordinator& coordinator, const wire::AdminRequest& request,
                 wire::AdminResponse* out);

}  // namespace shoal::process
