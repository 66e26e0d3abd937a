#pragma once

// ModuloScheme: owner = nodes[point mod n], nodes sorted by id (paper 002 §4.2.1).
// The papers' baseline: perfectly even on consecutive points, but a change of n re-places
// about n/(n+1) of all keys. Thread-safety as Scheme.

#include <vector>

#include "src/partition/scheme.h"

namespace shoal::partition {

class ModuloScheme final : public Scheme {
 public:
  explicit ModuloScheme(std::vector<NodeId> nodes);

  [[nodiscard]] SchemeKind kind() const override { return SchemeKind::kModulo; }
  [[nodiscard]] NodeId OwnerOf(const KeyRef& key) const override { return Owner(key.point); }
  [[nodiscard]] NodeId Owner(Point point) const { return nodes_[point.value() % nodes_.size()]; }
  [[nodiscard]] Status AddNode(NodeId node) override;
  [[nodiscard]] Status RemoveNode(NodeId node) override;
  [[nodiscard]] std::vector<NodeId> Nodes() const override { return nodes_; }
  [[nodiscard]] std::unique_ptr<Scheme> Clone() const override;
  [[nodiscard]] Status CheckInvariants() const override;
  [[nodiscard]] std::string DebugString() const override;

 private:
  std::vector<NodeId> nodes_;  // sorted, distinct, non-empty
};

}  // namespace shoal::partition
