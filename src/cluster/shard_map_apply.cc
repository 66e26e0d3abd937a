// Apply(ShardMap, ShardMapEdit): the one way a ShardMap changes (shard_map_edit.h).

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "src/cluster/replication_setting.h"
#include "src/cluster/shard_map_edit.h"

namespace shoal::cluster {
namespace {

// The parts of a map while an edit is applied to them; turned into a ShardMap (which checks
// every invariant) at the end. A bucket whose primary changes gets the new epoch as its term
// (docs/design/replication.md §2): a commit that puts another node first, and a merge.
class Draft {
 public:
  Draft(const ShardMap& map, MapEpoch next_epoch)
      : nodes_(map.nodes().begin(), map.nodes().end()),
        buckets_(map.buckets().begin(), map.buckets().end()),
        replication_factor_(map.replication_factor()),
        min_in_sync_(map.min_in_sync()),
        next_term_(next_epoch.value()) {}

  Status operator()(const edit::AddNode& op) {
    if (FindNode(op.node) != nullptr) {
      return AlreadyExistsError(fmt::format("node {} already a member", op.node.DebugString()));
    }
    nodes_.push_back({.id = op.node, .state = NodeState::kActive});
    std::sort(nodes_.begin(), nodes_.end(),
              [](const NodeInfo& a, const NodeInfo& b) { return a.id < b.id; });
    return OkStatus();
  }

  Status operator()(const edit::RemoveNode& op) {
    SHOAL_RETURN_IF_ERROR(NodeExists(op.node));
    if (nodes_.size() == 1) return FailedPreconditionError("cannot remove the last node");
    for (const BucketPlacement& bucket : buckets_) {
      if (bucket.transition.has_value() && bucket.transition->Involves(op.node)) {
        return FailedPreconditionError(
            fmt::format("node {} takes part in {} of bucket {}", op.node.DebugString(),
                        bucket.transition->DebugString(), bucket.id.DebugString()));
      }
      if (bucket.replicas.size() == 1 && bucket.replicas[0] == op.node) {
        return FailedPreconditionError(fmt::format("node {} holds the only replica of bucket {}",
                                                   op.node.DebugString(), bucket.id.DebugString()));
      }
    }
    for (BucketPlacement& bucket : buckets_) std::erase(bucket.replicas, op.node);
    std::erase_if(nodes_, [&](const NodeInfo& info) { return info.id == op.node; });
    return OkStatus();
  }

  Status operator()(const edit::SetNodeState& op) {
    SHOAL_RETURN_IF_ERROR(NodeExists(op.node));
    FindNode(op.node)->state = op.state;
    return OkStatus();
  }

  Status operator()(const edit::SplitBucket& op) {
    SHOAL_ASSIGN_OR_RETURN(size_t index, BucketIndex(op.bucket));
    if (buckets_[index].transition.has_value()) {
      return FailedPreconditionError(
          fmt::format("bucket {} is moving and cannot be split (paper 001 §3.2 rule 1)",
                      op.bucket.DebugString()));
    }
    if (BucketIndex(op.upper).ok()) {
      return AlreadyExistsError(fmt::format("bucket id {} already used", op.upper.DebugString()));
    }
    SHOAL_ASSIGN_OR_RETURN(auto halves, buckets_[index].range.SplitAt(op.at));
    BucketPlacement upper = buckets_[index];
    upper.id = op.upper;
    upper.range = halves.second;
    // The upper half starts a history of its own from the data its replicas hold alike (a
    // replicated split is quiesced, docs/design/replication.md §7).
    upper.term = next_term_;
    buckets_[index].range = halves.first;
    buckets_.insert(buckets_.begin() + static_cast<ptrdiff_t>(index) + 1, std::move(upper));
    return OkStatus();
  }

