#pragma once

// Helpers shared by the size-driven schemes (range, extendible). Internal to src/partition.

#include <span>
#include <string_view>
#include <vector>

#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/partition/scheme.h"

namespace shoal::partition::internal {

// ValidateOptions, then `nodes` non-empty and distinct; errors are prefixed with `scheme`.
[[nodiscard]] Status ValidateSizedSchemeInputs(const SchemeOptions& options,
                                               std::span<const NodeId> nodes,
                                               std::string_view scheme);

// True if `nodes` is strictly increasing.
[[nodiscard]] bool SortedDistinct(const std::vector<NodeId>& nodes);

// True if `node` is in the sorted `nodes`.
[[nodiscard]] bool IsMember(const std::vector<NodeId>& nodes, NodeId node);

// Node ids as integers, for DebugString.
[[nodiscard]] std::vector<uint32_t> NodeValues(const std::vector<NodeId>& nodes);

}  // namespace shoal::partition::internal
