#pragma once

// HeldCopies: the copies of replicated buckets that nodes hold outside the buckets' replicas, as
// each node's latest load report names them (transport::HeldCopy: a backup removed while its
// node was down, a copy replaced elsewhere whose drop did not get through, a destination whose
// move aborted before it replaced its copy; with position 0, data that vouches for nothing, such
// as an aborted ingest's whose drop did not get through), and the two rules that use them
// (docs/design/replication.md §6.1, "Copies outside the replicas"):
//   - Holders(map): per bucket, the nodes holding a copy of the bucket's range in `map` with a
//     position: a repair prefers them (cluster::BalancerOptions::held_copies), since such a copy
//     may resume from the primary's log; Copies(map) adds each copy's position, for the status
//     answer;
//   - TakeStale(map, down, now): the copies to drop. A bucket is WHOLE when it has K replicas,
//     none of them down, and no transition. A copy is stale once its bucket has been whole for
//     `grace` without a break, as this coordinator's rounds saw it (a round that finds the
//     bucket not whole starts the clock again).
//
// Invariant: no copy is taken for a drop while its bucket is short of copies, has a replica that
// is down, or moves, nor within `grace` of that: such copies are what a repair prefers and what
// `shoal force-primary` may need when every replica is lost (§4.6). The coordinator commands the
// drop (DropBucketRequest at the map's epoch) because it alone knows the map and who is down;
// the node refuses a drop of a range its map at that epoch or later shows it serving or
// receiving, so a drop racing a move to that node deletes nothing the move needs (R8).
//
// Thread-safety: thread-safe.

#include <map>
#include <optional>
#include <set>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/cluster/shard_map.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/storage/point_range.h"
#include "src/storage/replica_position.h"
#include "src/transport/messages.h"
#include "src/transport/runtime.h"

namespace shoal::coordinator {

class HeldCopies {
 public:
  explicit HeldCopies(transport::Micros grace) : grace_(grace) {}

  // `node`'s latest report replaces its earlier one; a copy named again keeps its clock.
  void Record(NodeId node, const std::vector<transport::HeldCopy>& held);
  // A node outside a bucket's replicas that reports a copy of the bucket's range, and the copy's
  // position as last reported.
  struct Holder {
    NodeId node;
    storage::ReplicaPosition position;
  };
  // Per bucket of `map`, its holders, most advanced copy first (ties by node): what `shoal
  // status` shows the operator choosing a `force-primary` target.
  [[nodiscard]] std::map<BucketId, std::vector<Holder>> Copies(const cluster::ShardMap& map) const;
  // Per bucket of `map`, the nodes of Copies(map), in node order.
  [[nodiscard]] std::map<BucketId, std::vector<NodeId>> Holders(const cluster::ShardMap& map) const;

  struct Stale {
    NodeId node;
    BucketId bucket;
    storage::PointRange range;
    storage::ReplicaPosition position;
  };
  // The stale copies of `map` at `now`, nodes in `down` left out; also moves the clocks, so one
  // call per round.
  [[nodiscard]] std::vector<Stale> TakeStale(const cluster::ShardMap& map,
                                             const std::set<NodeId>& down, transport::Micros now);
  // `node` dropped its copy of `bucket`: forgotten until a report names it again.
  void Dropped(NodeId node, BucketId bucket);

 private:
  struct Entry {
    storage::PointRange range;
    storage::ReplicaPosition position;
    std::optional<transport::Micros> whole_since;  // the bucket whole since then, unbroken
  };

  const transport::Micros grace_;
  mutable absl::Mutex mu_;
  std::map<NodeId, std::map<BucketId, Entry>> held_ ABSL_GUARDED_BY(mu_);
};

// Whether `node` may be forced primary of `placement` (`shoal force-primary`, §4.6): a replica
// of the bucket, or a node that reported a copy of it outside the replicas (`holders`, the
// bucket's Copies), or any member when no node reported one (the bucket then goes on from what
// `node` holds, possibly nothing). kFailedPrecondition naming the holders when `node` reported
// no copy and others did: a mistyped node would throw their data away.
[[nodiscard]] Status CheckForceTarget(const cluster::BucketPlacement& placement, NodeId node,
                                      const std::vector<HeldCopies::Holder>& holders);

}  // namespace shoal::coordinator
