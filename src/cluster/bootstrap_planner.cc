#include "src/cluster/bootstrap_planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

namespace shoal::cluster {
namespace {

bool Holds(const std::vector<NodeId>& nodes, NodeId node) {
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

// Replica counts and holdings with moves in flight counted as done, plus the buckets chosen by
// the plan being built.
class Holdings {
 public:
  Holdings(const ShardMap& map, const LoadReport& load)
      : map_(map), room_(RoomAfterMovesInFlight(map, load)) {
    for (const NodeInfo& node : map.nodes()) count_[node.id] = 0;
    for (const BucketPlacement& bucket : map.buckets()) {
      for (NodeId node : bucket.TargetReplicas()) ++count_[node];
      total_ += bucket.TargetReplicas().size();
    }
  }

  [[nodiscard]] uint64_t total() const { return total_; }
  [[nodiscard]] uint64_t count(NodeId node) const {
    auto it = count_.find(node);
    return it == count_.end() ? 0 : it->second;
  }

  // The bucket `giver` offers to `receiver`: among its buckets that are not moving and not yet
  // chosen, sorted by EMA hit count (then id), the first from the middle on (wrapping) that the
  // receiver does not hold and has room for (paper 001 §3.2). None if there is no such bucket.
  [[nodiscard]] const BucketPlacement* Pick(const LoadReport& load, NodeId giver,
                                            NodeId receiver) const {
    std::vector<const BucketPlacement*> candidates;
    for (const BucketPlacement& bucket : map_.buckets()) {
      if (bucket.transition.has_value() || chosen_.contains(bucket.id)) continue;
      if (Holds(bucket.replicas, giver)) candidates.push_back(&bucket);
    }
    std::sort(candidates.begin(), candidates.end(),
              [&](const BucketPlacement* a, const BucketPlacement* b) {
                const double ha = load.HitsOf(a->id);
                const double hb = load.HitsOf(b->id);
                if (ha != hb) return ha < hb;
                return a->id < b->id;
              });
    const size_t n = candidates.size();
    for (size_t step = 0; step < n; ++step) {
      const BucketPlacement* bucket = candidates[(n / 2 + step) % n];
      if (!Holds(bucket->replicas, receiver) && HasRoom(receiver, load.BytesOf(bucket->id))) {
        return bucket;
      }
    }
    return nullptr;
  }

  // Records the move of `bucket`'s replica from `giver` to `receiver` and returns it.
  MoveIntent Move(const BucketPlacement& bucket, NodeId giver, NodeId receiver, TransitionMode mode,
                  MoveReason reason, const LoadReport& load) {
    chosen_.insert(bucket.id);
    --count_[giver];
    ++count_[receiver];
    Use(receiver, load, bucket);
    std::vector<NodeId> destination = bucket.replicas;
    std::replace(destination.begin(), destination.end(), giver, receiver);
    mode = ModeFor(bucket.replicas, destination, mode);
    return {.bucket = bucket.id,
            .source = bucket.replicas,
            .destination = std::move(destination),
            .mode = mode,
            .reason = reason,
            .bytes = load.BytesOf(bucket.id)};
  }

 private:
  [[nodiscard]] bool HasRoom(NodeId node, uint64_t bytes) const {
    auto it = room_.find(node);
    return it == room_.end() || it->second >= bytes;
  }
  void Use(NodeId node, const LoadReport& load, const BucketPlacement& bucket) {
    auto it = room_.find(node);
    if (it != room_.end()) it->second -= std::min(it->second, load.BytesOf(bucket.id));
  }

  const ShardMap& map_;
  std::map<NodeId, uint64_t> room_;  // RoomAfterMovesInFlight, less what this plan gives
  std::map<NodeId, uint64_t> count_;
  uint64_t total_ = 0;
  std::set<BucketId> chosen_;
};

Status CheckNewNode(const ShardMap& map, NodeId node) {
  const NodeInfo* info = map.FindNode(node);
  if (info == nullptr) {
    return NotFoundError(fmt::format("bootstrap: node {} is not a member", node.DebugString()));
  }
  if (info->state != NodeState::kActive) {
    return FailedPreconditionError(
        fmt::format("bootstrap: node {} is {}", node.DebugString(), ToString(info->state)));
  }
  return OkStatus();
}

// R̄ of rule 4: total replicas over the active nodes (the new node included).
double AverageReplicas(const ShardMap& map, const Holdings& holdings) {
  return static_cast<double>(holdings.total()) / static_cast<double>(map.ActiveNodes().size());
}

// The members other than `new_node`, most loaded first (rule 3): utilization, then replica
// count, both descending, then id.
std::vector<NodeId> ByLoad(const ShardMap& map, const LoadReport& load, const Holdings& holdings,
                           NodeId new_node) {
  std::vector<NodeId> nodes;
  for (const NodeInfo& info : map.nodes()) {
    if (info.id != new_node) nodes.push_back(info.id);
  }
  std::sort(nodes.begin(), nodes.end(), [&](NodeId a, NodeId b) {
    const double ua = load.UtilizationOf(a);
    const double ub = load.UtilizationOf(b);
    if (ua != ub) return ua > ub;
    if (holdings.count(a) != holdings.count(b)) return holdings.count(a) > holdings.count(b);
    return a < b;
  });
  return nodes;
}

}  // namespace

double EmaUpdate(double previous_ema, double hits, double alpha) {
  alpha = std::clamp(alpha, 0.0, 1.0);
  return alpha * hits + (1.0 - alpha) * previous_ema;
}

StatusOr<MigrationPlan> BootstrapPlanner::PreBootstrap(const ShardMap& map, const LoadReport& load,
                                                       NodeId new_node,
                                                       const BootstrapOptions& options) {
  SHOAL_RETURN_IF_ERROR(CheckNewNode(map, new_node));
  Holdings holdings(map, load);
  const double r_bar = AverageReplicas(map, holdings);
  const std::vector<NodeId> others = ByLoad(map, load, holdings, new_node);
  MigrationPlan plan;
  if (others.empty()) return plan;
  double average = 0;
  for (NodeId node : others) average += load.UtilizationOf(node);
  average /= static_cast<double>(others.size());

  for (NodeId giver : others) {
    const double utilization = load.UtilizationOf(giver);
    const bool heavy = utilization > options.heavy_utilization &&
                       utilization >= average * (1.0 + options.heavy_above_average);
    if (!heavy) continue;
    const auto share = static_cast<uint64_t>(
        std::ceil(options.pre_bootstrap_share * static_cast<double>(holdings.count(giver))));
    for (uint64_t i = 0; i < std::max<uint64_t>(share, 1); ++i) {
      if (static_cast<double>(holdings.count(new_node) + 1) > r_bar) return plan;
      if (static_cast<double>(holdings.count(giver)) <= r_bar) break;
      const BucketPlacement* bucket = holdings.Pick(load, giver, new_node);
      if (bucket == nullptr) break;
      plan.moves.push_back(holdings.Move(*bucket, giver, new_node, options.pre_bootstrap_mode,
                                         MoveReason::kPreBootstrap, load));
    }
  }
  // Serve at once even when nobody is heavy: the most loaded nodes give one bucket each.
  for (NodeId giver : others) {
    if (plan.moves.size() >= options.min_pre_bootstrap_moves) break;
    if (static_cast<double>(holdings.count(new_node) + 1) > r_bar) break;
    if (static_cast<double>(holdings.count(giver)) <= r_bar) continue;
    const BucketPlacement* bucket = holdings.Pick(load, giver, new_node);
    if (bucket == nullptr) continue;
    plan.moves.push_back(holdings.Move(*bucket, giver, new_node, options.pre_bootstrap_mode,
                                       MoveReason::kPreBootstrap, load));
  }
  return plan;
}

StatusOr<MigrationPlan> BootstrapPlanner::PostBootstrap(const ShardMap& map, const LoadReport& load,
                                                        NodeId new_node,
                                                        const BootstrapOptions& options) {
  SHOAL_RETURN_IF_ERROR(CheckNewNode(map, new_node));
  Holdings holdings(map, load);
  const double r_bar = AverageReplicas(map, holdings);
  const std::vector<NodeId> sources = ByLoad(map, load, holdings, new_node);
  MigrationPlan plan;
  bool progress = true;
  while (progress) {
    progress = false;
    for (NodeId giver : sources) {
      if (static_cast<double>(holdings.count(new_node) + 1) > r_bar) return plan;
      if (options.max_post_bootstrap_moves != 0 &&
          plan.moves.size() >= options.max_post_bootstrap_moves) {
        return plan;
      }
      if (static_cast<double>(holdings.count(giver)) <= r_bar) continue;
      const BucketPlacement* bucket = holdings.Pick(load, giver, new_node);
      if (bucket == nullptr) continue;
      plan.moves.push_back(holdings.Move(*bucket, giver, new_node, options.post_bootstrap_mode,
                                         MoveReason::kPostBootstrap, load));
      progress = true;
    }
  }
  return plan;
}

StatusOr<MigrationPlan> DecommissionPlanner::Plan(const ShardMap& map, const LoadReport& load,
                                                  NodeId leaving,
                                                  const DecommissionOptions& options) {
  if (!map.HasNode(leaving)) {
    return NotFoundError(
        fmt::format("decommission: node {} is not a member", leaving.DebugString()));
  }
  std::map<NodeId, uint64_t> bytes;  // remaining active nodes -> bytes held
  for (NodeId node : map.ActiveNodes()) {
    if (node != leaving) bytes[node] = 0;
  }
  for (const BucketPlacement& bucket : map.buckets()) {
    for (NodeId node : bucket.TargetReplicas()) {
      auto it = bytes.find(node);
      if (it != bytes.end()) it->second += load.BytesOf(bucket.id);
    }
  }
  std::map<NodeId, uint64_t> room = RoomAfterMovesInFlight(map, load);  // less this plan's
  MigrationPlan plan;
  for (const BucketPlacement& bucket : map.buckets()) {
    // A moving bucket is left for a later plan (rule 1, and one transition per bucket).
    if (bucket.transition.has_value() || !bucket.HasReplica(leaving)) continue;
    // The least loaded node with room for the bucket; when none has room, the least loaded
    // (the replica must leave; its move waits at the destination until space is freed).
    const uint64_t size = load.BytesOf(bucket.id);
    std::optional<NodeId> target;
    std::optional<NodeId> target_with_room;
    for (const auto& [node, held] : bytes) {
      if (bucket.HasReplica(node)) continue;
      if (!target.has_value() || held < bytes[*target]) target = node;
      const auto it = room.find(node);
      const bool fits = it == room.end() || it->second >= size;
      if (fits && (!target_with_room.has_value() || held < bytes[*target_with_room])) {
        target_with_room = node;
      }
    }
    if (target_with_room.has_value()) target = target_with_room;
    if (!target.has_value()) {
      return FailedPreconditionError(fmt::format("decommission: no node can take bucket {} from {}",
                                                 bucket.id.DebugString(), leaving.DebugString()));
    }
    bytes[*target] += size;
    if (auto it = room.find(*target); it != room.end()) it->second -= std::min(it->second, size);
    std::vector<NodeId> destination = bucket.replicas;
    std::replace(destination.begin(), destination.end(), leaving, *target);
    const TransitionMode mode = ModeFor(bucket.replicas, destination, options.mode);
    plan.moves.push_back({.bucket = bucket.id,
                          .source = bucket.replicas,
                          .destination = std::move(destination),
                          .mode = mode,
                          .reason = MoveReason::kDrain,
                          .bytes = load.BytesOf(bucket.id)});
  }
  return plan;
}

}  // namespace shoal::cluster
