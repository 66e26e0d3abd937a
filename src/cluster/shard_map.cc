#include "src/cluster/shard_map.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <utility>

#include "src/cluster/replication_setting.h"

namespace shoal::cluster {
namespace {

std::string NodeList(std::span<const NodeId> nodes) {
  std::vector<std::string> names;
  names.reserve(nodes.size());
  for (NodeId node : nodes) names.push_back(node.DebugString());
  return fmt::format("[{}]", fmt::join(names, ","));
}

bool HasDuplicates(std::vector<NodeId> nodes) {
  std::sort(nodes.begin(), nodes.end());
  return std::adjacent_find(nodes.begin(), nodes.end()) != nodes.end();
}

// Replica list checks shared by stable replicas and transition destinations.
Status CheckReplicaList(const ShardMap& map, const BucketPlacement& bucket,
                        const std::vector<NodeId>& replicas, std::string_view what) {
  if (replicas.empty()) {
    return InternalError(fmt::format("bucket {}: empty {}", bucket.id.DebugString(), what));
  }
  if (replicas.size() > map.replication_factor()) {
    return InternalError(fmt::format("bucket {}: {} {} has more than K={} replicas",
                                     bucket.id.DebugString(), what, NodeList(replicas),
                                     map.replication_factor()));
  }
  if (HasDuplicates(replicas)) {
    return InternalError(fmt::format("bucket {}: {} {} repeats a node", bucket.id.DebugString(),
                                     what, NodeList(replicas)));
  }
  for (NodeId node : replicas) {
    if (!map.HasNode(node)) {
      return InternalError(fmt::format("bucket {}: {} names unknown node {}",
                                       bucket.id.DebugString(), what, node.DebugString()));
    }
  }
  return OkStatus();
}

}  // namespace

std::string_view ToString(NodeState state) {
  switch (state) {
    case NodeState::kActive:
      return "active";
    case NodeState::kLeaving:
      return "leaving";
  }
  return "invalid-node-state";
}

NodeId OwnerOf(const BucketPlacement& bucket) {
  if (!bucket.transition.has_value()) return bucket.replicas.front();
  // A switch-then-copy destination also answers reads, falling back to the source itself.
  const BucketTransition& t = *bucket.transition;
  return t.Replicas(WriteRouting(t.stage, t.mode).acknowledger).front();
}

bool BucketPlacement::HasReplica(NodeId node) const {
  return std::find(replicas.begin(), replicas.end(), node) != replicas.end();
}

std::string BucketPlacement::DebugString() const {
  std::string text =
      fmt::format("{} {} {}", id.DebugString(), range.DebugString(), NodeList(replicas));
  if (transition.has_value()) text += " moving " + transition->DebugString();
  return text;
}

ShardMap::ShardMap(MapEpoch epoch, uint32_t replication_factor, uint32_t min_in_sync,
                   std::vector<NodeInfo> nodes, std::vector<BucketPlacement> buckets)
    : epoch_(epoch),
      replication_factor_(replication_factor),
      min_in_sync_(min_in_sync),
      nodes_(std::move(nodes)),
      buckets_(std::move(buckets)) {
  std::sort(nodes_.begin(), nodes_.end(),
            [](const NodeInfo& a, const NodeInfo& b) { return a.id < b.id; });
  std::sort(buckets_.begin(), buckets_.end(),
            [](const BucketPlacement& a, const BucketPlacement& b) {
              return a.range.begin() < b.range.begin();
            });
  by_id_.reserve(buckets_.size());
  for (size_t i = 0; i < buckets_.size(); ++i) by_id_.emplace(buckets_[i].id, i);
}

StatusOr<ShardMap> ShardMap::Initial(const InitialOptions& options) {
  if (options.nodes.empty()) return InvalidArgumentError("shard map: needs at least one node");
  if (options.bucket_count == 0)
    return InvalidArgumentError("shard map: needs at least one bucket");
  std::vector<NodeId> sorted = options.nodes;
  std::sort(sorted.begin(), sorted.end());
  SHOAL_RETURN_IF_ERROR(CheckReplicationSetting(options.replication_factor, options.min_in_sync,
                                                static_cast<uint32_t>(sorted.size())));
  std::vector<NodeInfo> nodes;
  for (NodeId node : sorted) nodes.push_back({.id = node, .state = NodeState::kActive});
  std::vector<BucketPlacement> buckets;
  const uint32_t n = options.bucket_count;
  for (uint32_t i = 0; i < n; ++i) {
    // begin_i = floor(i * 2^64 / n), computed in 128 bits.
    const auto begin = static_cast<uint64_t>((static_cast<unsigned __int128>(i) << 64) / n);
    BucketRange range = BucketRange::ToMax(begin);
    if (i + 1 < n) {
      const auto end = static_cast<uint64_t>((static_cast<unsigned __int128>(i + 1) << 64) / n);
      SHOAL_ASSIGN_OR_RETURN(range, BucketRange::Make(begin, end));
    }
    std::vector<NodeId> replicas;
    for (uint32_t r = 0; r < options.replication_factor; ++r) {
      replicas.push_back(sorted[(i + r) % sorted.size()]);
    }
    buckets.push_back({.id = BucketId(i),
                       .range = range,
                       .replicas = std::move(replicas),
                       .transition = std::nullopt});
  }
  return Create(MapEpoch(1), options.replication_factor, std::move(nodes), std::move(buckets),
                options.min_in_sync);
}

StatusOr<ShardMap> ShardMap::Create(MapEpoch epoch, uint32_t replication_factor,
                                    std::vector<NodeInfo> nodes,
                                    std::vector<BucketPlacement> buckets, uint32_t min_in_sync) {
  if (min_in_sync == 0) min_in_sync = DefaultMinInSync(replication_factor);
  ShardMap map(epoch, replication_factor, min_in_sync, std::move(nodes), std::move(buckets));
  Status status = map.CheckInvariants();
  if (!status.ok()) return InvalidArgumentError(MessageOf(status));
  return map;
}

const BucketPlacement& ShardMap::Lookup(Point point) const {
  // The last bucket whose begin <= point; the first bucket begins at 0, so it exists.
  auto it = std::upper_bound(
      buckets_.begin(), buckets_.end(), point.value(),
      [](uint64_t p, const BucketPlacement& bucket) { return p < bucket.range.begin(); });
  return *(it - 1);
}

const BucketPlacement* ShardMap::Find(BucketId id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &buckets_[it->second];
}

std::optional<size_t> ShardMap::IndexOf(BucketId id) const {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  return it->second;
}

const NodeInfo* ShardMap::FindNode(NodeId node) const {
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), node,
                             [](const NodeInfo& info, NodeId id) { return info.id < id; });
  return it != nodes_.end() && it->id == node ? &*it : nullptr;
}

