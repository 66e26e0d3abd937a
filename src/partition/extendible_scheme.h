#pragma once

// ExtendibleScheme: dynamic bucketing with extendible hashing (paper 004 §3) and the greedy
// Balance of paper 004 §5.1, Algorithm 2 (balance.h).
//
// Buckets are dyadic prefixes of the point's HIGH-order bits (the paper uses low-order bits; the
// two are equivalent, and high bits make every bucket one contiguous range, ARCHITECTURE.md §1):
// the bucket with prefix x and local depth d covers [x << (64-d), (x+1) << (64-d)); d = 0 is the
// whole space. The global directory has depth D = the largest local depth (at least
// options.initial_depth) and 2^D slots; slot s = point >> (64-D) points to the bucket whose
// prefix is s >> (D-d). A bucket of depth d fills 2^(D-d) consecutive slots.
//
// Sizes: OnInsert/OnErase track keys and bytes per bucket and keep each bucket's entries (per
// point: the number of keys and their bytes; distinct keys rarely share a point, and keys that
// do always fall in the same half), so that a split divides them exactly. A bucket whose bytes
// exceed options.theta_max_bytes splits in two by one more bit, while its depth is below
// options.max_depth; the directory doubles when the bucket's depth equals D. Both halves stay on
// the bucket's node: splits are local (paper 004 §3-4), only Balance moves buckets. Buckets never
// merge (the paper's dynamic bucketing only splits); OnErase only updates the accounting.
//
// Placement: Balance with the paper's normalized size |B| = 2^(D-d) (the share of the hash space
// the bucket covers, in units of directory slots) runs at construction (all 2^initial_depth
// buckets unassigned), on AddNode, on RemoveNode (the removed node's buckets are the unassigned
// ones) and on Rebalance(). It balances shares of the hash space, not bytes: on hashed points
// the two agree, on skewed points they may not.
//
// Memory and time: the directory and every Balance are O(2^D); D only grows as far as the data
// needs (and options.max_depth allows), but a large options.initial_depth pays for 2^D buckets
// up front.
//
// Lookup: a flat per-slot owner array, Owner(p) = slot_owner_[p >> (64-D)], computed as
// (p >> 1) >> (63-D) so that D = 0 needs no branch (and no shift by 64).
//
// Contract: OnInsert reports each key once; OnErase of a key never inserted is ignored (its point
// has no entry) and never drives the accounting below zero. Deterministic: the same options,
// calls and points give the same buckets and owners on every process.
//
// Thread-safety: const methods may be called concurrently; mutators need exclusive access.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "src/partition/scheme.h"

namespace shoal::partition {

class ExtendibleScheme final : public Scheme {
 public:
  // `nodes` non-empty and distinct, options valid (ValidateOptions); InvalidArgument otherwise.
  [[nodiscard]] static StatusOr<std::unique_ptr<ExtendibleScheme>> Create(
      const SchemeOptions& options, std::span<const NodeId> nodes);

  [[nodiscard]] SchemeKind kind() const override { return SchemeKind::kExtendible; }
  [[nodiscard]] NodeId OwnerOf(const KeyRef& key) const override { return Owner(key.point); }
  [[nodiscard]] NodeId Owner(Point point) const {
    return slot_owner_[(point.value() >> 1) >> shift_];
  }

  [[nodiscard]] Status AddNode(NodeId node) override;
  [[nodiscard]] Status RemoveNode(NodeId node) override;
  [[nodiscard]] std::vector<NodeId> Nodes() const override { return nodes_; }

  void OnInsert(const KeyRef& key, uint64_t bytes) override;
  void OnErase(const KeyRef& key, uint64_t bytes) override;
  // Runs Balance over the current nodes. Balance cannot fail on a valid scheme; if it ever did
  // (its safety cap), the placement stays as it was.
  void Rebalance() override;

  // Buckets in point order: [begin, end) points, owner, keys, bytes.
  [[nodiscard]] std::vector<PartitionInfo> Partitions() const override;

  [[nodiscard]] std::unique_ptr<Scheme> Clone() const override;
  [[nodiscard]] Status CheckInvariants() const override;
  [[nodiscard]] std::string DebugString() const override;

  // The global depth D.
  [[nodiscard]] uint32_t global_depth() const { return depth_; }
  [[nodiscard]] size_t bucket_count() const { return buckets_.size(); }
  // Splits since construction.
  [[nodiscard]] uint64_t splits() const { return splits_; }
  [[nodiscard]] uint64_t total_keys() const { return total_keys_; }
  [[nodiscard]] uint64_t total_bytes() const { return total_bytes_; }

 private:
  struct Entry {
    uint64_t keys = 0;
    uint64_t bytes = 0;
  };
  struct Bucket {
    uint64_t prefix = 0;  // the high `depth` bits of every point in the bucket
    uint32_t depth = 0;   // local depth d <= D
    NodeId owner;
    uint64_t keys = 0;
    uint64_t bytes = 0;
    absl::flat_hash_map<uint64_t, Entry> entries;  // point -> the keys at that point
  };

  ExtendibleScheme(const SchemeOptions& options, std::vector<NodeId> nodes);

  [[nodiscard]] size_t SlotOf(uint64_t point) const {
    return static_cast<size_t>((point >> 1) >> shift_);
  }
  // First slot and slot count of `bucket` in the current directory.
  [[nodiscard]] size_t FirstSlot(const Bucket& bucket) const;
  [[nodiscard]] size_t SlotCount(const Bucket& bucket) const;

  // Splits `index` (and the halves) while above theta_max and below max_depth.
  void SplitWhileOversized(uint32_t index);
  // Splits bucket `index` by one more bit; returns the index of the new upper half.
  uint32_t Split(uint32_t index);
  void DoubleDirectory();
  // Balance (paper 004 Algorithm 2) over `nodes_`; with `initial` no bucket has an owner yet.
  [[nodiscard]] Status BalanceBuckets(bool initial);
  void RefillSlotOwners();

  SchemeOptions options_;
  std::vector<NodeId> nodes_;          // sorted, distinct, non-empty
  uint32_t depth_ = 0;                 // D
  uint32_t shift_ = 63;                // 63 - D
  std::vector<NodeId> slot_owner_;     // 2^D entries
  std::vector<uint32_t> slot_bucket_;  // 2^D entries, index into buckets_
  std::vector<Bucket> buckets_;        // in creation order (index = BucketId for Balance)
  uint64_t total_keys_ = 0;
  uint64_t total_bytes_ = 0;
  uint64_t splits_ = 0;
};

}  // namespace shoal::partition
