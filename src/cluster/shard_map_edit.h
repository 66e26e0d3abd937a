#pragma once

// ShardMapEdit: one change of the ShardMap, as a value (the LevelDB VersionEdit idea,
// CONVENTIONS.md "immutable map + edits"). The coordinator builds an edit against the map of
// `base_epoch`, makes it durable (Encode), and Apply turns map(base_epoch) into map(base_epoch+1).
// Applying is all-or-nothing: an edit with any invalid operation is rejected as a whole and the
// input map is untouched (it is const). See docs/design/shard-map.md.
//
// Operations apply in order; each sees the result of the previous ones:
//   AddNode, RemoveNode (drops the node from replica lists; never the only replica of a bucket,
//   never a node in a transition), SetNodeState (kLeaving = decommissioning), SplitBucket
//   (paper 001 §3.1 sharding: both halves keep the replicas), MergeBuckets (adjacent, same
//   replicas), BeginTransition, AdvanceStage, CommitTransition (the commit point: replicas :=
//   destination), FinishTransition (DONE: drop a transition in cleanup), AbortTransition (drop a
//   transition that has not committed), RemoveReplica (a backup that stopped answering leaves
//   the bucket, never below min_in_sync), PromoteReplica (failover: a backup becomes the primary
//   under a new term), ForcePrimary (an operator names the only copy left), SetReplication (K and
//   min_in_sync), BindStore and ResetNode (a node's store id: first bound, then replaced when
//   its data is gone). Rule 1 of paper 001 §3.2: moving buckets are never split or merged.
//   With more than one replica a transition changes one replica at a time: it replaces one
//   member, adds one copy, or hands the primary to another member (docs/design/replication.md
//   §2 rule 11); switch-then-copy never changes the primary of a replicated bucket (rule 12).
//   docs/design/replication.md §2 has the replica operations' rules.
//
// Encoding (stable; Encode -> Decode -> Encode is the identity, and so is Decode -> Encode on
// every accepted input): a format-version byte (kFormatVersion), then LEB128 varints (minimal
// form only): base epoch, operation count, and per operation a tag byte and its fields. Decode
// rejects truncated, overlong, non-minimal or unknown input with InvalidArgument and never reads
// out of bounds.
//
// Value type; thread-compatible. Apply is a pure function; thread-safe.

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "src/cluster/shard_map.h"
#include "src/cluster/transition.h"
#include "src/common/ids.h"
#include "src/common/status.h"

