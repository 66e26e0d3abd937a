#pragma once

// ShardMap: the immutable, epoch-stamped map from the hash space to buckets and from buckets to
// the nodes that hold them (ARCHITECTURE.md §1, docs/design/shard-map.md).
//
// Contract (checked by CheckInvariants, which every constructor runs):
//   - TOTAL: the buckets, sorted by begin, cover [0, 2^64) with no gap and no overlap; the map can
//     never be partial. Lookup(point) always finds exactly one bucket.
//   - Every bucket has a distinct BucketId and 1..K distinct replicas (primary first), each a
//     member node. Fewer than K replicas means under-replicated (to be repaired, paper 001 §3.2
//     rule 2); more than K is rejected.
//   - An in-flight move is a BucketTransition kept BESIDE the stable replicas, never overwriting
//     them: before its commit the stable replicas equal the transition's source, from the commit
//     on they equal its destination. Rolling back is dropping the transition. Move ids are
//     distinct. Only storable stages (transition.h) appear.
//   - The epoch is at least 1 and changes only through Apply (shard_map_edit.h), by exactly one.
//   - Every bucket's term is in [1, epoch]; 1 <= min_in_sync <= K (docs/design/replication.md
//     §2: the term is the epoch at which the bucket's primary was appointed; min_in_sync is the
//     fewest in-sync copies a write may be acknowledged with).
//
// Readers share a std::shared_ptr<const ShardMap> and never lock: the object is immutable after
// construction, so every const method is thread-safe.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "src/cluster/bucket_range.h"
#include "src/cluster/transition.h"
#include "src/common/ids.h"
#include "src/common/point.h"
#include "src/common/status.h"

namespace shoal::cluster {

// Membership state of a node.
enum class NodeState : uint8_t {
  kActive = 0,   // may receive buckets
  kLeaving = 1,  // decommissioning (paper 001 §3.3): receives nothing, its buckets are drained
};
[[nodiscard]] std::string_view ToString(NodeState state);

struct NodeInfo {
  NodeId id;
  NodeState state = NodeState::kActive;
  // The store incarnation (BucketStore::store_id) whose copies the map lists; 0 = not bound yet.
  uint64_t store_id = 0;
  friend bool operator==(const NodeInfo&, const NodeInfo&) = default;
};

// One bucket: its range, its stable replicas and, when moving, its transition.
struct BucketPlacement {
  BucketId id;
  BucketRange range;
  std::vector<NodeId> replicas;                // stable placement, primary first
  std::optional<BucketTransition> transition;  // the in-flight move, beside `replicas`
  Term term{1};                                // the epoch at which replicas[0] became primary

  // The replicas the bucket will have once its move (if any) completes: the destination of a
  // transition, else the stable replicas. Planners treat moves in flight as done with this.
  [[nodiscard]] const std::vector<NodeId>& TargetReplicas() const {
    return transition.has_value() ? transition->destination : replicas;
  }
  [[nodiscard]] bool HasReplica(NodeId node) const;
  [[nodiscard]] std::string DebugString() const;
  friend bool operator==(const BucketPlacement&, const BucketPlacement&) = default;
};

// The node that serves reads and acknowledges writes of `bucket` at its map's epoch: the primary
// of the one replica set that acknowledges writes in the transition's stage and mode
// (WriteRouting), else the first stable replica. Clients route every single-key request here.
[[nodiscard]] NodeId OwnerOf(const BucketPlacement& bucket);

class ShardMap {
 public:
  struct InitialOptions {
    std::vector<NodeId> nodes;        // non-empty, distinct
    uint32_t bucket_count = 1;        // >= 1; equal ranges
    uint32_t replication_factor = 1;  // K, 1 <= K <= nodes.size()
    uint32_t min_in_sync = 0;         // 1..K; 0 = DefaultMinInSync(K)
  };
  // A majority of K: floor(K / 2) + 1.
  [[nodiscard]] static uint32_t DefaultMinInSync(uint32_t replication_factor) {
    return replication_factor / 2 + 1;
  }
  // The first map, epoch e1: bucket_count equal ranges with ids b0, b1, ... in point order,
  // replicas of bucket i = nodes (sorted) i, i+1, ..., i+K-1 modulo n.
  [[nodiscard]] static StatusOr<ShardMap> Initial(const InitialOptions& options);