  Status operator()(const edit::MergeBuckets& op) {
    SHOAL_ASSIGN_OR_RETURN(size_t left, BucketIndex(op.left));
    SHOAL_ASSIGN_OR_RETURN(size_t right, BucketIndex(op.right));
    if (right != left + 1) {
      return InvalidArgumentError(fmt::format("bucket {} does not follow bucket {}",
                                              op.right.DebugString(), op.left.DebugString()));
    }
    if (buckets_[left].transition.has_value() || buckets_[right].transition.has_value()) {
      return FailedPreconditionError(
          fmt::format("buckets {} and {}: moving buckets cannot be merged (paper 001 §3.2 rule 1)",
                      op.left.DebugString(), op.right.DebugString()));
    }
    if (buckets_[left].replicas != buckets_[right].replicas) {
      return FailedPreconditionError(fmt::format("buckets {} and {} have different replicas",
                                                 op.left.DebugString(), op.right.DebugString()));
    }
    SHOAL_ASSIGN_OR_RETURN(buckets_[left].range,
                           buckets_[left].range.MergeWith(buckets_[right].range));
    // The merged bucket starts a history of its own.
    buckets_[left].term = next_term_;
    buckets_.erase(buckets_.begin() + static_cast<ptrdiff_t>(right));
    return OkStatus();
  }

  Status operator()(const edit::BeginTransition& op) {
    SHOAL_ASSIGN_OR_RETURN(size_t index, BucketIndex(op.bucket));
    BucketPlacement& bucket = buckets_[index];
    if (bucket.transition.has_value()) {
      return FailedPreconditionError(fmt::format("bucket {} already moving: {}",
                                                 op.bucket.DebugString(),
                                                 bucket.transition->DebugString()));
    }
    for (const BucketPlacement& other : buckets_) {
      if (other.transition.has_value() && other.transition->move == op.move) {
        return AlreadyExistsError(fmt::format("move {} already in use", op.move.DebugString()));
      }
    }
    if (op.destination.empty() || op.destination.size() > replication_factor_) {
      return InvalidArgumentError(fmt::format("destination of {} must have 1..{} replicas",
                                              op.move.DebugString(), replication_factor_));
    }
    std::vector<NodeId> sorted = op.destination;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      return InvalidArgumentError(
          fmt::format("destination of {} repeats a node", op.move.DebugString()));
    }
    if (op.destination == bucket.replicas) {
      return InvalidArgumentError(fmt::format("{} moves nothing", op.move.DebugString()));
    }
    SHOAL_RETURN_IF_ERROR(OneReplicaChanges(bucket.replicas, op));
    for (NodeId node : op.destination) {
      SHOAL_RETURN_IF_ERROR(NodeExists(node));
      if (!bucket.HasReplica(node) && FindNode(node)->state != NodeState::kActive) {
        return FailedPreconditionError(
            fmt::format("node {} is {} and cannot receive bucket {}", node.DebugString(),
                        ToString(FindNode(node)->state), op.bucket.DebugString()));
      }
    }
    bucket.transition = BucketTransition{.move = op.move,
                                         .source = bucket.replicas,
                                         .destination = op.destination,
                                         .stage = FirstStage(op.mode),
                                         .mode = op.mode};
    return OkStatus();
  }

  Status operator()(const edit::AdvanceStage& op) {
    SHOAL_ASSIGN_OR_RETURN(BucketTransition * t, Transition(op.bucket, op.move));
    if (op.stage == TransitionStage::kCommitted || op.stage == TransitionStage::kDone ||
        op.stage == TransitionStage::kAborted) {
      return InvalidArgumentError(fmt::format(
          "stage {} is reached by its own operation, not AdvanceStage", ToString(op.stage)));
    }
    if (NextStage(t->stage, t->mode) != op.stage) {
      return FailedPreconditionError(
          fmt::format("{} cannot advance to {}", t->DebugString(), ToString(op.stage)));
    }
    t->stage = op.stage;
    return OkStatus();
  }

  Status operator()(const edit::CommitTransition& op) {
    SHOAL_ASSIGN_OR_RETURN(BucketTransition * t, Transition(op.bucket, op.move));
    if (NextStage(t->stage, t->mode) != TransitionStage::kCommitted) {
      return FailedPreconditionError(fmt::format("{} cannot commit yet", t->DebugString()));
    }
    t->stage = TransitionStage::kCommitted;
    BucketPlacement& bucket = buckets_[*BucketIndex(op.bucket)];
    if (t->destination.front() != t->source.front()) bucket.term = next_term_;
    bucket.replicas = t->destination;
    return OkStatus();
  }

