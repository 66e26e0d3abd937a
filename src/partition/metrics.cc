#include "src/partition/metrics.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

namespace shoal::partition {

Spread SpreadOf(std::span<const double> values) {
  Spread s;
  if (values.empty()) return s;
  double sum = 0;
  s.min = values[0];
  s.max = values[0];
  for (double v : values) {
    sum += v;
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
  }
  s.mean = sum / static_cast<double>(values.size());
  double squares = 0;
  for (double v : values) squares += (v - s.mean) * (v - s.mean);
  s.stddev = std::sqrt(squares / static_cast<double>(values.size()));
  if (s.mean > 0) {
    s.imbalance = s.stddev / s.mean;
    s.max_over_mean = s.max / s.mean;
  }
  return s;
}

LoadReport ComputeLoad(std::span<const NodeId> nodes, std::span<const NodeId> owners,
                       std::span<const uint32_t> key_bytes) {
  assert(owners.size() == key_bytes.size());
  std::vector<NodeId> sorted(nodes.begin(), nodes.end());
  std::sort(sorted.begin(), sorted.end());
  absl::flat_hash_map<NodeId, size_t> index;
  LoadReport report;
  for (NodeId node : sorted) {
    index[node] = report.per_node.size();
    report.per_node.push_back(NodeLoad{.node = node});
  }
  for (size_t i = 0; i < owners.size(); ++i) {
    auto it = index.find(owners[i]);
    assert(it != index.end());
    NodeLoad& load = report.per_node[it->second];
    ++load.keys;
    load.bytes += key_bytes[i];
  }
  std::vector<double> keys;
  std::vector<double> bytes;
  for (const NodeLoad& load : report.per_node) {
    keys.push_back(static_cast<double>(load.keys));
    bytes.push_back(static_cast<double>(load.bytes));
  }
  report.keys = SpreadOf(keys);
  report.bytes = SpreadOf(bytes);
  return report;
}

double OptimalMovedFraction(std::span<const NodeId> before, std::span<const NodeId> after) {
  if (before.empty() || after.empty()) return 1.0;
  absl::flat_hash_set<NodeId> before_set(before.begin(), before.end());
  size_t kept = 0;
  for (NodeId node : after) kept += before_set.contains(node);
  const double larger = static_cast<double>(std::max(before.size(), after.size()));
  return 1.0 - static_cast<double>(kept) / larger;
}

MoveReport CountMoves(std::span<const NodeId> owners_before, std::span<const NodeId> owners_after,
                      std::span<const uint32_t> key_bytes, std::span<const NodeId> nodes_before,
                      std::span<const NodeId> nodes_after) {
  assert(owners_before.size() == owners_after.size());
  assert(owners_before.size() == key_bytes.size());
  MoveReport report;
  for (size_t i = 0; i < owners_before.size(); ++i) {
    if (owners_before[i] != owners_after[i]) {
      ++report.moved_keys;
      report.moved_bytes += key_bytes[i];
    }
  }
  if (!owners_before.empty()) {
    report.moved_fraction =
        static_cast<double>(report.moved_keys) / static_cast<double>(owners_before.size());
  }
  report.optimal_fraction = OptimalMovedFraction(nodes_before, nodes_after);
  return report;
}

FullnessReport ComputeFullness(std::span<const PartitionInfo> partitions,
                               uint64_t theta_max_bytes) {
  FullnessReport report;
  report.partitions = partitions.size();
  if (theta_max_bytes == 0) return report;
  std::vector<double> fullness;
  fullness.reserve(partitions.size());
  for (const PartitionInfo& p : partitions) {
    fullness.push_back(static_cast<double>(p.bytes) / static_cast<double>(theta_max_bytes));
  }
  report.fullness = SpreadOf(fullness);
  return report;
}

}  // namespace shoal::partition
