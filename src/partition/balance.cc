#include "src/partition/balance.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

namespace shoal::partition {
namespace {

// Position of `node` in the sorted `nodes`, or nodes.size() when absent.
size_t IndexOf(std::span<const NodeId> sorted_nodes, NodeId node) {
  auto it = std::lower_bound(sorted_nodes.begin(), sorted_nodes.end(), node);
  if (it == sorted_nodes.end() || *it != node) return sorted_nodes.size();
  return static_cast<size_t>(it - sorted_nodes.begin());
}

Status ValidateInputs(std::span<const BalanceBucket> buckets, std::span<const NodeId> sorted) {
  if (sorted.empty()) return InvalidArgumentError("balance: needs at least one node");
  auto dup_node = std::adjacent_find(sorted.begin(), sorted.end());
  if (dup_node != sorted.end()) {
    return InvalidArgumentError(fmt::format("balance: duplicate node {}", dup_node->DebugString()));
  }
  std::vector<BucketId> ids;
  ids.reserve(buckets.size());
  uint64_t total = 0;
  for (const BalanceBucket& bucket : buckets) {
    ids.push_back(bucket.id);
    if (__builtin_add_overflow(total, bucket.size, &total)) {
      return InvalidArgumentError("balance: total bucket size overflows 64 bits");
    }
  }
  std::sort(ids.begin(), ids.end());
  auto dup_id = std::adjacent_find(ids.begin(), ids.end());
  if (dup_id != ids.end()) {
    return InvalidArgumentError(fmt::format("balance: duplicate bucket {}", dup_id->DebugString()));
  }
  return OkStatus();
}

// The mutable state of one run: loads per node in the load order of balance.h and, per node, its
// non-empty buckets ordered by (size, id) so that the smallest is first.
class Assignment {
 public:
  Assignment(std::span<const BalanceBucket> buckets, std::vector<NodeId> nodes,
             const std::map<NodeId, uint64_t>& room)
      : buckets_(buckets),
        nodes_(std::move(nodes)),
        loads_(nodes_.size(), 0),
        room_(nodes_.size()),
        held_(nodes_.size()),
        groups_(nodes_.size()),
        owner_index_(buckets.size(), kNone) {
    for (size_t n = 0; n < nodes_.size(); ++n) {
      auto it = room.find(nodes_[n]);
      if (it != room.end()) room_[n] = it->second;
    }
    for (size_t i = 0; i < buckets_.size(); ++i) {
      if (!buckets_[i].owner.has_value()) continue;
      size_t node = IndexOf(nodes_, *buckets_[i].owner);
      if (node < nodes_.size()) Add(i, node);
    }
    for (size_t n = 0; n < nodes_.size(); ++n) order_.insert({loads_[n], n});
  }

  bool assigned(size_t bucket) const { return owner_index_[bucket] != kNone; }
  size_t owner_index(size_t bucket) const { return owner_index_[bucket]; }
  const std::vector<NodeId>& nodes() const { return nodes_; }
  const std::vector<uint64_t>& loads() const { return loads_; }

  // Least loaded node: lowest (load, id). Most loaded node: highest (load, id).
  size_t LeastLoaded() const { return order_.begin()->second; }
  size_t MostLoaded() const { return order_.rbegin()->second; }
  // The least loaded node other than `except` with room for `size`, or kNone.
  size_t LeastLoadedWithRoom(uint64_t size, size_t except) const {
    for (const auto& [load, node] : order_) {
      if (node != except && (!room_[node].has_value() || *room_[node] >= size)) return node;
    }
    return kNone;
  }
  // The same, among the nodes that hold no unit of `bucket`'s group, or kNone.
  size_t LeastLoadedFor(size_t bucket, size_t except) const {
    for (const auto& [load, node] : order_) {
      if (node != except && MayReceive(node, bucket)) return node;
    }
    return kNone;
  }
  // Room for `bucket` and no unit of its group.
  bool MayReceive(size_t node, size_t bucket) const {
    return HasRoom(node, buckets_[bucket].size) && !HoldsGroupOf(node, bucket);
  }
  // (load, node index), least loaded first.
  const std::set<std::pair<uint64_t, size_t>>& order() const { return order_; }

