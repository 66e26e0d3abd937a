#include "src/cluster/balancer.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "src/partition/balance.h"

namespace shoal::cluster {
namespace {

bool Holds(const std::vector<NodeId>& nodes, NodeId node) {
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

// A copy's weight in Algorithm 2: its bucket's bytes, and at least 1, so that the copies of empty
// buckets are spread by count too: a node that joins, or whose copies were rebuilt elsewhere, in
// a cluster that holds no data yet gets its share of copies (and so of primaries) before the
// data arrives. One byte is nothing beside a bucket that holds data.
uint64_t WeightOf(const LoadReport& load, BucketId bucket) {
  return std::max<uint64_t>(1, load.BytesOf(bucket));
}

Status ValidateOptions(const BalancerOptions& options) {
  if (options.max_moves_per_node == 0) {
    return InvalidArgumentError("balancer: max_moves_per_node must be at least 1");
  }
  if (options.theta_max_bytes != 0 && options.theta_min_bytes != 0 &&
      options.theta_max_bytes / 2 < options.theta_min_bytes) {
    return InvalidArgumentError(fmt::format("balancer: theta_max {} must be >= 2 * theta_min {}",
                                            options.theta_max_bytes, options.theta_min_bytes));
  }
  return OkStatus();
}

// Candidate moves from Algorithm 2 under the concurrency limit, in priority order. `pending`
// is set when Algorithm 2 wants any change at all (even one the limit defers).
StatusOr<std::vector<MoveIntent>> BalanceMoves(const ShardMap& map, const LoadReport& load,
                                               const BalancerOptions& options, bool* pending) {
  const uint32_t k = map.replication_factor();
  std::vector<NodeId> active = map.ActiveNodes();
  if (k > 1) {
    std::erase_if(active, [&](NodeId node) { return Holds(options.unavailable, node); });
  }
  // A map always has buckets, and they need a home.
  if (active.empty()) return FailedPreconditionError("balancer: no active node");
  std::vector<partition::BalanceBucket> units;
  for (size_t i = 0; i < map.buckets().size(); ++i) {
    const BucketPlacement& bucket = map.buckets()[i];
    const std::vector<NodeId>& target = bucket.TargetReplicas();
    // A bucket never has more replicas than there are active nodes.
    const size_t slots = std::min<size_t>(k, active.size());
    for (size_t r = 0; r < slots; ++r) {
      // The K units of a bucket form a group: Algorithm 2 never puts two on one node.
      partition::BalanceBucket unit{
          .id = BucketId(static_cast<uint32_t>(i * k + r)),
          .size = WeightOf(load, bucket.id),
          .owner = std::nullopt,
          .group = k > 1 ? std::optional<uint32_t>(static_cast<uint32_t>(i)) : std::nullopt};
      if (r < target.size() && Holds(active, target[r])) unit.owner = target[r];
      // The primary's copy moves last: replacing it first hands the primary to a backup that
      // stays (ExecutableStep), and the primaries then need evening out again.
      unit.keep = k > 1 && r == 0 && unit.owner.has_value();
      units.push_back(unit);
    }
  }
  // Free space (partition/balance.h, "Room"): nodes near their disk reserve receive only what
  // fits; the bytes of moves already in flight to a node are counted as received.
  partition::BalanceOptions balance_options;
  balance_options.room = RoomAfterMovesInFlight(map, load);
  SHOAL_ASSIGN_OR_RETURN(partition::BalanceResult result,
                         partition::Balance(units, active, balance_options));
  std::map<NodeId, uint64_t> loads;
  for (size_t n = 0; n < result.nodes.size(); ++n) loads[result.nodes[n]] = result.loads[n];

  // Replay Algorithm 2's steps under the concurrency limit. Step 1 (drain, repair) placements
  // are taken while they fit; step 2 moves only if all of step 1 fits, and only as a PREFIX of
  // the step sequence: the state after a prefix is one the greedy passed through, so every plan
  // strictly lowers the sum of squared loads and plan -> apply converges.
  std::vector<size_t> unit_bucket(units.size());
  for (size_t i = 0, u = 0; i < map.buckets().size(); ++i) {
    const size_t slots = std::min<size_t>(k, active.size());
    for (size_t r = 0; r < slots; ++r) unit_bucket[u++] = i;
  }
  std::map<BucketId, size_t> unit_index;
  for (size_t u = 0; u < units.size(); ++u) unit_index[units[u].id] = u;
  std::vector<std::optional<NodeId>> owner(units.size());
  for (size_t u = 0; u < units.size(); ++u) owner[u] = units[u].owner;
  std::map<NodeId, uint32_t> busy;
  for (const NodeInfo& node : map.nodes()) {
    busy[node.id] = static_cast<uint32_t>(map.TransitionCountOf(node.id));
  }
  const auto fits = [&](std::optional<NodeId> from, NodeId to) {
    return (!from.has_value() || busy[*from] < options.max_moves_per_node) &&
           busy[to] < options.max_moves_per_node && !Holds(options.damped, to);
  };
  const auto take = [&](size_t u, std::optional<NodeId> from, NodeId to) {
    if (from.has_value()) ++busy[*from];
    ++busy[to];
    owner[u] = to;
  };
  // A copy added in step 1 goes to a node that holds one outside the replicas when it may
  // receive it (BalancerOptions::held_copies): it ends at most that bucket above the most loaded
  // node after step 1, the one bucket of spread Algorithm 2 itself leaves.
  std::map<NodeId, uint64_t> step1_loads;
  {
    const std::vector<uint64_t> before = partition::NodeLoads(units, active);
    for (size_t n = 0; n < active.size(); ++n) step1_loads[active[n]] = before[n];
    for (size_t s = 0; s < result.steps.size() - result.step2_moves; ++s) {
      step1_loads[result.steps[s].to] += units[unit_index[result.steps[s].bucket]].size;
    }
  }
  uint64_t max_load = 0;
  for (const auto& [node, node_load] : step1_loads) max_load = std::max(max_load, node_load);
  // Each unit's owner once step 1 has placed it (a redirect waits for no step 2).
  std::vector<std::optional<NodeId>> step1_owner(units.size());
  for (size_t v = 0; v < units.size(); ++v) step1_owner[v] = units[v].owner;
  for (size_t s = 0; s < result.steps.size() - result.step2_moves; ++s) {
    step1_owner[unit_index[result.steps[s].bucket]] = result.steps[s].to;
  }
  const size_t group_slots = std::min<size_t>(k, active.size());
  // The holder a unit goes to; `wait` when the only holders that may take it are at the move
  // limit now: resuming there soon costs less than a snapshot elsewhere.
  struct Holder {
    std::optional<NodeId> node;
    bool wait = false;
  };
  const auto holder_for = [&](size_t u, std::optional<NodeId> from) -> Holder {
    Holder out;
    if (k == 1) return out;
    const size_t i = unit_bucket[u];
    auto held = options.held_copies.find(map.buckets()[i].id);
    if (held == options.held_copies.end()) return out;
    const uint64_t size = units[u].size;
    for (NodeId node : held->second) {
      if (!Holds(active, node) || Holds(options.damped, node) ||
          Holds(map.buckets()[i].TargetReplicas(), node) || step1_loads[node] > max_load) {
        continue;
      }
      if (auto room = balance_options.room.find(node);
          room != balance_options.room.end() && room->second < size) {
        continue;
      }
      bool in_group = false;
      for (size_t v = i * group_slots; v < (i + 1) * group_slots; ++v) {
        in_group = in_group || (v != u && (owner[v] == node || step1_owner[v] == node));
      }
      if (in_group) continue;
      if (!fits(from, node)) {
        out.wait = true;
        continue;
      }
      if (!out.node.has_value() || step1_loads[node] < step1_loads[*out.node]) out.node = node;
    }
    if (out.node.has_value()) out.wait = false;
    return out;
  };
  bool step1_complete = true;
  bool redirected = false;
  for (size_t s = 0; s < result.steps.size() - result.step2_moves; ++s) {
    const partition::BalanceMove& step = result.steps[s];
    const size_t u = unit_index[step.bucket];
    // The unit's previous owner left (drain) or is missing (repair).
    std::optional<NodeId> from;
    const std::vector<NodeId>& target = map.buckets()[unit_bucket[u]].TargetReplicas();
    const size_t r = units[u].id.value() % k;
    if (r < target.size()) from = target[r];
    if (map.buckets()[unit_bucket[u]].transition.has_value()) {
      step1_complete = false;
      continue;
    }
    NodeId to = step.to;
    const Holder holder = holder_for(u, from);
    if (holder.wait) {
      step1_complete = false;
      continue;
    }
    if (holder.node.has_value() && *holder.node != step.to) {
      loads[step.to] -= units[u].size;
      loads[*holder.node] += units[u].size;
      step1_loads[step.to] -= units[u].size;
      step1_loads[*holder.node] += units[u].size;
      if (auto room = balance_options.room.find(*holder.node); room != balance_options.room.end()) {
        room->second -= units[u].size;
      }
      to = *holder.node;
      step1_owner[u] = to;
      redirected = true;
    }
    if (!fits(from, to)) {
      step1_complete = false;
      continue;
    }
    take(u, from, to);
  }
  // Algorithm 2's step 2 starts from its own step 1: after a redirected placement it waits for
  // the next plan.
  if (step1_complete && !redirected) {
    for (size_t s = result.steps.size() - result.step2_moves; s < result.steps.size(); ++s) {
      const partition::BalanceMove& step = result.steps[s];
      const size_t u = unit_index[step.bucket];
      if (map.buckets()[unit_bucket[u]].transition.has_value()) break;  // in flight: wait
      if (!fits(step.from, step.to)) break;
      take(u, step.from, step.to);
    }
  }

  // Weight per node with the moves in flight counted as done: a replicated bucket's balance step
  // is taken only if it strictly lowers the sum of squared loads, so that one-replica steps
  // cannot undo one another.
  std::map<NodeId, uint64_t> held;
  for (const BucketPlacement& bucket : map.buckets()) {
    for (NodeId node : bucket.TargetReplicas()) held[node] += WeightOf(load, bucket.id);
  }
  const auto improves = [&](NodeId from, NodeId to, uint64_t weight) {
    return held[to] + weight < held[from];
  };

  std::vector<MoveIntent> moves;
  size_t u = 0;
  for (size_t i = 0; i < map.buckets().size(); ++i) {
    const BucketPlacement& bucket = map.buckets()[i];
    const std::vector<NodeId>& target = bucket.TargetReplicas();
    const size_t slots = std::min<size_t>(k, active.size());
    std::vector<NodeId> proposed;
    for (size_t r = 0; r < slots; ++r, ++u) {
      if (owner[u].has_value()) proposed.push_back(*owner[u]);
    }
    if (bucket.transition.has_value()) continue;  // in flight: counted as done, not re-planned
    // Two replicas on one node (possible for K > 1): keep the slot's owner or pick another node.
    for (size_t r = 0; r < proposed.size(); ++r) {
      const auto earlier =
          std::find(proposed.begin(), proposed.begin() + static_cast<ptrdiff_t>(r), proposed[r]);
      if (earlier == proposed.begin() + static_cast<ptrdiff_t>(r)) continue;
      std::optional<NodeId> pick;
      if (r < target.size() && Holds(active, target[r]) && !Holds(proposed, target[r])) {
        pick = target[r];
      }
      std::optional<NodeId> least_loaded;  // else the least loaded node without a copy
      for (const auto& [node, node_load] : loads) {
        if (Holds(proposed, node)) continue;
        if (!least_loaded.has_value() || node_load < loads[*least_loaded]) least_loaded = node;
      }
      if (!pick.has_value()) pick = least_loaded;
      if (!pick.has_value()) return InternalError("balancer: no distinct node for a replica");
      proposed[r] = *pick;
    }
    // Algorithm 2 balances copies, not primaries: the same members in another order is no move.
    if (std::is_permutation(proposed.begin(), proposed.end(), bucket.replicas.begin(),
                            bucket.replicas.end())) {
      continue;
    }
    // One replica changes per move; the next plan takes the next step.
    std::optional<std::vector<NodeId>> step = OneReplicaStep(bucket.replicas, proposed);
    if (!step.has_value()) continue;
    MoveReason reason = MoveReason::kBalance;
    if (bucket.replicas.size() < step->size()) reason = MoveReason::kRepair;
    for (NodeId node : bucket.replicas) {
      if (!Holds(active, node)) reason = MoveReason::kDrain;
    }
    if (k > 1 && reason == MoveReason::kBalance && step->size() == bucket.replicas.size()) {
      const auto from = std::find_if(bucket.replicas.begin(), bucket.replicas.end(),
                                     [&](NodeId node) { return !Holds(*step, node); });
      const auto to = std::find_if(step->begin(), step->end(),
                                   [&](NodeId node) { return !Holds(bucket.replicas, node); });
      if (from != bucket.replicas.end() && to != step->end()) {
        const uint64_t weight = WeightOf(load, bucket.id);
        if (!improves(*from, *to, weight)) continue;
        held[*from] -= weight;
        held[*to] += weight;
      }
    }
    const TransitionMode mode = ModeFor(bucket.replicas, *step, options.mode);
    moves.push_back({.bucket = bucket.id,
                     .source = bucket.replicas,
                     .destination = *std::move(step),
                     .mode = mode,
                     .reason = reason,
                     .bytes = load.BytesOf(bucket.id)});
  }
  std::stable_sort(moves.begin(), moves.end(),
                   [](const MoveIntent& a, const MoveIntent& b) { return a.reason < b.reason; });
  // True when Algorithm 2 wants more than the limit allowed now: no split or merge yet.
  *pending = result.step2_moves > 0 || !result.steps.empty();
  return moves;
}

void PlanSplitsAndMerges(const ShardMap& map, const LoadReport& load,
                         const BalancerOptions& options, MigrationPlan* plan) {
  const auto buckets = map.buckets();
  std::vector<bool> splitting(buckets.size(), false);
  if (options.theta_max_bytes != 0) {
    for (size_t i = 0; i < buckets.size(); ++i) {
      const BucketPlacement& bucket = buckets[i];
      if (bucket.transition.has_value() || bucket.range.width_minus_one() == 0) continue;
      if (load.BytesOf(bucket.id) <= options.theta_max_bytes) continue;
      uint64_t at = bucket.range.Midpoint();
      auto it = load.buckets.find(bucket.id);
      if (it != load.buckets.end() && it->second.split_point.has_value() &&
          *it->second.split_point > bucket.range.begin() &&
          bucket.range.Contains(Point(*it->second.split_point))) {
        at = *it->second.split_point;
      }
      plan->splits.push_back({.bucket = bucket.id, .at = at});
      splitting[i] = true;
    }
  }
  if (options.theta_min_bytes != 0) {
    for (size_t i = 0;
         i + 1 < buckets.size() && buckets.size() - plan->merges.size() > options.min_buckets;
         ++i) {
      const BucketPlacement& left = buckets[i];
      const BucketPlacement& right = buckets[i + 1];
      if (splitting[i] || splitting[i + 1]) continue;
      if (left.transition.has_value() || right.transition.has_value()) continue;
      if (left.replicas != right.replicas) continue;
      if (load.BytesOf(left.id) + load.BytesOf(right.id) >= options.theta_min_bytes) continue;
      plan->merges.push_back({.left = left.id, .right = right.id});
      ++i;  // a bucket takes part in at most one merge per plan
    }
  }
}

// The move that gives `bucket`'s primary to its backup `heir`: the same copies, `heir` first, no
// data moved.
MoveIntent HandoffOf(const BucketPlacement& bucket, NodeId heir, MoveReason reason) {
  std::vector<NodeId> target{heir};
  for (NodeId node : bucket.replicas) {
    if (node != heir) target.push_back(node);
  }
  return {.bucket = bucket.id,
          .source = bucket.replicas,
          .destination = std::move(target),
          .mode = TransitionMode::kCopyThenSwitch,
          .reason = reason,
          .bytes = 0};
}

// A handoff planned by PlanHandoffs: bucket `index` of the map gives its primary to `heir`.
struct Handoff {
  size_t index = 0;
  NodeId heir;
};

// Primaries serve the reads and order the writes (docs/design/replication.md §7). With nothing
// else to do, each handoff gives one bucket's primary to one of its backups (no data moves, no
// copy added), at most options.max_moves_per_node per node and plan. Nodes that are leaving,
// unavailable or damped neither give nor take primaries here. A bucket's hits (LoadReport
// hits_ema) are the requests its primary serves, reads and writes (paper 001 counts a
// partition's hits). Two rules, by the load report:
//   - hits known (the buckets' hits_ema average at least kMinMeanBucketHits): per node, the
//     load of its primaries (the sum of their buckets' hits_ema). A handoff of a bucket of load
//     h from `from` to `to` is planned only if h > 0 and L(from) - (L(to) + h) >
//     kHandoffHitMargin * (the mean load of a bucket): the receiver ends more than the margin
//     below the giver's load before it. So the pair's larger load strictly falls, no node ends
//     above the largest load before, the sum of squared loads falls by more than 2h * margin
//     (plans converge), and the reverse handoff is never planned (no flapping). Among the
//     handoffs allowed, the one lowering the sum of squares the most goes first;
//   - no hits known (or too few to weigh: noise would move primaries): the same by count
//     (every bucket weighs 1, no margin), from the node with the most primaries to a backup on
//     the node with the fewest while they differ by more than one, so that every node ends
//     within one of the others.
// With equal hits per bucket the two rules plan the same handoffs: a margin of half a bucket
// asks for a difference of more than 1.5 buckets, as the count rule asks for more than one.
constexpr double kHandoffHitMargin = 0.5;
// Requests per second per bucket, on average, below which primaries are placed by count.
constexpr double kMinMeanBucketHits = 1.0;

void PlanHandoffs(const ShardMap& map, const LoadReport& load, const BalancerOptions& options,
                  MigrationPlan* plan) {
  std::map<NodeId, double> primaries;  // per eligible node: its primaries' load or count
  for (NodeId node : map.ActiveNodes()) {
    // A node out of disk space gives its primaries away by PlanDiskFullHandoffs, and takes none.
    if (!Holds(options.unavailable, node) && !Holds(options.damped, node) &&
        !load.OutOfSpace(node)) {
      primaries[node] = 0;
    }
  }
  if (primaries.size() < 2) return;
  double total_hits = 0;
  for (const BucketPlacement& bucket : map.buckets()) total_hits += load.HitsOf(bucket.id);
  const bool by_hits = total_hits > 0 &&
                       total_hits >= kMinMeanBucketHits * static_cast<double>(map.buckets().size());
  const auto weight = [&](const BucketPlacement& bucket) {
    return by_hits ? load.HitsOf(bucket.id) : 1.0;
  };
  const double margin =
      by_hits ? kHandoffHitMargin * total_hits / static_cast<double>(map.buckets().size()) : 0;
  for (const BucketPlacement& bucket : map.buckets()) {
    if (auto it = primaries.find(bucket.replicas.front()); it != primaries.end()) {
      it->second += weight(bucket);
    }
  }
  std::map<NodeId, uint32_t> busy;
  std::vector<bool> taken(map.buckets().size(), false);
  while (true) {
    std::optional<Handoff> best;
    double best_gain = 0;  // how much the handoff lowers the sum of squared loads, halved
    for (size_t i = 0; i < map.buckets().size(); ++i) {
      const BucketPlacement& bucket = map.buckets()[i];
      if (taken[i] || bucket.transition.has_value() || bucket.replicas.size() < 2) continue;
      const double h = weight(bucket);
      if (h <= 0) continue;
      auto from = primaries.find(bucket.replicas.front());
      if (from == primaries.end() || busy[from->first] >= options.max_moves_per_node) continue;
      for (size_t r = 1; r < bucket.replicas.size(); ++r) {
        auto to = primaries.find(bucket.replicas[r]);
        if (to == primaries.end() || busy[to->first] >= options.max_moves_per_node) continue;
        const double gap = from->second - (to->second + h);  // the receiver below, after
        if (gap <= margin) continue;
        const double gain = h * gap;
        if (!best.has_value() || gain > best_gain) {
          best = Handoff{.index = i, .heir = to->first};
          best_gain = gain;
        }
      }
    }
    if (!best.has_value()) return;
    const BucketPlacement& bucket = map.buckets()[best->index];
    primaries[bucket.replicas.front()] -= weight(bucket);
    primaries[best->heir] += weight(bucket);
    ++busy[bucket.replicas.front()];
    ++busy[best->heir];
    taken[best->index] = true;
    plan->moves.push_back(HandoffOf(bucket, best->heir, MoveReason::kBalance));
  }
}

// A primary on a node out of disk space (LoadReport::OutOfSpace) refuses every write to its
// bucket, while its backups may have room: each such bucket's primary goes to the backup with
// room, active, available and not damped, that leads the fewest primaries (the lowest id among
// equals). No data moves, and the bucket keeps its copies; the node, now a backup, is removed
// from the configuration if it refuses the writes that follow (docs/design/replication.md §4.1).
// A bucket without such a backup keeps its primary, and its writes fail with NO_SPACE until
// space is freed.
std::vector<MoveIntent> PlanDiskFullHandoffs(const ShardMap& map, const LoadReport& load,
                                             const BalancerOptions& options) {
  std::vector<MoveIntent> handoffs;
  std::map<NodeId, size_t> led;
  for (const BucketPlacement& bucket : map.buckets()) ++led[bucket.replicas.front()];
  const std::vector<NodeId> active = map.ActiveNodes();
  for (const BucketPlacement& bucket : map.buckets()) {
    const NodeId primary = bucket.replicas.front();
    if (bucket.transition.has_value() || bucket.replicas.size() < 2 || !load.OutOfSpace(primary) ||
        Holds(options.unavailable, primary)) {
      continue;
    }
    std::optional<NodeId> heir;
    for (size_t r = 1; r < bucket.replicas.size(); ++r) {
      const NodeId node = bucket.replicas[r];
      if (!Holds(active, node) || Holds(options.unavailable, node) || Holds(options.damped, node) ||
          load.OutOfSpace(node)) {
        continue;
      }
      if (!heir.has_value() || led[node] < led[*heir] ||
          (led[node] == led[*heir] && node < *heir)) {
        heir = node;
      }
    }
    if (!heir.has_value()) continue;
    --led[primary];
    ++led[*heir];
    handoffs.push_back(HandoffOf(bucket, *heir, MoveReason::kDiskFull));
  }
  return handoffs;
}

}  // namespace

StatusOr<MigrationPlan> Balancer::Plan(const ShardMap& map, const LoadReport& load,
                                       const BalancerOptions& options) {
  SHOAL_RETURN_IF_ERROR(ValidateOptions(options));
  MigrationPlan plan;
  bool pending = false;
  SHOAL_ASSIGN_OR_RETURN(std::vector<MoveIntent> moves, BalanceMoves(map, load, options, &pending));
  // Handoffs off a full disk first (writes to those buckets fail until then); a bucket handed
  // off takes its other moves in a later plan.
  if (map.replication_factor() > 1) plan.moves = PlanDiskFullHandoffs(map, load, options);
  for (MoveIntent& move : moves) {
    const bool handed_off =
        std::any_of(plan.moves.begin(), plan.moves.end(),
                    [&](const MoveIntent& handoff) { return handoff.bucket == move.bucket; });
    if (handed_off) {
      pending = true;
    } else {
      plan.moves.push_back(std::move(move));
    }
  }
  // Split and merge come last: only once drain, repair and balance want nothing.
  if (plan.moves.empty() && !pending && map.TransitionCount() == 0) {
    PlanSplitsAndMerges(map, load, options, &plan);
  }
  // Primaries last: once every copy is where it belongs.
  if (map.replication_factor() > 1 && plan.empty() && !pending) {
    PlanHandoffs(map, load, options, &plan);
  }
  return plan;
}

}  // namespace shoal::cluster
