#pragma once

// Test support for the cluster model: small builders and RapidCheck generators shared by the
// cluster tests. Test-only; not part of shoal_cluster.

#include <rapidcheck.h>

#include <initializer_list>
#include <vector>

#include "src/cluster/migration_plan.h"
#include "src/cluster/shard_map.h"
#include "src/cluster/shard_map_edit.h"

namespace shoal::cluster::testing {

inline std::vector<NodeId> Nodes(std::initializer_list<uint32_t> ids) {
  std::vector<NodeId> nodes;
  for (uint32_t id : ids) nodes.push_back(NodeId(id));
  return nodes;
}

// Node ids drawn by the generators lie in [0, kGenNodeIds); bucket ids in [0, kGenBucketIds);
// move ids in [1, kGenMoveIds]. Small ranges make collisions (and so invalid edits) frequent.
inline constexpr uint32_t kGenNodeIds = 8;
inline constexpr uint32_t kGenBucketIds = 24;
inline constexpr uint64_t kGenMoveIds = 12;

inline rc::Gen<NodeId> GenNodeId() {
  return rc::gen::map(rc::gen::inRange<uint32_t>(0, kGenNodeIds),
                      [](uint32_t v) { return NodeId(v); });
}
inline rc::Gen<BucketId> GenBucketId() {
  return rc::gen::map(rc::gen::inRange<uint32_t>(0, kGenBucketIds),
                      [](uint32_t v) { return BucketId(v); });
}
inline rc::Gen<MoveId> GenMoveId() {
  return rc::gen::map(rc::gen::inRange<uint64_t>(1, kGenMoveIds + 1),
                      [](uint64_t v) { return MoveId(v); });
}
inline rc::Gen<TransitionStage> GenStage() {
  return rc::gen::map(rc::gen::inRange<int>(0, 7),
                      [](int v) { return static_cast<TransitionStage>(v); });
}
inline rc::Gen<TransitionMode> GenMode() {
  return rc::gen::map(rc::gen::inRange<int>(0, 2),
                      [](int v) { return static_cast<TransitionMode>(v); });
}
inline rc::Gen<uint64_t> GenPoint() {
  return rc::gen::weightedOneOf<uint64_t>({
      {3, rc::gen::arbitrary<uint64_t>()},
      {1, rc::gen::elementOf(std::vector<uint64_t>{0, 1, uint64_t{1} << 63, UINT64_MAX})},
  });
}

// 0 to 3 node ids (repeats possible).
inline rc::Gen<std::vector<NodeId>> GenReplicaList() {
  return rc::gen::mapcat(rc::gen::inRange<size_t>(0, 4), [](size_t n) {
    return rc::gen::container<std::vector<NodeId>>(n, GenNodeId());
  });
}

// Any operation, valid or not for a given map.
inline rc::Gen<EditOp> GenOp() {
  return rc::gen::oneOf(
      rc::gen::map(GenNodeId(), [](NodeId n) { return EditOp(edit::AddNode{n}); }),
      rc::gen::map(GenNodeId(), [](NodeId n) { return EditOp(edit::RemoveNode{n}); }),
      rc::gen::map(rc::gen::pair(GenNodeId(), rc::gen::arbitrary<bool>()),
                   [](std::pair<NodeId, bool> p) {
                     return EditOp(edit::SetNodeState{
                         p.first, p.second ? NodeState::kLeaving : NodeState::kActive});
                   }),
      rc::gen::map(
          rc::gen::tuple(GenBucketId(), GenPoint(), GenBucketId()),
          [](std::tuple<BucketId, uint64_t, BucketId> t) {
            return EditOp(edit::SplitBucket{std::get<0>(t), std::get<1>(t), std::get<2>(t)});
          }),
      rc::gen::map(rc::gen::pair(GenBucketId(), GenBucketId()),
                   [](std::pair<BucketId, BucketId> p) {
                     return EditOp(edit::MergeBuckets{p.first, p.second});
                   }),
      rc::gen::map(rc::gen::tuple(GenBucketId(), GenMoveId(), GenReplicaList(), GenMode()),
                   [](std::tuple<BucketId, MoveId, std::vector<NodeId>, TransitionMode> t) {
                     return EditOp(edit::BeginTransition{std::get<0>(t), std::get<1>(t),
                                                         std::get<2>(t), std::get<3>(t)});
                   }),
      rc::gen::map(
          rc::gen::tuple(GenBucketId(), GenMoveId(), GenStage()),
          [](std::tuple<BucketId, MoveId, TransitionStage> t) {
            return EditOp(edit::AdvanceStage{std::get<0>(t), std::get<1>(t), std::get<2>(t)});
          }),
      rc::gen::map(rc::gen::pair(GenBucketId(), GenMoveId()),
                   [](std::pair<BucketId, MoveId> p) {
                     return EditOp(edit::CommitTransition{p.first, p.second});
                   }),
      rc::gen::map(rc::gen::pair(GenBucketId(), GenMoveId()),
                   [](std::pair<BucketId, MoveId> p) {
                     return EditOp(edit::FinishTransition{p.first, p.second});
                   }),
      rc::gen::map(rc::gen::pair(GenBucketId(), GenMoveId()),
                   [](std::pair<BucketId, MoveId> p) {
                     return EditOp(edit::AbortTransition{p.first, p.second});
                   }),
      rc::gen::map(rc::gen::pair(GenBucketId(), GenNodeId()),
                   [](std::pair<BucketId, NodeId> p) {
                     return EditOp(edit::RemoveReplica{p.first, p.second});
                   }),
      rc::gen::map(rc::gen::pair(GenBucketId(), GenNodeId()),
                   [](std::pair<BucketId, NodeId> p) {
                     return EditOp(edit::PromoteReplica{p.first, p.second});
                   }),
      rc::gen::map(rc::gen::pair(GenBucketId(), GenNodeId()),
                   [](std::pair<BucketId, NodeId> p) {
                     return EditOp(edit::ForcePrimary{p.first, p.second});
                   }),
      rc::gen::map(
          rc::gen::pair(rc::gen::inRange<uint32_t>(0, 5), rc::gen::inRange<uint32_t>(0, 4)),
          [](std::pair<uint32_t, uint32_t> p) {
            return EditOp(edit::SetReplication{p.first, p.second});
          }),
      rc::gen::map(rc::gen::pair(GenNodeId(), rc::gen::inRange<uint64_t>(0, 4)),
                   [](std::pair<NodeId, uint64_t> p) {
                     return EditOp(edit::BindStore{p.first, p.second});
                   }),
      rc::gen::map(rc::gen::pair(GenNodeId(), rc::gen::inRange<uint64_t>(0, 4)),
                   [](std::pair<NodeId, uint64_t> p) {
                     return EditOp(edit::ResetNode{p.first, p.second});
                   }));
}

inline rc::Gen<ShardMapEdit> GenEdit(MapEpoch base) {
  return rc::gen::map(rc::gen::container<std::vector<EditOp>>(GenOp()),
                      [base](std::vector<EditOp> ops) {
                        ShardMapEdit edit(base);
                        for (EditOp& op : ops) edit.Add(std::move(op));
                        return edit;
                      });
}

// Starts every move, split and merge of `plan` and drives every move through all its stages to
// DONE (two edits). The load report follows: halves of a split get half the bytes each, a merge
// sums them.
inline StatusOr<ShardMap> ExecutePlan(const ShardMap& map, const MigrationPlan& plan, IdSource* ids,
                                      LoadReport* load) {
  const BucketId first_new = std::max(ids->next_bucket, map.NextBucketId());
  SHOAL_ASSIGN_OR_RETURN(ShardMapEdit begin, ToBeginEdit(map, plan, ids));
  SHOAL_ASSIGN_OR_RETURN(ShardMap started, Apply(map, begin));
  ShardMapEdit finish(started.epoch());
  for (const BucketPlacement& bucket : started.buckets()) {
    if (!bucket.transition.has_value()) continue;
    const BucketTransition& t = *bucket.transition;
    std::optional<TransitionStage> stage = NextStage(t.stage, t.mode);
    while (stage.has_value() && *stage != TransitionStage::kCommitted) {
      finish.AdvanceStage(bucket.id, t.move, *stage);
      stage = NextStage(*stage, t.mode);
    }
    finish.CommitTransition(bucket.id, t.move)
        .AdvanceStage(bucket.id, t.move, TransitionStage::kCleanup)
        .FinishTransition(bucket.id, t.move);
  }
  uint32_t next_new = first_new.value();
  for (const SplitIntent& split : plan.splits) {
    const uint64_t bytes = load->BytesOf(split.bucket);
    load->buckets[split.bucket].bytes = bytes / 2;
    load->buckets[BucketId(next_new++)].bytes = bytes - bytes / 2;
  }
  for (const MergeIntent& merge : plan.merges) {
    load->buckets[merge.left].bytes += load->BytesOf(merge.right);
    load->buckets.erase(merge.right);
  }
  return Apply(started, finish);
}

}  // namespace shoal::cluster::testing