namespace shoal::cluster {

namespace edit {

struct AddNode {
  NodeId node;
  friend bool operator==(const AddNode&, const AddNode&) = default;
};
struct RemoveNode {
  NodeId node;
  friend bool operator==(const RemoveNode&, const RemoveNode&) = default;
};
struct SetNodeState {
  NodeId node;
  NodeState state = NodeState::kActive;
  friend bool operator==(const SetNodeState&, const SetNodeState&) = default;
};
// Splits `bucket` into [begin, at) keeping its id and [at, end) with the new id `upper`.
struct SplitBucket {
  BucketId bucket;
  uint64_t at = 0;
  BucketId upper;
  friend bool operator==(const SplitBucket&, const SplitBucket&) = default;
};
// Merges `right` (which must start where `left` ends) into `left`; the result keeps `left`'s id.
struct MergeBuckets {
  BucketId left;
  BucketId right;
  friend bool operator==(const MergeBuckets&, const MergeBuckets&) = default;
};
// Starts move `move` of `bucket` from its stable replicas to `destination` (primary first), in
// the first stage of `mode`.
struct BeginTransition {
  BucketId bucket;
  MoveId move;
  std::vector<NodeId> destination;
  TransitionMode mode = TransitionMode::kCopyThenSwitch;
  friend bool operator==(const BeginTransition&, const BeginTransition&) = default;
};
// Moves the transition to `stage`, which must be NextStage of its stage and neither kCommitted
// (use CommitTransition) nor kDone (use FinishTransition).
struct AdvanceStage {
  BucketId bucket;
  MoveId move;
  TransitionStage stage = TransitionStage::kCopy;
  friend bool operator==(const AdvanceStage&, const AdvanceStage&) = default;
};
// The commit point: allowed when NextStage is kCommitted; replicas := destination.
struct CommitTransition {
  BucketId bucket;
  MoveId move;
  friend bool operator==(const CommitTransition&, const CommitTransition&) = default;
};
// DONE: drops a transition in kCleanup.
struct FinishTransition {
  BucketId bucket;
  MoveId move;
  friend bool operator==(const FinishTransition&, const FinishTransition&) = default;
};
// Rollback: drops a transition that has not committed; the stable replicas stay.
struct AbortTransition {
  BucketId bucket;
  MoveId move;
  friend bool operator==(const AbortTransition&, const AbortTransition&) = default;
};
// A backup (a replica other than the primary) leaves the bucket's in-sync set, which keeps at
// least min_in_sync replicas; it also leaves the bucket's transition (a transition left moving
// nothing is dropped). The term stays.
struct RemoveReplica {
  BucketId bucket;
  NodeId node;
  friend bool operator==(const RemoveReplica&, const RemoveReplica&) = default;
};
// A backup that cannot catch up (it answered a gap the primary cannot fill, or a divergent
// copy) leaves the bucket, even below min_in_sync: every acknowledged write is on the primary,
// so it holds nothing the bucket needs, and a primary below the floor takes no write until a
// copy is rebuilt. Otherwise as RemoveReplica.
struct DropReplica {
  BucketId bucket;
  NodeId node;
  friend bool operator==(const DropReplica&, const DropReplica&) = default;
};
// Failover: backup `node` becomes the primary, the old primary leaves the replicas, and the
// bucket's term becomes the new epoch. Refused while the bucket moves (abort the move first, in
// the same edit). May leave fewer than min_in_sync replicas: writes then wait for a repair.
struct PromoteReplica {
  BucketId bucket;
  NodeId node;
  friend bool operator==(const PromoteReplica&, const PromoteReplica&) = default;
};

// An operator names `node` the bucket's only replica, under a new term, after every in-sync copy
// was lost (possible data loss). `node` may hold a stale copy outside the replicas. Refused while
// the bucket moves.
struct ForcePrimary {
  BucketId bucket;
  NodeId node;
  friend bool operator==(const ForcePrimary&, const ForcePrimary&) = default;
};
// Sets K and min_in_sync (0 = a majority of K): 1 <= min_in_sync <= K <= active nodes. Refused
// while any bucket moves. Lowering K drops the last backups of buckets with more than K replicas;
// raising it leaves buckets under-replicated until the balancer repairs them.
struct SetReplication {
  uint32_t replication_factor = 1;
  uint32_t min_in_sync = 0;
  friend bool operator==(const SetReplication&, const SetReplication&) = default;
};
// Binds a node's store id, only while the map has none for it (0).
struct BindStore {
  NodeId node;
  uint64_t store_id = 0;
  friend bool operator==(const BindStore&, const BindStore&) = default;
};
// The node's data is gone (a wiped or replaced directory, a new store id): it leaves every
// bucket's replicas, even below min_in_sync, except where it is the only replica (that bucket
// stays unavailable until ForcePrimary), and every uncommitted transition is aborted that
// involves it. A bucket whose primary leaves gets its next replica as primary under a new term.
struct ResetNode {
  NodeId node;
  uint64_t store_id = 0;
  friend bool operator==(const ResetNode&, const ResetNode&) = default;
};

}  // namespace edit

using EditOp =
    std::variant<edit::AddNode, edit::RemoveNode, edit::SetNodeState, edit::SplitBucket,
                 edit::MergeBuckets, edit::BeginTransition, edit::AdvanceStage,
                 edit::CommitTransition, edit::FinishTransition, edit::AbortTransition,
                 edit::RemoveReplica, edit::PromoteReplica, edit::ForcePrimary,
                 edit::SetReplication, edit::BindStore, edit::ResetNode, edit::DropReplica>;

[[nodiscard]] std::string DebugString(const EditOp& op);

class ShardMapEdit {
 public:
  static constexpr uint8_t kFormatVersion = 1;

