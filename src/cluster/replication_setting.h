#pragma once

#include <cstdint>

#include "src/common/status.h"

namespace shoal::cluster {

// The one check of a replication setting against the nodes that would hold the copies: K
// (replication_factor) copies of a bucket go to K different active nodes, and a write needs
// min_in_sync of them (0 = the default, a majority of K). The first map, the map edit that
// changes K and the coordinator's admin call all ask it, so an operator gets one message in
// their own words whichever way they asked. Pure; thread-safe.
[[nodiscard]] Status CheckReplicationSetting(uint32_t replication_factor, uint32_t min_in_sync,
                                             uint32_t active_nodes);

}  // namespace shoal::cluster