  // The first of the non-empty buckets of `node`, smallest first (lowest id among equal
  // sizes), for which `accept` is true, or kNone.
  template <typename Accept>
  size_t FirstOn(size_t node, const Accept& accept) const {
    for (const auto& key : held_[node]) {
      if (accept(std::get<2>(key))) return std::get<2>(key);
    }
    return kNone;
  }
  [[nodiscard]] bool empty(size_t node) const { return held_[node].empty(); }

  // Moves (or places) `bucket` to `node`, keeping the load order.
  void AssignTo(size_t bucket, size_t node) {
    size_t from = owner_index_[bucket];
    if (from != kNone) {
      order_.erase({loads_[from], from});
      Remove(bucket, from);
      order_.insert({loads_[from], from});
    }
    order_.erase({loads_[node], node});
    Add(bucket, node);
    if (room_[node].has_value()) {
      room_[node] = *room_[node] - std::min(*room_[node], buckets_[bucket].size);
    }
    order_.insert({loads_[node], node});
  }

  static constexpr size_t kNone = static_cast<size_t>(-1);

 private:
  bool HasRoom(size_t node, uint64_t size) const {
    return !room_[node].has_value() || *room_[node] >= size;
  }
  bool HoldsGroupOf(size_t node, size_t bucket) const {
    const std::optional<uint32_t>& group = buckets_[bucket].group;
    return group.has_value() && groups_[node].contains(*group);
  }
  void Add(size_t bucket, size_t node) {
    owner_index_[bucket] = node;
    loads_[node] += buckets_[bucket].size;
    if (buckets_[bucket].size > 0) held_[node].insert(Key(bucket));
    if (buckets_[bucket].group.has_value()) groups_[node].insert(*buckets_[bucket].group);
  }
  void Remove(size_t bucket, size_t node) {
    owner_index_[bucket] = kNone;
    loads_[node] -= buckets_[bucket].size;
    held_[node].erase(Key(bucket));
    if (buckets_[bucket].group.has_value()) {
      groups_[node].erase(groups_[node].find(*buckets_[bucket].group));
    }
  }
  std::tuple<uint64_t, BucketId, size_t> Key(size_t bucket) const {
    return {buckets_[bucket].size, buckets_[bucket].id, bucket};
  }

  std::span<const BalanceBucket> buckets_;
  std::vector<NodeId> nodes_;  // sorted
  std::vector<uint64_t> loads_;
  std::vector<std::optional<uint64_t>> room_;  // none = no limit
  std::vector<std::set<std::tuple<uint64_t, BucketId, size_t>>> held_;
  std::vector<std::multiset<uint32_t>> groups_;  // per node, the groups of its units
  std::set<std::pair<uint64_t, size_t>> order_;  // (load, node index); index order = id order
  std::vector<size_t> owner_index_;
};

}  // namespace

StatusOr<BalanceResult> Balance(std::span<const BalanceBucket> buckets,
                                std::span<const NodeId> nodes, const BalanceOptions& options) {
  std::vector<NodeId> sorted(nodes.begin(), nodes.end());
  std::sort(sorted.begin(), sorted.end());
  SHOAL_RETURN_IF_ERROR(ValidateInputs(buckets, sorted));

  Assignment assignment(buckets, std::move(sorted), options.room);
  BalanceResult result;

  // Step 1 (Algorithm 2, lines 2-3): unassigned buckets, larger first, then lower id first, each
  // to the least loaded node (with room for it, when some node has).
  std::vector<size_t> unassigned;
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (!assignment.assigned(i)) unassigned.push_back(i);
  }
  std::sort(unassigned.begin(), unassigned.end(), [&](size_t a, size_t b) {
    if (buckets[a].size != buckets[b].size) return buckets[a].size > buckets[b].size;
    return buckets[a].id < buckets[b].id;
  });
  for (size_t i : unassigned) {
    size_t target = assignment.LeastLoadedFor(i, Assignment::kNone);
    if (target == Assignment::kNone) {
      target = assignment.LeastLoadedWithRoom(buckets[i].size, Assignment::kNone);
    }
    if (target == Assignment::kNone) target = assignment.LeastLoaded();
    assignment.AssignTo(i, target);
    result.steps.push_back({buckets[i].id, std::nullopt, assignment.nodes()[target]});
  }