std::vector<NodeId> ShardMap::ActiveNodes() const {
  std::vector<NodeId> result;
  for (const NodeInfo& info : nodes_) {
    if (info.state == NodeState::kActive) result.push_back(info.id);
  }
  return result;
}

std::vector<BucketId> ShardMap::BucketsOf(NodeId node) const {
  std::vector<BucketId> result;
  for (const BucketPlacement& bucket : buckets_) {
    if (bucket.HasReplica(node)) result.push_back(bucket.id);
  }
  return result;
}

std::vector<BucketId> ShardMap::TargetBucketsOf(NodeId node) const {
  std::vector<BucketId> result;
  for (const BucketPlacement& bucket : buckets_) {
    const std::vector<NodeId>& target = bucket.TargetReplicas();
    if (std::find(target.begin(), target.end(), node) != target.end()) result.push_back(bucket.id);
  }
  return result;
}

size_t ShardMap::TransitionCount() const {
  return static_cast<size_t>(
      std::count_if(buckets_.begin(), buckets_.end(),
                    [](const BucketPlacement& b) { return b.transition.has_value(); }));
}

size_t ShardMap::TransitionCountOf(NodeId node) const {
  return static_cast<size_t>(
      std::count_if(buckets_.begin(), buckets_.end(), [node](const BucketPlacement& b) {
        return b.transition.has_value() && b.transition->Involves(node);
      }));
}

BucketId ShardMap::NextBucketId() const {
  uint32_t next = 0;
  for (const BucketPlacement& bucket : buckets_) next = std::max(next, bucket.id.value() + 1);
  return BucketId(next);
}

MoveId ShardMap::NextMoveId() const {
  uint64_t next = 1;
  for (const BucketPlacement& bucket : buckets_) {
    if (bucket.transition.has_value()) next = std::max(next, bucket.transition->move.value() + 1);
  }
  return MoveId(next);
}

