#include "src/partition/hash_scheme_util.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace shoal::partition::internal {

PartitionInfo EqualBucketPartition(uint32_t bucket, uint32_t buckets, NodeId owner) {
  PartitionInfo info;
  info.owner = owner;
  info.begin_point = EqualBucketBegin(bucket, buckets);
  if (bucket + 1 == buckets) {
    info.end_is_max = true;
  } else {
    info.end_point = EqualBucketBegin(bucket + 1, buckets);
  }
  return info;
}

Status CheckInitialNodes(std::string_view scheme, std::span<const NodeId> nodes) {
  if (nodes.empty()) {
    return InvalidArgumentError(fmt::format("{}: needs at least one node", scheme));
  }
  std::vector<NodeId> sorted = SortedNodes(nodes);
  auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  if (dup != sorted.end()) {
    return InvalidArgumentError(fmt::format("{}: duplicate node {}", scheme, dup->DebugString()));
  }
  return OkStatus();
}

std::vector<NodeId> SortedNodes(std::span<const NodeId> nodes) {
  std::vector<NodeId> sorted(nodes.begin(), nodes.end());
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

Status CheckSortedMembers(std::string_view scheme, std::span<const NodeId> nodes) {
  if (nodes.empty()) return InternalError(fmt::format("{}: no nodes", scheme));
  if (std::adjacent_find(nodes.begin(), nodes.end(), std::greater_equal<>()) != nodes.end()) {
    return InternalError(fmt::format("{}: nodes not sorted and distinct", scheme));
  }
  return OkStatus();
}

bool IsMember(std::span<const NodeId> nodes, NodeId node) {
  return std::binary_search(nodes.begin(), nodes.end(), node);
}

std::string JoinNodeIds(std::span<const NodeId> nodes) {
  std::vector<uint32_t> ids;
  ids.reserve(nodes.size());
  for (NodeId n : nodes) ids.push_back(n.value());
  return fmt::format("{}", fmt::join(ids, ","));
}

}  // namespace shoal::partition::internal
