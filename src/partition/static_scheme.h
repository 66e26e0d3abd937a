#pragma once

// StaticScheme: static bucketing, paper 004's baseline (Redis hash slots, Couchbase vBuckets).
//
// The space is cut once into B = options.static_buckets equal buckets, bucket(p) =
// floor(p * B / 2^64), so every bucket is one contiguous range; the number of buckets never
// changes, only their owners. Bucket counts per node always differ by at most 1:
//   - Initially bucket b goes to the (b mod n)-th node in id order (balanced round robin).
//   - AddNode: the new node takes buckets one at a time from the currently most loaded node
//     (lowest id on ties; its highest-numbered bucket) until the counts differ by at most 1. It
//     ends with floor(B / (n + 1)) buckets, the least any balanced assignment gives it, and
//     nothing else moves.
//   - RemoveNode: its buckets, in bucket order, go one at a time to the least loaded remaining
//     node (lowest id on ties). Only its keys move.
// A lookup is one multiply and one table read.
//
// Thread-safety: const methods may be called concurrently; mutators need exclusive access.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "src/partition/hash_scheme_util.h"
#include "src/partition/scheme.h"

namespace shoal::partition {

class StaticScheme final : public Scheme {
 public:
  // `nodes` non-empty and distinct, options.static_buckets >= 1 (NewStaticScheme checks).
  StaticScheme(const SchemeOptions& options, std::span<const NodeId> nodes);

  [[nodiscard]] SchemeKind kind() const override { return SchemeKind::kStatic; }
  [[nodiscard]] NodeId OwnerOf(const KeyRef& key) const override { return Owner(key.point); }
  [[nodiscard]] NodeId Owner(Point point) const { return owners_[BucketOf(point)]; }
  [[nodiscard]] Status AddNode(NodeId node) override;
  [[nodiscard]] Status RemoveNode(NodeId node) override;
  [[nodiscard]] std::vector<NodeId> Nodes() const override { return nodes_; }
  // The B buckets in point order.
  [[nodiscard]] std::vector<PartitionInfo> Partitions() const override;

  [[nodiscard]] uint32_t buckets() const { return static_cast<uint32_t>(owners_.size()); }
  [[nodiscard]] uint32_t BucketOf(Point point) const {
    return internal::EqualBucketOf(point.value(), buckets());
  }
  // The buckets of `node` in increasing order; empty if it is not a member.
  [[nodiscard]] std::vector<uint32_t> BucketsOf(NodeId node) const;

  [[nodiscard]] std::unique_ptr<Scheme> Clone() const override;
  // Owners are members, per-node bucket lists match the owner table, counts are balanced.
  [[nodiscard]] Status CheckInvariants() const override;
  [[nodiscard]] std::string DebugString() const override;

 private:
  // The position in nodes_ of the node with the most / the fewest buckets, lowest id on ties.
  [[nodiscard]] size_t MostLoaded() const;
  [[nodiscard]] size_t LeastLoaded() const;

  std::vector<NodeId> nodes_;                      // sorted, distinct, non-empty
  std::vector<std::vector<uint32_t>> buckets_of_;  // parallel to nodes_, each sorted
  std::vector<NodeId> owners_;                     // B entries: the owner of each bucket
};

}  // namespace shoal::partition