  ShardMapEdit() = default;
  explicit ShardMapEdit(MapEpoch base_epoch) : base_epoch_(base_epoch) {}

  // The epoch of the map this edit applies to; the result has base_epoch + 1.
  [[nodiscard]] MapEpoch base_epoch() const { return base_epoch_; }
  void SetBaseEpoch(MapEpoch epoch) { base_epoch_ = epoch; }

  [[nodiscard]] const std::vector<EditOp>& ops() const { return ops_; }
  [[nodiscard]] bool empty() const { return ops_.empty(); }

  ShardMapEdit& Add(EditOp op) {
    ops_.push_back(std::move(op));
    return *this;
  }
  ShardMapEdit& AddNode(NodeId node) { return Add(edit::AddNode{node}); }
  ShardMapEdit& RemoveNode(NodeId node) { return Add(edit::RemoveNode{node}); }
  ShardMapEdit& SetNodeState(NodeId node, NodeState state) {
    return Add(edit::SetNodeState{node, state});
  }
  ShardMapEdit& SplitBucket(BucketId bucket, uint64_t at, BucketId upper) {
    return Add(edit::SplitBucket{bucket, at, upper});
  }
  ShardMapEdit& MergeBuckets(BucketId left, BucketId right) {
    return Add(edit::MergeBuckets{left, right});
  }
  ShardMapEdit& BeginTransition(BucketId bucket, MoveId move, std::vector<NodeId> destination,
                                TransitionMode mode) {
    return Add(edit::BeginTransition{bucket, move, std::move(destination), mode});
  }
  ShardMapEdit& AdvanceStage(BucketId bucket, MoveId move, TransitionStage stage) {
    return Add(edit::AdvanceStage{bucket, move, stage});
  }
  ShardMapEdit& CommitTransition(BucketId bucket, MoveId move) {
    return Add(edit::CommitTransition{bucket, move});
  }
  ShardMapEdit& FinishTransition(BucketId bucket, MoveId move) {
    return Add(edit::FinishTransition{bucket, move});
  }
  ShardMapEdit& AbortTransition(BucketId bucket, MoveId move) {
    return Add(edit::AbortTransition{bucket, move});
  }
  ShardMapEdit& RemoveReplica(BucketId bucket, NodeId node) {
    return Add(edit::RemoveReplica{bucket, node});
  }
  ShardMapEdit& DropReplica(BucketId bucket, NodeId node) {
    return Add(edit::DropReplica{bucket, node});
  }
  ShardMapEdit& PromoteReplica(BucketId bucket, NodeId node) {
    return Add(edit::PromoteReplica{bucket, node});
  }
  ShardMapEdit& ForcePrimary(BucketId bucket, NodeId node) {
    return Add(edit::ForcePrimary{bucket, node});
  }
  ShardMapEdit& SetReplication(uint32_t replication_factor, uint32_t min_in_sync = 0) {
    return Add(edit::SetReplication{replication_factor, min_in_sync});
  }
  ShardMapEdit& BindStore(NodeId node, uint64_t store_id) {
    return Add(edit::BindStore{node, store_id});
  }
  ShardMapEdit& ResetNode(NodeId node, uint64_t store_id) {
    return Add(edit::ResetNode{node, store_id});
  }

  // Appends the encoding to `out`.
  void EncodeTo(std::string* out) const;
  [[nodiscard]] std::string Encode() const;
  [[nodiscard]] static StatusOr<ShardMapEdit> Decode(std::string_view bytes);

  [[nodiscard]] std::string DebugString() const;
  friend bool operator==(const ShardMapEdit&, const ShardMapEdit&) = default;

 private:
  MapEpoch base_epoch_;
  std::vector<EditOp> ops_;
};

// The map of epoch base + 1. FailedPrecondition if edit.base_epoch() != map.epoch() (a stale or
// future edit); InvalidArgument or NotFound for an invalid operation (the message names the
// operation). The result satisfies ShardMap::CheckInvariants.
[[nodiscard]] StatusOr<ShardMap> Apply(const ShardMap& map, const ShardMapEdit& edit);

}  // namespace shoal::cluster
