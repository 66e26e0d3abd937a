#include "src/partition/scheme.h"

#include <fmt/format.h>

#include <array>

#include "absl/container/flat_hash_set.h"
#include "src/partition/schemes.h"

namespace shoal::partition {
namespace {

constexpr std::array<SchemeKind, 7> kAllKinds = {
    SchemeKind::kModulo, SchemeKind::kRange,      SchemeKind::kRing,   SchemeKind::kRendezvous,
    SchemeKind::kJump,   SchemeKind::kExtendible, SchemeKind::kStatic,
};

// Documented limits (README, "partition-sim").
constexpr uint32_t kMaxVnodes = 4096;
constexpr uint32_t kMaxStaticBuckets = 1u << 20;
constexpr uint32_t kMaxDepth = 30;

}  // namespace

std::string_view SchemeName(SchemeKind kind) {
  switch (kind) {
    case SchemeKind::kModulo:
      return "modulo";
    case SchemeKind::kRange:
      return "range";
    case SchemeKind::kRing:
      return "ring";
    case SchemeKind::kRendezvous:
      return "rendezvous";
    case SchemeKind::kJump:
      return "jump";
    case SchemeKind::kExtendible:
      return "extendible";
    case SchemeKind::kStatic:
      return "static";
  }
  return "unknown";
}

StatusOr<SchemeKind> ParseSchemeKind(std::string_view name) {
  for (SchemeKind kind : kAllKinds) {
    if (SchemeName(kind) == name) return kind;
  }
  return InvalidArgumentError(
      fmt::format("unknown scheme '{}' (expected modulo, range, ring, rendezvous, jump, "
                  "extendible or static)",
                  name));
}

std::span<const SchemeKind> AllSchemeKinds() { return kAllKinds; }

Status ValidateOptions(const SchemeOptions& options) {
  if (options.vnodes == 0 || options.vnodes > kMaxVnodes) {
    return InvalidArgumentError(fmt::format("vnodes must be in [1, {}]", kMaxVnodes));
  }
  if (options.static_buckets == 0 || options.static_buckets > kMaxStaticBuckets) {
    return InvalidArgumentError(
        fmt::format("static buckets must be in [1, {}]", kMaxStaticBuckets));
  }
  if (options.rendezvous_buckets > kMaxStaticBuckets) {
    return InvalidArgumentError(
        fmt::format("rendezvous buckets must be in [0, {}]", kMaxStaticBuckets));
  }
  if (options.theta_max_bytes == 0) {
    return InvalidArgumentError("theta max must be positive");
  }
  if (options.theta_max_bytes < 2 * options.theta_min_bytes) {
    return InvalidArgumentError(
        "theta max must be at least twice theta min (split/merge hysteresis, paper 001 §3.1)");
  }
  if (options.min_partitions == 0) {
    return InvalidArgumentError("min partitions must be at least 1");
  }
  if (options.max_depth > kMaxDepth || options.initial_depth > options.max_depth) {
    return InvalidArgumentError(fmt::format("depths must satisfy initial <= max <= {}", kMaxDepth));
  }
  return OkStatus();
}

StatusOr<std::unique_ptr<Scheme>> MakeScheme(const SchemeOptions& options,
                                             std::span<const NodeId> initial_nodes) {
  SHOAL_RETURN_IF_ERROR(ValidateOptions(options));
  if (initial_nodes.empty()) return InvalidArgumentError("a scheme needs at least one node");
  absl::flat_hash_set<NodeId> seen;
  for (NodeId node : initial_nodes) {
    if (!seen.insert(node).second) {
      return InvalidArgumentError(fmt::format("duplicate node {}", node.DebugString()));
    }
  }
  switch (options.kind) {
    case SchemeKind::kModulo:
      return NewModuloScheme(options, initial_nodes);
    case SchemeKind::kRange:
      return NewRangeScheme(options, initial_nodes);
    case SchemeKind::kRing:
      return NewRingScheme(options, initial_nodes);
    case SchemeKind::kRendezvous:
      return NewRendezvousScheme(options, initial_nodes);
    case SchemeKind::kJump:
      return NewJumpScheme(options, initial_nodes);
    case SchemeKind::kExtendible:
      return NewExtendibleScheme(options, initial_nodes);
    case SchemeKind::kStatic:
      return NewStaticScheme(options, initial_nodes);
  }
  return InvalidArgumentError("unknown scheme kind");
}

}  // namespace shoal::partition
