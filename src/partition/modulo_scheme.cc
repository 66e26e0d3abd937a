#include "src/partition/modulo_scheme.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "src/partition/schemes.h"

namespace shoal::partition {

ModuloScheme::ModuloScheme(std::vector<NodeId> nodes) : nodes_(std::move(nodes)) {
  std::sort(nodes_.begin(), nodes_.end());
}

Status ModuloScheme::AddNode(NodeId node) {
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), node);
  if (it != nodes_.end() && *it == node) {
    return AlreadyExistsError(fmt::format("node {} already present", node.DebugString()));
  }
  nodes_.insert(it, node);
  return OkStatus();
}

Status ModuloScheme::RemoveNode(NodeId node) {
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), node);
  if (it == nodes_.end() || *it != node) {
    return NotFoundError(fmt::format("node {} not present", node.DebugString()));
  }
  if (nodes_.size() == 1) return FailedPreconditionError("cannot remove the last node");
  nodes_.erase(it);
  return OkStatus();
}

std::unique_ptr<Scheme> ModuloScheme::Clone() const {
  return std::make_unique<ModuloScheme>(*this);
}

Status ModuloScheme::CheckInvariants() const {
  if (nodes_.empty()) return InternalError("modulo: no nodes");
  if (std::adjacent_find(nodes_.begin(), nodes_.end(), std::greater_equal<>()) != nodes_.end()) {
    return InternalError("modulo: nodes not sorted and distinct");
  }
  return OkStatus();
}

std::string ModuloScheme::DebugString() const {
  std::vector<uint32_t> ids;
  for (NodeId n : nodes_) ids.push_back(n.value());
  return fmt::format("modulo{{nodes=[{}]}}", fmt::join(ids, ","));
}

StatusOr<std::unique_ptr<Scheme>> NewModuloScheme(const SchemeOptions& /*options*/,
                                                  std::span<const NodeId> nodes) {
  if (nodes.empty()) return InvalidArgumentError("modulo: needs at least one node");
  return std::make_unique<ModuloScheme>(std::vector<NodeId>(nodes.begin(), nodes.end()));
}

}  // namespace shoal::partition
