#pragma once

// The placement interface shared by every partitioning scheme (ARCHITECTURE.md §1).
//
// A Scheme maps a key to the node that owns it, and changes as nodes are added and removed.
// Schemes are pure: no I/O, no threads, no clocks. Every scheme is deterministic: the same
// options, the same sequence of calls and the same keys give the same owners on every process
// and machine (all hashing goes through src/common/point.h).
//
// Thread-safety: const methods may be called concurrently; mutating methods need exclusive access.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/ids.h"
#include "src/common/point.h"
#include "src/common/status.h"

namespace shoal::partition {

enum class SchemeKind {
  kModulo,      // owner = nodes[point mod n]; the papers' baseline (002 §4.2.1).
  kRange,       // ranges of raw key order, split above Θmax / merged below Θmin (001 §3.1).
  kRing,        // consistent hashing with V virtual nodes per node (002 §4.2.3, §6.3).
  kRendezvous,  // highest random weight, per key or per bucket (002 §4.2.4).
  kJump,        // jump consistent hash (Lamping and Veach, 2014); a reference point.
  kExtendible,  // extendible hashing on the point's high bits + greedy Balance (004 §3, Alg. 2).
  kStatic,      // B equal buckets balanced over the nodes (004's static bucketing baseline).
};

[[nodiscard]] std::string_view SchemeName(SchemeKind kind);
[[nodiscard]] StatusOr<SchemeKind> ParseSchemeKind(std::string_view name);
[[nodiscard]] std::span<const SchemeKind> AllSchemeKinds();

// A key as placement sees it: its point on the hash space and, for range partitioning only, its
// raw bytes in an order-preserving encoding (integers big-endian).
struct KeyRef {
  Point point;
  std::string_view raw;
};

// One partition (bucket, vnode range, key range) as reported for metrics. Ranges are half-open
// [begin, end) over points (hash schemes) or raw keys (range scheme); `end_is_max` marks a range
// that runs to the end of its space. Sizes are what the scheme has seen through OnInsert(); schemes
// that do not track data report 0.
struct PartitionInfo {
  NodeId owner;
  uint64_t begin_point = 0;
  uint64_t end_point = 0;
  bool end_is_max = false;
  std::string begin_key;  // range scheme only
  std::string end_key;    // range scheme only; empty with end_is_max
  uint64_t keys = 0;
  uint64_t bytes = 0;
};

// Options for every scheme; each scheme reads the fields that concern it.
struct SchemeOptions {
  SchemeKind kind = SchemeKind::kRing;
  // Seed for every hash the scheme computes of its own (vnode tokens, HRW weights).
  uint64_t hash_seed = 0;
  // Ring: virtual nodes per node.
  uint32_t vnodes = 200;
  // Static bucketing: number of equal buckets. Rendezvous: 0 = per key, else per bucket.
  uint32_t static_buckets = 1024;
  uint32_t rendezvous_buckets = 0;
  // Range and extendible: split a partition above theta_max_bytes; range merges two adjacent
  // partitions on the same node whose total is below theta_min_bytes, keeping at least
  // min_partitions. theta_max_bytes >= 2 * theta_min_bytes (hysteresis, paper 001 §3.1).
  uint64_t theta_max_bytes = uint64_t{256} * 1024;
  uint64_t theta_min_bytes = uint64_t{128} * 1024;
  uint32_t min_partitions = 1;
  // Extendible: initial and maximum directory depth.
  uint32_t initial_depth = 0;
  uint32_t max_depth = 24;
};

// Checks the options against the documented limits.
[[nodiscard]] Status ValidateOptions(const SchemeOptions& options);

class Scheme {
 public:
  virtual ~Scheme() = default;

  [[nodiscard]] virtual SchemeKind kind() const = 0;

  // The node that owns `key`. The scheme always has at least one node.
  [[nodiscard]] virtual NodeId OwnerOf(const KeyRef& key) const = 0;

  // Adds a node; AlreadyExists if present. Size-driven schemes rebalance their partitions here.
  [[nodiscard]] virtual Status AddNode(NodeId node) = 0;
  // Removes a node; NotFound if absent, FailedPrecondition if it is the last one. Its partitions
  // go to the remaining nodes.
  [[nodiscard]] virtual Status RemoveNode(NodeId node) = 0;

  // The current nodes, sorted by id.
  [[nodiscard]] virtual std::vector<NodeId> Nodes() const = 0;

  // Tells size-driven schemes (range, extendible) that `key` of `bytes` bytes was stored, so
  // they can split (and merge) partitions. Other schemes ignore it. Each key is reported once.
  virtual void OnInsert(const KeyRef& key, uint64_t bytes) {}
  // The reverse of OnInsert: `key` of `bytes` bytes was deleted (range partitions may merge).
  virtual void OnErase(const KeyRef& key, uint64_t bytes) {}

  // Re-runs the scheme's balancing of partitions over the current nodes, as after a bulk load
  // (paper 004 §5.1 rebalances explicitly; splits stay on their node until then). A no-op for
  // schemes whose placement is a pure function of the node set.
  virtual void Rebalance() {}

  // The partitions the scheme keeps, in key order; empty for schemes without partitions
  // (modulo, jump, rendezvous per key).
  [[nodiscard]] virtual std::vector<PartitionInfo> Partitions() const { return {}; }

  [[nodiscard]] virtual std::unique_ptr<Scheme> Clone() const = 0;

  // Internal consistency (totality, no overlap, owners are members, size accounting).
  [[nodiscard]] virtual Status CheckInvariants() const = 0;

  [[nodiscard]] virtual std::string DebugString() const = 0;
};

// Builds a scheme of `options.kind` over `initial_nodes` (non-empty, distinct).
[[nodiscard]] StatusOr<std::unique_ptr<Scheme>> MakeScheme(const SchemeOptions& options,
                                                           std::span<const NodeId> initial_nodes);

}  // namespace shoal::partition