  Status operator()(const edit::FinishTransition& op) {
    SHOAL_ASSIGN_OR_RETURN(BucketTransition * t, Transition(op.bucket, op.move));
    if (t->stage != TransitionStage::kCleanup) {
      return FailedPreconditionError(
          fmt::format("{} must be in cleanup to finish", t->DebugString()));
    }
    buckets_[*BucketIndex(op.bucket)].transition.reset();
    return OkStatus();
  }

  Status operator()(const edit::AbortTransition& op) {
    SHOAL_ASSIGN_OR_RETURN(BucketTransition * t, Transition(op.bucket, op.move));
    if (!CanAbort(t->stage, t->mode)) {
      return FailedPreconditionError(
          fmt::format("{} has committed and cannot abort", t->DebugString()));
    }
    buckets_[*BucketIndex(op.bucket)].transition.reset();
    return OkStatus();
  }

  Status operator()(const edit::RemoveReplica& op) {
    SHOAL_ASSIGN_OR_RETURN(size_t index, BucketIndex(op.bucket));
    BucketPlacement& bucket = buckets_[index];
    SHOAL_RETURN_IF_ERROR(IsBackup(bucket, op.node));
    if (bucket.replicas.size() - 1 < min_in_sync_) {
      return FailedPreconditionError(
          fmt::format("bucket {} keeps {} replicas, fewer than min_in_sync {} without {}",
                      op.bucket.DebugString(), bucket.replicas.size() - 1, min_in_sync_,
                      op.node.DebugString()));
    }
    return LeaveBucket(bucket, op.node);
  }

  Status operator()(const edit::DropReplica& op) {
    SHOAL_ASSIGN_OR_RETURN(size_t index, BucketIndex(op.bucket));
    SHOAL_RETURN_IF_ERROR(IsBackup(buckets_[index], op.node));
    return LeaveBucket(buckets_[index], op.node);
  }

  // A backup leaves the bucket's replicas and its transition (RemoveReplica, DropReplica).
  static Status LeaveBucket(BucketPlacement& bucket, NodeId node) {
    std::erase(bucket.replicas, node);
    if (bucket.transition.has_value()) {
      BucketTransition& t = *bucket.transition;
      // The stable replicas are the source before the commit and the destination after it.
      std::erase(t.source, node);
      std::erase(t.destination, node);
      if (t.destination.empty() && !CanAbort(t.stage, t.mode)) {
        return FailedPreconditionError(fmt::format("{} of bucket {} would have no destination",
                                                   t.DebugString(), bucket.id.DebugString()));
      }
      // A move left with nothing to move, or nowhere to go before its commit, is over.
      if (t.destination.empty() || t.source == t.destination) bucket.transition.reset();
    }
    return OkStatus();
  }

  Status operator()(const edit::PromoteReplica& op) {
    SHOAL_ASSIGN_OR_RETURN(size_t index, BucketIndex(op.bucket));
    BucketPlacement& bucket = buckets_[index];
    SHOAL_RETURN_IF_ERROR(IsBackup(bucket, op.node));
    if (bucket.transition.has_value()) {
      return FailedPreconditionError(
          fmt::format("bucket {} is moving ({}): abort the move before a promotion",
                      op.bucket.DebugString(), bucket.transition->DebugString()));
    }
    std::vector<NodeId> replicas{op.node};
    for (size_t i = 1; i < bucket.replicas.size(); ++i) {
      if (bucket.replicas[i] != op.node) replicas.push_back(bucket.replicas[i]);
    }
    bucket.replicas = std::move(replicas);
    bucket.term = next_term_;
    return OkStatus();
  }