Status ShardMap::CheckInvariants() const {
  if (epoch_.value() == 0) return InternalError("shard map: epoch must be at least 1");
  if (replication_factor_ == 0) return InternalError("shard map: replication factor is 0");
  if (min_in_sync_ == 0 || min_in_sync_ > replication_factor_) {
    return InternalError(fmt::format("shard map: min_in_sync {} not in [1, K={}]", min_in_sync_,
                                     replication_factor_));
  }
  if (nodes_.empty()) return InternalError("shard map: no nodes");
  for (size_t i = 1; i < nodes_.size(); ++i) {
    if (nodes_[i - 1].id == nodes_[i].id) {
      return InternalError(
          fmt::format("shard map: node {} listed twice", nodes_[i].id.DebugString()));
    }
  }
  if (buckets_.empty()) return InternalError("shard map: no buckets");
  if (buckets_.front().range.begin() != 0) {
    return InternalError(
        fmt::format("shard map: gap before {}", buckets_.front().range.DebugString()));
  }
  if (!buckets_.back().range.end_is_max()) {
    return InternalError(
        fmt::format("shard map: gap after {}", buckets_.back().range.DebugString()));
  }
  for (size_t i = 1; i < buckets_.size(); ++i) {
    if (!buckets_[i - 1].range.IsFollowedBy(buckets_[i].range)) {
      return InternalError(fmt::format("shard map: {} and {} leave a gap or overlap",
                                       buckets_[i - 1].range.DebugString(),
                                       buckets_[i].range.DebugString()));
    }
  }
  if (by_id_.size() != buckets_.size()) return InternalError("shard map: bucket ids repeat");
  std::set<MoveId> moves;
  for (const BucketPlacement& bucket : buckets_) {
    SHOAL_RETURN_IF_ERROR(CheckReplicaList(*this, bucket, bucket.replicas, "replicas"));
    if (bucket.term.value() == 0 || bucket.term.value() > epoch_.value()) {
      return InternalError(fmt::format("bucket {}: term {} not in [1, {}]", bucket.id.DebugString(),
                                       bucket.term.value(), epoch_.value()));
    }
    if (!bucket.transition.has_value()) continue;
    const BucketTransition& t = *bucket.transition;
    const std::string name = bucket.id.DebugString();
    if (!IsStorable(t.stage, t.mode)) {
      return InternalError(fmt::format("bucket {}: stage {} cannot be stored for mode {}", name,
                                       ToString(t.stage), ToString(t.mode)));
    }
    SHOAL_RETURN_IF_ERROR(CheckReplicaList(*this, bucket, t.destination, "destination"));
    if (t.source.empty() || HasDuplicates(t.source)) {
      return InternalError(fmt::format("bucket {}: bad transition source", name));
    }
    if (t.source == t.destination) {
      return InternalError(fmt::format("bucket {}: transition moves nothing", name));
    }
    const std::vector<NodeId>& expected = IsCommitted(t.stage) ? t.destination : t.source;
    if (bucket.replicas != expected) {
      return InternalError(fmt::format("bucket {}: stable replicas {} differ from the {} {} of {}",
                                       name, NodeList(bucket.replicas),
                                       IsCommitted(t.stage) ? "destination" : "source",
                                       NodeList(expected), t.DebugString()));
    }
    if (!moves.insert(t.move).second) {
      return InternalError(fmt::format("shard map: move {} used twice", t.move.DebugString()));
    }
  }
  return OkStatus();
}

std::string ShardMap::DebugString() const {
  std::vector<std::string> nodes;
  for (const NodeInfo& info : nodes_) {
    nodes.push_back(info.state == NodeState::kActive
                        ? info.id.DebugString()
                        : fmt::format("{}({})", info.id.DebugString(), ToString(info.state)));
  }
  std::string text = fmt::format("ShardMap{{{} K={}{} nodes=[{}] buckets={}}}\n",
                                 epoch_.DebugString(), replication_factor_,
                                 min_in_sync_ == DefaultMinInSync(replication_factor_)
                                     ? std::string()
                                     : fmt::format(" min_in_sync={}", min_in_sync_),
                                 fmt::join(nodes, ","), buckets_.size());
  for (const BucketPlacement& bucket : buckets_) {
    text += "  ";
    text += bucket.DebugString();
    text += '\n';
  }
  return text;
}

}  // namespace shoal::cluster
