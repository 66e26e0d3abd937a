#pragma once

// The copies held outside their buckets' replicas in `shoal status`: per node, how many it
// holds; per bucket short of copies or whose primary is unreachable, its holders with their
// positions, most advanced first, so that the operator can pick a `shoal force-primary` target
// when every replica is lost (docs/design/replication.md §4.6, §6.1 "Copies outside the
// replicas"). The holders come from the coordinator's progress answer (AdminResponse.
// held_copies); which nodes are unreachable, from the status command's own calls. Pure
// functions; thread-safe.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "proto/shoal.pb.h"
#include "src/cluster/shard_map.h"
#include "src/common/ids.h"
#include "src/storage/replica_position.h"

namespace shoal::tools {

// A copy of `bucket` that `node` holds outside the bucket's replicas, at `position`.
struct HeldCopyRow {
  BucketId bucket;
  NodeId node;
  storage::ReplicaPosition position;
};

// The rows of a progress answer, in its order (by bucket, the most advanced copy first).
[[nodiscard]] std::vector<HeldCopyRow> HeldCopyRows(const wire::AdminResponse& answer);

// Per node, the copies it holds outside the replicas.
[[nodiscard]] std::map<NodeId, uint64_t> HeldCopiesPerNode(const std::vector<HeldCopyRow>& rows);

// A bucket that needs the operator's eye: fewer than K copies, or a replica the status command
// could not reach (the primary: unavailable until a failover; a backup: writes wait until it is
// dropped), with its holders. Below min_in_sync counts the reachable replicas: writes are
// refused until a copy returns or is rebuilt.
struct DegradedBucket {
  BucketId bucket;
  std::vector<NodeId> replicas;  // primary first
  bool under_replicated = false;
  bool below_min_in_sync = false;
  bool primary_unreachable = false;
  std::vector<NodeId> unreachable_backups;
  std::vector<HeldCopyRow> held;  // the most advanced first
};

// The degraded buckets of a replicated `map` (none at K = 1), in map order.
[[nodiscard]] std::vector<DegradedBucket> DegradedBuckets(const cluster::ShardMap& map,
                                                          const std::set<NodeId>& unreachable,
                                                          const std::vector<HeldCopyRow>& rows);

[[nodiscard]] nlohmann::json DegradedBucketsJson(const std::vector<DegradedBucket>& buckets);
// One line per bucket, e.g. "  bucket 3: 2 of 3 copies, primary unreachable; replicas 1,2;
// held by 4 (term 7, rseq 120), 5 (term 6, rseq 88)" or "  bucket 4: backup 3 unreachable,
// below min_in_sync; replicas 1,3; held by no other node".
[[nodiscard]] std::string FormatDegradedBuckets(const std::vector<DegradedBucket>& buckets,
                                                uint32_t replication_factor);

}  // namespace shoal::tools
