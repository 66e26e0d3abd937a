#pragma once

// Shoal.Admin at the coordinator: add and remove nodes, plan, rebalance, progress. Every
// answer carries the progress of the moves, so a caller can draw a progress line from any reply.
//
// Thread-safety: as the Coordinator's admin methods (any outside thread).

#include "proto/shoal.pb.h"
#include "src/coordinator/coordinator.h"

namespace shoal::net {

void HandleAdmin(coordinator::Coordinator& coordinator, const wire::AdminRequest& request,
                 wire::AdminResponse* out);

}  // namespace shoal::net