  // Step 2 (Algorithm 2, lines 4-11).
  const uint64_t cap = options.max_steps != 0
                           ? options.max_steps
                           : BalanceOptions::kMinMaxSteps +
                                 BalanceOptions::kDefaultMaxStepsPerBucket * buckets.size();
  // The paper's test for moving a bucket of `size` from a node at `load_max` to one at
  // `load_min`, in unsigned arithmetic: size <= load_max, and load_min + size <= total, which
  // fits in 64 bits (checked above).
  const auto narrows = [](uint64_t load_max, uint64_t load_min, uint64_t size) {
    if (load_min >= load_max) return false;
    const uint64_t after_max = load_max - size;
    const uint64_t after_min = load_min + size;
    const uint64_t after_diff =
        after_max > after_min ? after_max - after_min : after_min - after_max;
    return after_diff < load_max - load_min;
  };
  while (assignment.nodes().size() > 1) {
    const size_t pmax = assignment.MostLoaded();
    if (assignment.empty(pmax)) break;  // Pmax holds no load: every node is empty.
    // The receiver: Pmin, or with room limits and groups the least loaded node that may take
    // one of Pmax's buckets; B: the smallest of those it may take, kept units last (balance.h,
    // "Room", "Groups", "Kept units").
    const uint64_t load_max = assignment.loads()[pmax];
    size_t pmin = Assignment::kNone;
    size_t b = Assignment::kNone;
    for (const auto& [load, receiver] : assignment.order()) {
      if (load >= load_max) break;
      // Copied into the lambda: clang 14 (`make fuzz`) cannot capture structured bindings.
      const auto passes = [&, load = load, receiver = receiver](size_t candidate) {
        return assignment.MayReceive(receiver, candidate) &&
               narrows(load_max, load, buckets[candidate].size);
      };
      b = assignment.FirstOn(pmax, [&](size_t c) { return !buckets[c].keep && passes(c); });
      if (b == Assignment::kNone) b = assignment.FirstOn(pmax, passes);
      if (b != Assignment::kNone) {
        pmin = receiver;
        break;
      }
    }
    if (b == Assignment::kNone) break;
    if (result.step2_moves == cap) {
      return InternalError(fmt::format("balance: no fixed point after {} moves", cap));
    }
    assignment.AssignTo(b, pmin);
    result.steps.push_back({buckets[b].id, assignment.nodes()[pmax], assignment.nodes()[pmin]});
    ++result.step2_moves;
  }

  result.owners.reserve(buckets.size());
  for (size_t i = 0; i < buckets.size(); ++i) {
    NodeId owner = assignment.nodes()[assignment.owner_index(i)];
    result.owners.push_back(owner);
    if (buckets[i].owner != owner) result.moves.push_back({buckets[i].id, buckets[i].owner, owner});
  }
  result.nodes = assignment.nodes();
  result.loads = assignment.loads();
  return result;
}

std::vector<uint64_t> NodeLoads(std::span<const BalanceBucket> buckets,
                                std::span<const NodeId> nodes) {
  // (node, position in `nodes`) sorted by node, for a binary search per bucket.
  std::vector<std::pair<NodeId, size_t>> index;
  index.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) index.push_back({nodes[i], i});
  std::sort(index.begin(), index.end());
  std::vector<uint64_t> loads(nodes.size(), 0);
  for (const BalanceBucket& bucket : buckets) {
    if (!bucket.owner.has_value()) continue;
    auto it =
        std::lower_bound(index.begin(), index.end(), std::make_pair(*bucket.owner, size_t{0}));
    if (it != index.end() && it->first == *bucket.owner) loads[it->second] += bucket.size;
  }
  return loads;
}

uint64_t MaxMinSpread(std::span<const uint64_t> loads) {
  if (loads.empty()) return 0;
  auto [lo, hi] = std::minmax_element(loads.begin(), loads.end());
  return *hi - *lo;
}

uint64_t LoadSpread(std::span<const BalanceBucket> buckets, std::span<const NodeId> nodes) {
  std::vector<uint64_t> loads = NodeLoads(buckets, nodes);
  return MaxMinSpread(loads);
}

}  // namespace shoal::partition