  // A map from its parts (nodes and buckets in any order; they are sorted). InvalidArgument if
  // the result would violate the contract above. min_in_sync 0 = DefaultMinInSync(K).
  [[nodiscard]] static StatusOr<ShardMap> Create(MapEpoch epoch, uint32_t replication_factor,
                                                 std::vector<NodeInfo> nodes,
                                                 std::vector<BucketPlacement> buckets,
                                                 uint32_t min_in_sync = 0);

  [[nodiscard]] MapEpoch epoch() const { return epoch_; }
  [[nodiscard]] uint32_t replication_factor() const { return replication_factor_; }
  [[nodiscard]] uint32_t min_in_sync() const { return min_in_sync_; }
  // Sorted by id.
  [[nodiscard]] std::span<const NodeInfo> nodes() const { return nodes_; }
  // Sorted by range begin; covers the hash space.
  [[nodiscard]] std::span<const BucketPlacement> buckets() const { return buckets_; }

  // The bucket holding `point` (binary search, O(log buckets)).
  [[nodiscard]] const BucketPlacement& Lookup(Point point) const;
  // The bucket with `id`, or nullptr.
  [[nodiscard]] const BucketPlacement* Find(BucketId id) const;
  // Position of bucket `id` in buckets(), or none.
  [[nodiscard]] std::optional<size_t> IndexOf(BucketId id) const;

  [[nodiscard]] const NodeInfo* FindNode(NodeId node) const;
  [[nodiscard]] bool HasNode(NodeId node) const { return FindNode(node) != nullptr; }
  // Nodes in state kActive, sorted.
  [[nodiscard]] std::vector<NodeId> ActiveNodes() const;
  // Buckets whose stable replicas include `node`, in point order.
  [[nodiscard]] std::vector<BucketId> BucketsOf(NodeId node) const;
  // Buckets whose TargetReplicas include `node` (moves in flight counted as done).
  [[nodiscard]] std::vector<BucketId> TargetBucketsOf(NodeId node) const;
  // Number of buckets with a transition; number of transitions `node` takes part in.
  [[nodiscard]] size_t TransitionCount() const;
  [[nodiscard]] size_t TransitionCountOf(NodeId node) const;
  // One more than the largest bucket id (an id no bucket uses).
  [[nodiscard]] BucketId NextBucketId() const;
  // One more than the largest move id of a transition in the map (m1 when none).
  [[nodiscard]] MoveId NextMoveId() const;

  [[nodiscard]] Status CheckInvariants() const;
  // Multi-line: the epoch, K, nodes, then one line per bucket.
  [[nodiscard]] std::string DebugString() const;

  friend bool operator==(const ShardMap& a, const ShardMap& b) {
    return a.epoch_ == b.epoch_ && a.replication_factor_ == b.replication_factor_ &&
           a.min_in_sync_ == b.min_in_sync_ && a.nodes_ == b.nodes_ && a.buckets_ == b.buckets_;
  }

 private:
  ShardMap(MapEpoch epoch, uint32_t replication_factor, uint32_t min_in_sync,
           std::vector<NodeInfo> nodes, std::vector<BucketPlacement> buckets);

  MapEpoch epoch_;
  uint32_t replication_factor_ = 1;
  uint32_t min_in_sync_ = 1;
  std::vector<NodeInfo> nodes_;                  // sorted by id, distinct
  std::vector<BucketPlacement> buckets_;         // sorted by begin, total
  absl::flat_hash_map<BucketId, size_t> by_id_;  // id -> index in buckets_
};

using ShardMapPtr = std::shared_ptr<const ShardMap>;

}  // namespace shoal::cluster
