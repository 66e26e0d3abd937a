#include "tests/cluster/copy_check.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "src/storage/bucket_store.h"
#include "src/storage/store_options.h"
#include "src/transport/point_ranges.h"

namespace shoal::cluster_test {
namespace {

// What one copy of a bucket holds.
struct Copy {
  storage::ReplicaPosition position;
  uint64_t digest = 0;
};

}  // namespace

void ExpectCopiesEqual(ProcessCluster& cluster, const cluster::ShardMap& map) {
  std::set<NodeId> nodes;
  for (const auto& bucket : map.buckets()) {
    EXPECT_FALSE(bucket.transition.has_value())
        << "copies compared while a move is in flight: " << bucket.DebugString();
    nodes.insert(bucket.replicas.begin(), bucket.replicas.end());
  }
  for (NodeId node : nodes) cluster.Kill(node.value());

  // node -> bucket -> its copy there.
  std::map<NodeId, std::map<BucketId, Copy>> held;
  for (NodeId node : nodes) {
    storage::StoreOptions options;
    options.path = fmt::format("{}/node-{}/store", cluster.dir(), node.value());
    options.create_if_missing = false;
    options.check_ownership = false;
    options.min_free_disk_bytes = 0;
    auto store = storage::BucketStore::Open(options);
    if (!store.ok()) {
      ADD_FAILURE() << "cannot open the store of " << node.DebugString() << ": " << store.status();
      continue;
    }
    for (const auto& bucket : map.buckets()) {
      if (!bucket.HasReplica(node)) continue;
      auto digest = (*store)->DigestRange(transport::ToPointRange(bucket.range));
      if (!digest.ok()) {
        ADD_FAILURE() << "digest of " << bucket.id.DebugString() << " on " << node.DebugString()
                      << ": " << digest.status();
        continue;
      }
      held[node][bucket.id] = Copy{(*store)->GetReplicaState(bucket.id).position, *digest};
    }
    EXPECT_TRUE((*store)->Close().ok());
  }

  size_t copies = 0;
  for (const auto& bucket : map.buckets()) {
    const NodeId primary = bucket.replicas.front();
    if (!held[primary].contains(bucket.id)) continue;
    const Copy& reference = held[primary][bucket.id];
    for (NodeId node : bucket.replicas) {
      if (!held[node].contains(bucket.id)) continue;
      ++copies;
      const Copy& copy = held[node][bucket.id];
      EXPECT_TRUE(copy.position == reference.position && copy.digest == reference.digest)
          << bucket.id.DebugString() << ": the copy on " << node.DebugString() << " is at "
          << copy.position.DebugString() << " with digest " << fmt::format("{:016x}", copy.digest)
          << ", its primary " << primary.DebugString() << " at " << reference.position.DebugString()
          << " with digest " << fmt::format("{:016x}", reference.digest);
    }
  }
  fmt::print("copies compared: {} of {} buckets on {} nodes\n", copies, map.buckets().size(),
             nodes.size());
  std::fflush(stdout);
}

}  // namespace shoal::cluster_test
