#pragma once

// RendezvousScheme: highest random weight hashing (paper 002 §4.2.4; Thaler and Ravishankar).
//
// Every node n has a salt HashU64(n, options.hash_seed). The weight of node n for an input x is
// Avalanche64(x ^ salt(n)), a strong 64-bit finalizer (hash_scheme_util.h): one xor and one
// finalizer per node instead of a full hash per (node, key) pair. Since the point is already a
// uniform xxh3 value, xor-ing a per-node salt and finalizing gives weights that behave as
// independent uniform draws per node. The owner is the node of highest weight, ties going to the
// lower node id.
//
// Per key (options.rendezvous_buckets == 0): x is the point itself and a lookup costs O(n).
// Adding a node moves to it exactly the keys where it wins; removing one moves only its own keys
// (each to the runner-up), so the distribution stays uniform through removals (§4.2.4).
//
// Per bucket (options.rendezvous_buckets = B > 0): the space is cut into B equal buckets,
// bucket(p) = floor(p * B / 2^64), each one contiguous range. x for bucket b is HashU64(b, seed')
// with seed' a domain-separated variant of the hash seed (so bucket b and node b never share a
// hash input). Owners live in a flat table kept equal to a recomputation from scratch: AddNode
// compares the new node against each bucket's owner (O(B)), RemoveNode re-elects only the removed
// node's buckets (O(B)). A lookup is one table read.
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

class RendezvousScheme final : public Scheme {
 public:
  // `nodes` non-empty and distinct (NewRendezvousScheme checks).
  RendezvousScheme(const SchemeOptions& options, std::span<const NodeId> nodes);

  [[nodiscard]] SchemeKind kind() const override { return SchemeKind::kRendezvous; }
  [[nodiscard]] NodeId OwnerOf(const KeyRef& key) const override { return Owner(key.point); }
  [[nodiscard]] NodeId Owner(Point point) const {
    if (buckets_ != 0) return bucket_owners_[internal::EqualBucketOf(point.value(), buckets_)];
    return nodes_[Winner(point.value())];
  }
  [[nodiscard]] Status AddNode(NodeId node) override;
  [[nodiscard]] Status RemoveNode(NodeId node) override;
  [[nodiscard]] std::vector<NodeId> Nodes() const override { return nodes_; }
  // The B buckets in point order in per-bucket mode; empty per key.
  [[nodiscard]] std::vector<PartitionInfo> Partitions() const override;

  // B; 0 in per-key mode.
  [[nodiscard]] uint32_t buckets() const { return buckets_; }
  // The weight of the node with salt `salt` for the hash input `input`.
  [[nodiscard]] static uint64_t Weight(uint64_t input, uint64_t salt) {
    return internal::Avalanche64(input ^ salt);
  }
  // The salt of `node` under `seed`.
  [[nodiscard]] static uint64_t SaltOf(NodeId node, uint64_t seed);
  // The hash input of bucket `bucket` under `seed` (per-bucket mode).
  [[nodiscard]] static uint64_t BucketInput(uint32_t bucket, uint64_t seed);

  [[nodiscard]] std::unique_ptr<Scheme> Clone() const override;
  // Also re-elects every bucket from scratch: O(B * n).
  [[nodiscard]] Status CheckInvariants() const override;
  [[nodiscard]] std::string DebugString() const override;

 private:
  // The position in nodes_ of the highest weight for `input`, lowest id on ties. O(n).
  [[nodiscard]] size_t Winner(uint64_t input) const {
    size_t best = 0;
    uint64_t best_weight = Weight(input, salts_[0]);
    for (size_t i = 1; i < salts_.size(); ++i) {
      const uint64_t w = Weight(input, salts_[i]);
      if (w > best_weight) {  // strict: an equal weight keeps the earlier, lower id
        best = i;
        best_weight = w;
      }
    }
    return best;
  }
  // The position of `node` in nodes_; nodes_.size() if absent.
  [[nodiscard]] size_t PositionOf(NodeId node) const;
  // Fills bucket_owners_ from scratch.
  void ElectAllBuckets();

  uint64_t hash_seed_;
  uint32_t buckets_;
  std::vector<NodeId> nodes_;          // sorted, distinct, non-empty
  std::vector<uint64_t> salts_;        // salts_[i] = SaltOf(nodes_[i], hash_seed_)
  std::vector<NodeId> bucket_owners_;  // B entries in per-bucket mode, else empty
};

}  // namespace shoal::partition