  Status operator()(const edit::ForcePrimary& op) {
    SHOAL_ASSIGN_OR_RETURN(size_t index, BucketIndex(op.bucket));
    SHOAL_RETURN_IF_ERROR(NodeExists(op.node));
    BucketPlacement& bucket = buckets_[index];
    if (bucket.transition.has_value()) {
      return FailedPreconditionError(
          fmt::format("bucket {} is moving ({}): abort the move before forcing a primary",
                      op.bucket.DebugString(), bucket.transition->DebugString()));
    }
    bucket.replicas = {op.node};
    bucket.term = next_term_;
    return OkStatus();
  }

  Status operator()(const edit::SetReplication& op) {
    const uint32_t k = op.replication_factor;
    const uint32_t min = op.min_in_sync == 0 ? ShardMap::DefaultMinInSync(k) : op.min_in_sync;
    const auto active =
        static_cast<uint32_t>(std::count_if(nodes_.begin(), nodes_.end(), [](const NodeInfo& info) {
          return info.state == NodeState::kActive;
        }));
    SHOAL_RETURN_IF_ERROR(CheckReplicationSetting(k, min, active));
    for (const BucketPlacement& bucket : buckets_) {
      if (bucket.transition.has_value()) {
        return FailedPreconditionError(
            fmt::format("bucket {} is moving ({}): K changes only while nothing moves",
                        bucket.id.DebugString(), bucket.transition->DebugString()));
      }
    }
    for (BucketPlacement& bucket : buckets_) {
      if (bucket.replicas.size() > k) bucket.replicas.resize(k);
    }
    replication_factor_ = k;
    min_in_sync_ = min;
    return OkStatus();
  }

  Status operator()(const edit::BindStore& op) {
    SHOAL_RETURN_IF_ERROR(NodeExists(op.node));
    SHOAL_RETURN_IF_ERROR(NonZeroStore(op.store_id));
    NodeInfo* info = FindNode(op.node);
    if (info->store_id != 0) {
      return FailedPreconditionError(
          fmt::format("node {} is bound to store {:#x}; a new store is a ResetNode",
                      op.node.DebugString(), info->store_id));
    }
    info->store_id = op.store_id;
    return OkStatus();
  }

  Status operator()(const edit::ResetNode& op) {
    SHOAL_RETURN_IF_ERROR(NodeExists(op.node));
    SHOAL_RETURN_IF_ERROR(NonZeroStore(op.store_id));
    NodeInfo* info = FindNode(op.node);
    if (info->store_id == op.store_id) {
      return FailedPreconditionError(
          fmt::format("node {} already has store {:#x}", op.node.DebugString(), op.store_id));
    }
    for (BucketPlacement& bucket : buckets_) {
      if (bucket.transition.has_value() && bucket.transition->Involves(op.node)) {
        const BucketTransition& t = *bucket.transition;
        if (!CanAbort(t.stage, t.mode)) {
          return FailedPreconditionError(
              fmt::format("{} of bucket {} has committed; let it finish first", t.DebugString(),
                          bucket.id.DebugString()));
        }
        bucket.transition.reset();
      }
      if (!bucket.HasReplica(op.node) || bucket.replicas.size() == 1) continue;
      if (bucket.replicas.front() == op.node) bucket.term = next_term_;
      std::erase(bucket.replicas, op.node);
    }
    info->store_id = op.store_id;
    return OkStatus();
  }

  StatusOr<ShardMap> Finish(MapEpoch epoch) && {
    return ShardMap::Create(epoch, replication_factor_, std::move(nodes_), std::move(buckets_),
                            min_in_sync_);
  }

 private:
  NodeInfo* FindNode(NodeId node) {
    auto it = std::find_if(nodes_.begin(), nodes_.end(),
                           [node](const NodeInfo& info) { return info.id == node; });
    return it == nodes_.end() ? nullptr : &*it;
  }
  Status NodeExists(NodeId node) {
    if (FindNode(node) == nullptr) {
      return NotFoundError(fmt::format("node {} is not a member", node.DebugString()));
    }
    return OkStatus();
  }
  StatusOr<size_t> BucketIndex(BucketId id) const {
    for (size_t i = 0; i < buckets_.size(); ++i) {
      if (buckets_[i].id == id) return i;
    }
    return NotFoundError(fmt::format("bucket {} does not exist", id.DebugString()));
  }
  // The transition of `bucket`, which must carry `move` (messages of other attempts are refused).
  StatusOr<BucketTransition*> Transition(BucketId bucket, MoveId move) {
    SHOAL_ASSIGN_OR_RETURN(size_t index, BucketIndex(bucket));
    std::optional<BucketTransition>& t = buckets_[index].transition;
    if (!t.has_value()) {
      return FailedPreconditionError(fmt::format("bucket {} is not moving", bucket.DebugString()));
    }
    if (t->move != move) {
      return FailedPreconditionError(fmt::format("bucket {} is moving under {}, not {}",
                                                 bucket.DebugString(), t->move.DebugString(),
                                                 move.DebugString()));
    }
    return &*t;
  }

