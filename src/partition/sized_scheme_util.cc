#include "src/partition/sized_scheme_util.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

namespace shoal::partition::internal {

Status ValidateSizedSchemeInputs(const SchemeOptions& options, std::span<const NodeId> nodes,
                                 std::string_view scheme) {
  SHOAL_RETURN_IF_ERROR(Prefixed(ValidateOptions(options), scheme));
  if (nodes.empty()) {
    return InvalidArgumentError(fmt::format("{}: needs at least one node", scheme));
  }
  std::vector<NodeId> sorted(nodes.begin(), nodes.end());
  std::sort(sorted.begin(), sorted.end());
  auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  if (dup != sorted.end()) {
    return InvalidArgumentError(fmt::format("{}: duplicate node {}", scheme, dup->DebugString()));
  }
  return OkStatus();
}

bool SortedDistinct(const std::vector<NodeId>& nodes) {
  return std::adjacent_find(nodes.begin(), nodes.end(), std::greater_equal<>()) == nodes.end();
}

bool IsMember(const std::vector<NodeId>& nodes, NodeId node) {
  return std::binary_search(nodes.begin(), nodes.end(), node);
}

std::vector<uint32_t> NodeValues(const std::vector<NodeId>& nodes) {
  std::vector<uint32_t> values;
  values.reserve(nodes.size());
  for (NodeId node : nodes) values.push_back(node.value());
  return values;
}

}  // namespace shoal::partition::internal
