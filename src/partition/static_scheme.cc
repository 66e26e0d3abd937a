#include "src/partition/static_scheme.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "src/partition/schemes.h"

namespace shoal::partition {

StaticScheme::StaticScheme(const SchemeOptions& options, std::span<const NodeId> nodes)
    : nodes_(internal::SortedNodes(nodes)),
      buckets_of_(nodes_.size()),
      owners_(options.static_buckets) {
  for (uint32_t b = 0; b < owners_.size(); ++b) {
    const size_t i = b % nodes_.size();
    owners_[b] = nodes_[i];
    buckets_of_[i].push_back(b);
  }
}

size_t StaticScheme::MostLoaded() const {
  size_t best = 0;
  for (size_t i = 1; i < nodes_.size(); ++i) {
    if (buckets_of_[i].size() > buckets_of_[best].size()) best = i;
  }
  return best;
}

size_t StaticScheme::LeastLoaded() const {
  size_t best = 0;
  for (size_t i = 1; i < nodes_.size(); ++i) {
    if (buckets_of_[i].size() < buckets_of_[best].size()) best = i;
  }
  return best;
}

Status StaticScheme::AddNode(NodeId node) {
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), node);
  if (it != nodes_.end() && *it == node) {
    return AlreadyExistsError(fmt::format("node {} already present", node.DebugString()));
  }
  const auto pos = it - nodes_.begin();
  nodes_.insert(it, node);
  buckets_of_.insert(buckets_of_.begin() + pos, std::vector<uint32_t>());
  const size_t mine = static_cast<size_t>(pos);
  while (true) {
    const size_t donor = MostLoaded();
    if (buckets_of_[donor].size() <= buckets_of_[mine].size() + 1) break;
    const uint32_t bucket = buckets_of_[donor].back();
    buckets_of_[donor].pop_back();
    buckets_of_[mine].push_back(bucket);
    owners_[bucket] = node;
  }
  std::sort(buckets_of_[mine].begin(), buckets_of_[mine].end());
  return OkStatus();
}

Status StaticScheme::RemoveNode(NodeId node) {
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), node);
  if (it == nodes_.end() || *it != node) {
    return NotFoundError(fmt::format("node {} not present", node.DebugString()));
  }
  if (nodes_.size() == 1) return FailedPreconditionError("cannot remove the last node");
  const auto pos = it - nodes_.begin();
  std::vector<uint32_t> orphans = std::move(buckets_of_[static_cast<size_t>(pos)]);
  nodes_.erase(it);
  buckets_of_.erase(buckets_of_.begin() + pos);
  std::vector<bool> touched(nodes_.size(), false);
  for (uint32_t bucket : orphans) {
    const size_t heir = LeastLoaded();
    buckets_of_[heir].push_back(bucket);
    owners_[bucket] = nodes_[heir];
    touched[heir] = true;
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (touched[i]) std::sort(buckets_of_[i].begin(), buckets_of_[i].end());
  }
  return OkStatus();
}

std::vector<PartitionInfo> StaticScheme::Partitions() const {
  std::vector<PartitionInfo> partitions;
  partitions.reserve(owners_.size());
  for (uint32_t b = 0; b < buckets(); ++b) {
    partitions.push_back(internal::EqualBucketPartition(b, buckets(), owners_[b]));
  }
  return partitions;
}

std::vector<uint32_t> StaticScheme::BucketsOf(NodeId node) const {
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), node);
  if (it == nodes_.end() || *it != node) return {};
  return buckets_of_[static_cast<size_t>(it - nodes_.begin())];
}

std::unique_ptr<Scheme> StaticScheme::Clone() const {
  return std::make_unique<StaticScheme>(*this);
}

Status StaticScheme::CheckInvariants() const {
  SHOAL_RETURN_IF_ERROR(internal::CheckSortedMembers("static", nodes_));
  if (buckets_of_.size() != nodes_.size()) {
    return InternalError("static: bucket lists and nodes disagree");
  }
  if (owners_.empty()) return InternalError("static: no buckets");
  size_t listed = 0;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const std::vector<uint32_t>& list = buckets_of_[i];
    if (std::adjacent_find(list.begin(), list.end(), std::greater_equal<>()) != list.end()) {
      return InternalError(
          fmt::format("static: buckets of {} not sorted and distinct", nodes_[i].DebugString()));
    }
    for (uint32_t b : list) {
      if (b >= owners_.size() || owners_[b] != nodes_[i]) {
        return InternalError(fmt::format("static: bucket {} listed under {} but owned elsewhere", b,
                                         nodes_[i].DebugString()));
      }
    }
    listed += list.size();
  }
  // Every listed bucket is owned by its lister, so equal totals mean each bucket is listed once
  // and every owner is a member.
  if (listed != owners_.size()) {
    return InternalError(
        fmt::format("static: {} buckets listed, {} buckets exist", listed, owners_.size()));
  }
  const size_t most = buckets_of_[MostLoaded()].size();
  const size_t least = buckets_of_[LeastLoaded()].size();
  if (most > least + 1) {
    return InternalError(fmt::format("static: bucket counts range from {} to {}", least, most));
  }
  return OkStatus();
}

std::string StaticScheme::DebugString() const {
  std::vector<size_t> counts;
  for (const auto& list : buckets_of_) counts.push_back(list.size());
  return fmt::format("static{{nodes=[{}], buckets={}, per_node=[{}]}}",
                     internal::JoinNodeIds(nodes_), owners_.size(), fmt::join(counts, ","));
}

StatusOr<std::unique_ptr<Scheme>> NewStaticScheme(const SchemeOptions& options,
                                                  std::span<const NodeId> nodes) {
  SHOAL_RETURN_IF_ERROR(ValidateOptions(options));
  SHOAL_RETURN_IF_ERROR(internal::CheckInitialNodes("static", nodes));
  return std::make_unique<StaticScheme>(options, nodes);
}

}  // namespace shoal::partition
