#include "src/cluster/replication_setting.h"

#include <fmt/format.h>

namespace shoal::cluster {

Status CheckReplicationSetting(uint32_t replication_factor, uint32_t min_in_sync,
                               uint32_t active_nodes) {
  if (replication_factor == 0) {
    return InvalidArgumentError(fmt::format(
        "K = 0: every bucket needs at least one copy; the cluster has {} active nodes, so K can "
        "be 1 to {}",
        active_nodes, active_nodes));
  }
  if (replication_factor > active_nodes) {
    return InvalidArgumentError(fmt::format(
        "{} copies of every bucket (K = {}) need {} active nodes, one per copy; the cluster has "
        "{}, so K can be 1 to {}",
        replication_factor, replication_factor, replication_factor, active_nodes, active_nodes));
  }
  if (min_in_sync > replication_factor) {
    return InvalidArgumentError(
        fmt::format("min_in_sync {} exceeds K = {}: a write cannot need more copies than there are",
                    min_in_sync, replication_factor));
  }
  return OkStatus();
}

}  // namespace shoal::cluster
