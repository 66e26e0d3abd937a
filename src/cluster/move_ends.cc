#include "src/cluster/move_ends.h"

#include <algorithm>

namespace shoal::cluster {
namespace {

// The first of `nodes` that `others` lacks; 0 when none.
NodeId FirstOutside(std::span<const NodeId> nodes, std::span<const NodeId> others) {
  for (NodeId node : nodes) {
    if (std::find(others.begin(), others.end(), node) == others.end()) return node;
  }
  return NodeId(0);
}

}  // namespace

MoveEnds EndsOf(std::span<const NodeId> source, std::span<const NodeId> destination) {
  const bool reordered =
      !source.empty() &&
      !std::equal(source.begin(), source.end(), destination.begin(), destination.end()) &&
      std::is_permutation(source.begin(), source.end(), destination.begin(), destination.end());
  if (reordered) {
    return {.from = source.front(), .to = destination.front(), .handoff = true};
  }
  return {.from = FirstOutside(source, destination), .to = FirstOutside(destination, source)};
}

}  // namespace shoal::cluster
