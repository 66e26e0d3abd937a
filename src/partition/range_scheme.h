#pragma once

// RangeScheme: bounded partitions over raw key order (paper 001 §3.1), placed on nodes with the
// greedy Balance of paper 004 §5.1 (balance.h).
//
// Keys are ordered by KeyRef::raw as unsigned bytes (integers arrive big-endian, so their order
// is numeric). Partition i covers [begin_i, begin_{i+1}); the first begins at the empty key, the
// last runs to the end of the key space. The scheme starts as ONE partition covering everything:
// unlike a hash space, raw keys have no known distribution, so there is no way to pre-cut N
// equal ranges (paper 001 cuts its ring into N equal token ranges because its keys are hashed).
// Instead it grows to N = options.min_partitions as data arrives: while fewer than N partitions
// exist, each insert splits the largest partition at its volume median (if it has two keys).
//
// Sizes: every stored key and its bytes are tracked (OnInsert/OnErase), with keys and bytes per
// partition. Paper 001 §3.1, Equations 1-2:
//   - Split: a partition above Θmax (options.theta_max_bytes) that holds at least two keys is cut
//     between two stored keys so that the two halves hold volumes as equal as possible (the cut
//     is where the cumulative bytes reach half). The right half starts at its first key and stays
//     on the same node. A half still above Θmax splits again. A single key above Θmax stays alone.
//   - Merge: after an erase, the partition that lost the key merges with an ADJACENT partition
//     when both are on the same node and their total is below Θmin (options.theta_min_bytes),
//     only while more than options.min_partitions partitions exist (never fewer than N). With
//     two candidates, the smaller total wins (the left on a tie); merging repeats while allowed.
//   - Hysteresis: Θmax >= 2Θmin (ValidateOptions). Splits happen only on growth (OnInsert) and
//     merges only on shrinkage (OnErase). A merged partition is below Θmin <= Θmax/2, so adding
//     a key of at most Θmin bytes cannot make it split; the two halves of a split total more
//     than Θmax, so removing a key of at most Θmax - Θmin bytes cannot merge them back. With
//     records of at most Θmin bytes, inserts and erases oscillating around a threshold therefore
//     never cycle split-merge-split. (A single key of more than Θmax - Θmin bytes defeats any
//     hysteresis: Equation 1 forces the split it causes.)
//
// Placement: Balance with size = partition bytes at construction, on AddNode, on RemoveNode (the
// removed node's partitions are the unassigned ones) and on Rebalance(). Balance realizes paper
// 001 §3.2 Rules 3-4 in spirit: the most loaded node gives first and a new node takes partitions
// only while that narrows its gap to the most loaded one, i.e. up to about the average.
// Splits stay on their node until the next Balance, as in paper 004.
//
// Lookup: binary search over the partition lower bounds.
//
// Contract: OnInsert of a key already stored replaces its size; OnErase of a key not stored is
// ignored, and an erase removes the bytes recorded for the key (the `bytes` argument is not
// needed). Deterministic: the same options, calls and keys give the same partitions and owners.
//
// Thread-safety: const methods may be called concurrently; mutators need exclusive access.

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/partition/scheme.h"

namespace shoal::partition {

class RangeScheme final : public Scheme {
 public:
  // `nodes` non-empty and distinct, options valid (ValidateOptions); InvalidArgument otherwise.
  [[nodiscard]] static StatusOr<std::unique_ptr<RangeScheme>> Create(const SchemeOptions& options,
                                                                     std::span<const NodeId> nodes);

  [[nodiscard]] SchemeKind kind() const override { return SchemeKind::kRange; }
  [[nodiscard]] NodeId OwnerOf(const KeyRef& key) const override { return Owner(key.raw); }
  [[nodiscard]] NodeId Owner(std::string_view raw) const { return owners_[IndexOf(raw)]; }

  [[nodiscard]] Status AddNode(NodeId node) override;
  [[nodiscard]] Status RemoveNode(NodeId node) override;
  [[nodiscard]] std::vector<NodeId> Nodes() const override { return nodes_; }

  void OnInsert(const KeyRef& key, uint64_t bytes) override;
  void OnErase(const KeyRef& key, uint64_t bytes) override;
  // Runs Balance over the current nodes. Balance cannot fail on a valid scheme; if it ever did
  // (its safety cap), the placement stays as it was.
  void Rebalance() override;

  // Partitions in key order: begin_key, end_key (empty with end_is_max on the last), owner,
  // keys, bytes. The point fields are unused (0).
  [[nodiscard]] std::vector<PartitionInfo> Partitions() const override;

  [[nodiscard]] std::unique_ptr<Scheme> Clone() const override;
  [[nodiscard]] Status CheckInvariants() const override;
  [[nodiscard]] std::string DebugString() const override;

  [[nodiscard]] size_t partition_count() const { return begins_.size(); }
  // The index of the partition that holds `raw`.
  [[nodiscard]] size_t IndexOf(std::string_view raw) const {
    auto it = std::upper_bound(begins_.begin() + 1, begins_.end(), raw,
                               [](std::string_view k, const std::string& b) { return k < b; });
    return static_cast<size_t>(it - begins_.begin()) - 1;
  }
  // Splits and merges since construction.
  [[nodiscard]] uint64_t splits() const { return splits_; }
  [[nodiscard]] uint64_t merges() const { return merges_; }
  [[nodiscard]] uint64_t total_keys() const { return keys_.size(); }
  [[nodiscard]] uint64_t total_bytes() const { return total_bytes_; }

 private:
  struct Totals {
    uint64_t keys = 0;
    uint64_t bytes = 0;
  };

  RangeScheme(const SchemeOptions& options, std::vector<NodeId> nodes);

  // The stored keys of partition `index`, as [first, last) iterators of keys_.
  [[nodiscard]] std::map<std::string, uint64_t, std::less<>>::const_iterator KeysBegin(
      size_t index) const;
  [[nodiscard]] std::map<std::string, uint64_t, std::less<>>::const_iterator KeysEnd(
      size_t index) const;

  // Splits `index` (and its halves) while above Θmax with at least two keys (001 §3.1).
  void SplitWhileOversized(size_t index);
  // While fewer than min_partitions exist, splits the largest partition (paper 001 §3.1's N).
  void SplitUntilMinimumCount();
  // Splits `index` at the volume median; false if it holds fewer than two keys.
  bool Split(size_t index);
  // Merges `index` with adjacent same-node partitions while allowed (001 §3.1).
  void MergeWhileUndersized(size_t index);
  // Balance (paper 004 Algorithm 2) over `nodes_` with partition bytes as sizes; with `initial`
  // no partition has an owner yet.
  [[nodiscard]] Status BalancePartitions(bool initial);

  SchemeOptions options_;
  std::vector<NodeId> nodes_;  // sorted, distinct, non-empty
  // Partitions as a struct of arrays, in key order; begins_[0] is the empty key.
  std::vector<std::string> begins_;
  std::vector<NodeId> owners_;
  std::vector<Totals> totals_;
  std::map<std::string, uint64_t, std::less<>> keys_;  // raw key -> bytes
  uint64_t total_bytes_ = 0;
  uint64_t splits_ = 0;
  uint64_t merges_ = 0;
};

}  // namespace shoal::partition
