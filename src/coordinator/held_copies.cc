#include "src/coordinator/held_copies.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>

#include "src/coordinator/coordinator_internal.h"

namespace shoal::coordinator {
namespace {

// The placement of `bucket` in `map` when `node` holds a copy of its `range` outside its
// replicas; nullptr otherwise (another range: the node's map or this one is behind a split or
// merge, and the copy is not the bucket's; K = 1: a copy outside the replicas is none).
const cluster::BucketPlacement* CopyOf(const cluster::ShardMap& map, NodeId node, BucketId bucket,
                                       const storage::PointRange& range) {
  if (map.replication_factor() <= 1) return nullptr;
  const cluster::BucketPlacement* placement = map.Find(bucket);
  if (placement == nullptr || internal::ToPointRange(placement->range) != range) return nullptr;
  if (placement->HasReplica(node)) return nullptr;
  if (placement->transition.has_value()) {
    const std::vector<NodeId>& to = placement->transition->destination;
    if (std::find(to.begin(), to.end(), node) != to.end()) return nullptr;
  }
  return placement;
}

bool Whole(const cluster::ShardMap& map, const cluster::BucketPlacement& bucket,
           const std::set<NodeId>& down) {
  if (bucket.transition.has_value() || bucket.replicas.size() < map.replication_factor()) {
    return false;
  }
  for (NodeId node : bucket.replicas) {
    if (down.contains(node)) return false;
  }
  return true;
}

}  // namespace

void HeldCopies::Record(NodeId node, const std::vector<transport::HeldCopy>& held) {
  absl::MutexLock lock(&mu_);
  std::map<BucketId, Entry>& before = held_[node];
  std::map<BucketId, Entry> now;
  for (const transport::HeldCopy& copy : held) {
    Entry entry{.range = copy.range, .position = copy.position, .whole_since = std::nullopt};
    auto it = before.find(copy.bucket);
    if (it != before.end() && it->second.range == copy.range) {
      entry.whole_since = it->second.whole_since;
    }
    now.emplace(copy.bucket, entry);
  }
  before = std::move(now);
}

std::map<BucketId, std::vector<HeldCopies::Holder>> HeldCopies::Copies(
    const cluster::ShardMap& map) const {
  std::map<BucketId, std::vector<Holder>> copies;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [node, held] : held_) {
      for (const auto& [bucket, entry] : held) {
        // A copy without a position can neither resume nor be forced primary: it is only
        // dropped (TakeStale).
        if (entry.position.rseq == 0) continue;
        if (CopyOf(map, node, bucket, entry.range) != nullptr) {
          copies[bucket].push_back(Holder{.node = node, .position = entry.position});
        }
      }
    }
  }
  for (auto& [bucket, holders] : copies) {
    std::stable_sort(holders.begin(), holders.end(), [](const Holder& a, const Holder& b) {
      return a.position > b.position;  // held_ is in node order: ties stay so
    });
  }
  return copies;
}

std::map<BucketId, std::vector<NodeId>> HeldCopies::Holders(const cluster::ShardMap& map) const {
  std::map<BucketId, std::vector<NodeId>> holders;
  for (const auto& [bucket, copies] : Copies(map)) {
    std::vector<NodeId>& nodes = holders[bucket];
    for (const Holder& holder : copies) nodes.push_back(holder.node);
    std::sort(nodes.begin(), nodes.end());
  }
  return holders;
}

std::vector<HeldCopies::Stale> HeldCopies::TakeStale(const cluster::ShardMap& map,
                                                     const std::set<NodeId>& down,
                                                     transport::Micros now) {
  std::vector<Stale> stale;
  absl::MutexLock lock(&mu_);
  for (auto& [node, copies] : held_) {
    for (auto& [bucket, entry] : copies) {
      const cluster::BucketPlacement* placement = CopyOf(map, node, bucket, entry.range);
      if (placement == nullptr || !Whole(map, *placement, down)) {
        entry.whole_since.reset();
        continue;
      }
      if (!entry.whole_since.has_value()) entry.whole_since = now;
      if (now - *entry.whole_since < grace_ || down.contains(node)) continue;
      stale.push_back(
          Stale{.node = node, .bucket = bucket, .range = entry.range, .position = entry.position});
    }
  }
  return stale;
}

void HeldCopies::Dropped(NodeId node, BucketId bucket) {
  absl::MutexLock lock(&mu_);
  auto it = held_.find(node);
  if (it != held_.end()) it->second.erase(bucket);
}

Status CheckForceTarget(const cluster::BucketPlacement& placement, NodeId node,
                        const std::vector<HeldCopies::Holder>& holders) {
  if (placement.HasReplica(node)) return OkStatus();
  std::vector<std::string> others;
  for (const HeldCopies::Holder& holder : holders) {
    if (holder.node == node) return OkStatus();
    others.push_back(fmt::format("node {} (term {}, rseq {})", holder.node.value(),
                                 holder.position.term.value(), holder.position.rseq));
  }
  if (others.empty()) return OkStatus();
  return FailedPreconditionError(fmt::format(
      "node {} reported no copy of bucket {}, and {} did: force one of those instead (`shoal "
      "status` lists the copies, the most advanced first); nothing changed",
      node.value(), placement.id.value(), fmt::join(others, ", ")));
}

}  // namespace shoal::coordinator
