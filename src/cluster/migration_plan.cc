#include "src/cluster/migration_plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>

namespace shoal::cluster {
namespace {

std::string NodeList(const std::vector<NodeId>& nodes) {
  std::vector<std::string> names;
  for (NodeId node : nodes) names.push_back(node.DebugString());
  return fmt::format("[{}]", fmt::join(names, ","));
}

}  // namespace

uint64_t LoadReport::BytesOf(BucketId bucket) const {
  auto it = buckets.find(bucket);
  return it == buckets.end() ? 0 : it->second.bytes;
}

double LoadReport::HitsOf(BucketId bucket) const {
  auto it = buckets.find(bucket);
  return it == buckets.end() ? 0.0 : it->second.hits_ema;
}

double LoadReport::UtilizationOf(NodeId node) const {
  auto it = node_utilization.find(node);
  return it == node_utilization.end() ? 0.0 : it->second;
}

bool LoadReport::OutOfSpace(NodeId node) const {
  auto it = node_room_bytes.find(node);
  return it != node_room_bytes.end() && it->second == 0;
}

std::map<NodeId, uint64_t> RoomAfterMovesInFlight(const ShardMap& map, const LoadReport& load) {
  std::map<NodeId, uint64_t> room = load.node_room_bytes;
  for (const BucketPlacement& bucket : map.buckets()) {
    if (!bucket.transition.has_value()) continue;
    for (NodeId node : bucket.TargetReplicas()) {
      auto it = room.find(node);
      if (it == room.end() || bucket.HasReplica(node)) continue;
      it->second -= std::min(it->second, load.BytesOf(bucket.id));
    }
  }
  return room;
}

std::string_view ToString(MoveReason reason) {
  switch (reason) {
    case MoveReason::kDiskFull:
      return "disk-full";
    case MoveReason::kDrain:
      return "drain";
    case MoveReason::kRepair:
      return "repair";
    case MoveReason::kPreBootstrap:
      return "pre-bootstrap";
    case MoveReason::kBalance:
      return "balance";
    case MoveReason::kPostBootstrap:
      return "post-bootstrap";
  }
  return "invalid-reason";
}

std::string MoveIntent::DebugString() const {
  return fmt::format("move {} {}->{} {} ({}, {} bytes)", bucket.DebugString(), NodeList(source),
                     NodeList(destination), ToString(mode), ToString(reason), bytes);
}

std::string MigrationPlan::DebugString() const {
  std::vector<std::string> parts;
  for (const MoveIntent& move : moves) parts.push_back(move.DebugString());
  for (const SplitIntent& split : splits) {
    parts.push_back(fmt::format("split {} at {:#018x}", split.bucket.DebugString(), split.at));
  }
  for (const MergeIntent& merge : merges) {
    parts.push_back(
        fmt::format("merge {}+{}", merge.left.DebugString(), merge.right.DebugString()));
  }
  return fmt::format("MigrationPlan{{{}}}", fmt::join(parts, "; "));
}

std::optional<std::vector<NodeId>> OneReplicaStep(const std::vector<NodeId>& source,
                                                  const std::vector<NodeId>& target) {
  if (target.empty() || target == source) return std::nullopt;
  if (source.size() <= 1 && target.size() <= 1) return target;
  const auto absent = [](const std::vector<NodeId>& from, const std::vector<NodeId>& in) {
    return std::find_if(from.begin(), from.end(), [&](NodeId node) {
      return std::find(in.begin(), in.end(), node) == in.end();
    });
  };
  const auto added = absent(target, source);
  const auto removed = absent(source, target);
  std::vector<NodeId> step = source;
  if (added != target.end() && source.size() < target.size()) {
    step.push_back(*added);  // an under-replicated bucket gains a copy before anything else
  } else if (added != target.end() && removed != source.end()) {
    step[static_cast<size_t>(removed - source.begin())] = *added;
  } else if (removed == source.end()) {
    step = target;  // the same members in another order
  } else {
    return std::nullopt;
  }
  return step;
}

TransitionMode ModeFor(const std::vector<NodeId>& source, const std::vector<NodeId>& destination,
                       TransitionMode requested) {
  const bool replicated = source.size() > 1 || destination.size() > 1;
  if (replicated && requested == TransitionMode::kSwitchThenCopy &&
      source.front() != destination.front()) {
    return TransitionMode::kCopyThenSwitch;
  }
  return requested;
}

StatusOr<ShardMapEdit> ToBeginEdit(const ShardMap& map, const MigrationPlan& plan, IdSource* ids) {
  ShardMapEdit edit(map.epoch());
  ids->next_bucket = std::max(ids->next_bucket, map.NextBucketId());
  for (const MoveIntent& move : plan.moves) {
    if (ids->next_move.value() == std::numeric_limits<uint64_t>::max()) {
      return ResourceExhaustedError("migration plan: move ids exhausted");
    }
    edit.BeginTransition(move.bucket, ids->next_move, move.destination, move.mode);
    ids->next_move = MoveId(ids->next_move.value() + 1);
  }
  for (const SplitIntent& split : plan.splits) {
    if (ids->next_bucket.value() == std::numeric_limits<uint32_t>::max()) {
      return ResourceExhaustedError("migration plan: bucket ids exhausted");
    }
    edit.SplitBucket(split.bucket, split.at, ids->next_bucket);
    ids->next_bucket = BucketId(ids->next_bucket.value() + 1);
  }
  for (const MergeIntent& merge : plan.merges) edit.MergeBuckets(merge.left, merge.right);
  return edit;
}

}  // namespace shoal::cluster
