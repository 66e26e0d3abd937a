#include "src/partition/jump_scheme.h"

#include <fmt/format.h>

#include <algorithm>

#include "src/partition/hash_scheme_util.h"
#include "src/partition/schemes.h"

namespace shoal::partition {

JumpScheme::JumpScheme(std::span<const NodeId> nodes)
    : nodes_(internal::SortedNodes(nodes)), slots_(nodes_) {}

Status JumpScheme::AddNode(NodeId node) {
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), node);
  if (it != nodes_.end() && *it == node) {
    return AlreadyExistsError(fmt::format("node {} already present", node.DebugString()));
  }
  nodes_.insert(it, node);
  slots_.push_back(node);
  return OkStatus();
}

Status JumpScheme::RemoveNode(NodeId node) {
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), node);
  if (it == nodes_.end() || *it != node) {
    return NotFoundError(fmt::format("node {} not present", node.DebugString()));
  }
  if (nodes_.size() == 1) return FailedPreconditionError("cannot remove the last node");
  nodes_.erase(it);
  auto slot = std::find(slots_.begin(), slots_.end(), node);
  *slot = slots_.back();  // a no-op when `node` holds the last slot
  slots_.pop_back();
  return OkStatus();
}

std::unique_ptr<Scheme> JumpScheme::Clone() const { return std::make_unique<JumpScheme>(*this); }

Status JumpScheme::CheckInvariants() const {
  SHOAL_RETURN_IF_ERROR(internal::CheckSortedMembers("jump", nodes_));
  std::vector<NodeId> sorted_slots = slots_;
  std::sort(sorted_slots.begin(), sorted_slots.end());
  if (sorted_slots != nodes_) {
    return InternalError("jump: the slots are not a permutation of the nodes");
  }
  return OkStatus();
}

std::string JumpScheme::DebugString() const {
  return fmt::format("jump{{slots=[{}]}}", internal::JoinNodeIds(slots_));
}

StatusOr<std::unique_ptr<Scheme>> NewJumpScheme(const SchemeOptions& options,
                                                std::span<const NodeId> nodes) {
  SHOAL_RETURN_IF_ERROR(ValidateOptions(options));
  SHOAL_RETURN_IF_ERROR(internal::CheckInitialNodes("jump", nodes));
  return std::make_unique<JumpScheme>(nodes);
}

}  // namespace shoal::partition
