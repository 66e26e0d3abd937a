#pragma once

// ExpectCopiesEqual: the end-of-test check that every copy of a bucket holds the same bytes
// (docs/design/replication.md §3: a backup in the configuration holds every write of its primary,
// in the primary's order). The real-process tests read every key back through a client, which
// sees one copy of each bucket; this check opens every copy.
//
// Call it with the cluster quiet: writers stopped, no move in flight (the map has no transition),
// every listed copy caught up. It SIGKILLs every node of `map` (a killed node's store recovers
// its WAL when opened), then opens each node's store in this process and compares, per
// bucket, each replica's replication position and the digest of the bucket's range (every entry,
// tombstones included) with the primary's.

#include "src/cluster/shard_map.h"
#include "tests/cluster/process_cluster.h"

namespace shoal::cluster_test {

// Adds a gtest failure per bucket whose copies differ, naming the nodes and their positions. The
// nodes of `map` are dead afterwards. Prints how many buckets and copies were compared.
void ExpectCopiesEqual(ProcessCluster& cluster, const cluster::ShardMap& map);

}  // namespace shoal::cluster_test