  static Status NonZeroStore(uint64_t store_id) {
    if (store_id == 0) return InvalidArgumentError("store id 0 is reserved for \"not bound\"");
    return OkStatus();
  }

  // Rules 11 and 12 of docs/design/replication.md §2: with more than one replica on either side
  // a transition replaces one member, adds one copy or hands the primary over, and a
  // switch-then-copy move keeps the primary.
  static Status OneReplicaChanges(const std::vector<NodeId>& source,
                                  const edit::BeginTransition& op) {
    const std::vector<NodeId>& destination = op.destination;
    if (source.size() <= 1 && destination.size() <= 1) return OkStatus();  // a K = 1 move
    auto missing_from = [](const std::vector<NodeId>& from, const std::vector<NodeId>& in) {
      return std::count_if(from.begin(), from.end(), [&](NodeId node) {
        return std::find(in.begin(), in.end(), node) == in.end();
      });
    };
    const auto added = missing_from(destination, source);
    const auto removed = missing_from(source, destination);
    const bool replace = destination.size() == source.size() && added == 1 && removed == 1;
    const bool grow = destination.size() == source.size() + 1 && added == 1 && removed == 0;
    const bool handoff = added == 0 && removed == 0;
    if (!replace && !grow && !handoff) {
      return InvalidArgumentError(
          fmt::format("{} changes more than one replica of bucket {} (one at a time: replace "
                      "one, add one, or hand the primary over)",
                      op.move.DebugString(), op.bucket.DebugString()));
    }
    if (op.mode == TransitionMode::kSwitchThenCopy && destination.front() != source.front()) {
      return InvalidArgumentError(
          fmt::format("{} would change the primary of replicated bucket {} by switch-then-copy",
                      op.move.DebugString(), op.bucket.DebugString()));
    }
    return OkStatus();
  }

  // OK when `node` is a replica of `bucket` other than its primary.
  static Status IsBackup(const BucketPlacement& bucket, NodeId node) {
    if (!bucket.HasReplica(node)) {
      return NotFoundError(fmt::format("node {} is not a replica of bucket {}", node.DebugString(),
                                       bucket.id.DebugString()));
    }
    if (bucket.replicas.front() == node) {
      return FailedPreconditionError(fmt::format("node {} is the primary of bucket {}",
                                                 node.DebugString(), bucket.id.DebugString()));
    }
    return OkStatus();
  }

  std::vector<NodeInfo> nodes_;
  std::vector<BucketPlacement> buckets_;
  uint32_t replication_factor_;
  uint32_t min_in_sync_;
  Term next_term_;  // the epoch the edit makes
};

}  // namespace

StatusOr<ShardMap> Apply(const ShardMap& map, const ShardMapEdit& edit) {
  if (edit.base_epoch() != map.epoch()) {
    return FailedPreconditionError(fmt::format("edit for epoch {} does not apply to map of {}",
                                               edit.base_epoch().DebugString(),
                                               map.epoch().DebugString()));
  }
  const MapEpoch next(map.epoch().value() + 1);
  Draft draft(map, next);
  for (size_t i = 0; i < edit.ops().size(); ++i) {
    Status status = std::visit(draft, edit.ops()[i]);
    if (!status.ok()) {
      return Prefixed(status, fmt::format("operation {} {}", i, DebugString(edit.ops()[i])));
    }
  }
  return std::move(draft).Finish(next);
}

}  // namespace shoal::cluster
