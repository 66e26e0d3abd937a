#pragma once

// RingScheme: consistent hashing with virtual nodes (paper 002 §4.2.3 and §6.3).
//
// Every node places `options.vnodes` tokens on the 64-bit ring; the token of vnode i of node n is
// Hash64(u32le(n) ‖ u32le(i), options.hash_seed) (Algorithm 1, with xxh3 instead of Murmur3).
// Ownership follows Definition 6.1: the owner of point p is the node of the first token >= p,
// and the node of the lowest token also owns the points above the highest token. Tokens are
// kept sorted by (token, node id), so when two nodes draw the same token the lower node id owns
// it whatever the order in which they joined; the other entry owns an empty range until then.
//
// Lookup does not binary-search: the sorted tokens (struct of arrays: tokens_, owners_) carry a
// radix index of 2^k entries, entry b holding the position of the first token >= b << (64 - k),
// with 2^k >= number of tokens (k capped at kMaxIndexBits). A lookup reads index_[p >> (64 - k)]
// and scans forward while the token is < p, which takes less than one step on average. A
// trailing sentinel token 2^64-1 owned by the first node ends every scan, so the scan needs no
// bounds check and the wrap-around of Definition 6.1 falls out of it.
//
// Adding or removing a node moves only the keys of the ranges its tokens cut (O(1/n) of them);
// both rebuild the index, O(tokens + 2^k).
//
// Thread-safety: const methods may be called concurrently; mutators need exclusive access.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "src/partition/scheme.h"

namespace shoal::partition {

// A closed interval [first, last] of points.
struct PointInterval {
  uint64_t first = 0;
  uint64_t last = 0;
  friend bool operator==(const PointInterval&, const PointInterval&) = default;
};

class RingScheme final : public Scheme {
 public:
  // The index never has more than 2^kMaxIndexBits entries (4 MiB).
  static constexpr int kMaxIndexBits = 20;

  // `nodes` non-empty and distinct (NewRingScheme checks); options.vnodes >= 1.
  RingScheme(const SchemeOptions& options, std::span<const NodeId> nodes);

  [[nodiscard]] SchemeKind kind() const override { return SchemeKind::kRing; }
  [[nodiscard]] NodeId OwnerOf(const KeyRef& key) const override { return Owner(key.point); }
  [[nodiscard]] NodeId Owner(Point point) const {
    const uint64_t p = point.value();
    uint32_t i = index_[p >> index_shift_];
    while (tokens_[i] < p) ++i;  // the sentinel 2^64-1 stops the scan
    return owners_[i];
  }

  // Adds `node` with its options.vnodes hashed tokens.
  [[nodiscard]] Status AddNode(NodeId node) override;
  // Adds `node` with operator-chosen tokens (paper 002 §4.2.3: manual placement instead of
  // virtual nodes); duplicates among `tokens` count once. InvalidArgument if `tokens` is empty.
  [[nodiscard]] Status AddNodeWithTokens(NodeId node, std::span<const uint64_t> tokens);
  [[nodiscard]] Status RemoveNode(NodeId node) override;
  [[nodiscard]] std::vector<NodeId> Nodes() const override { return nodes_; }

  // Every non-empty vnode range in point order, half-open [begin, end): the range of token t_i is
  // [t_{i-1} + 1, t_i + 1), the first one starts at 0, and the points above the highest token
  // form a last range owned by the lowest token's node (Definition 6.1). A range that reaches
  // 2^64-1 has end_is_max set and end_point 0.
  [[nodiscard]] std::vector<PartitionInfo> Partitions() const override;

  // The points `node` owns as closed intervals sorted by `first` (paper 002 §6.3.4, Algorithm 4,
  // with its wrap cases: the lowest token also owns (t_max, 2^64-1], which stays a separate
  // interval unless it touches another one). Adjacent intervals are merged, so a ring with a
  // single node yields [0, 2^64-1]. Empty for a node that is not a member.
  [[nodiscard]] std::vector<PointInterval> RangesOf(NodeId node) const;

  // The hashed token of vnode `vnode` of `node` (Algorithm 1).
  [[nodiscard]] static uint64_t VnodeToken(NodeId node, uint32_t vnode, uint64_t seed);

  // The sorted tokens (without the sentinel) and their owners, position by position.
  [[nodiscard]] std::span<const uint64_t> tokens() const {
    return {tokens_.data(), tokens_.size() - 1};
  }
  [[nodiscard]] std::span<const NodeId> token_owners() const {
    return {owners_.data(), owners_.size() - 1};
  }
  // k: the index has 2^k entries.
  [[nodiscard]] int index_bits() const { return 64 - index_shift_; }

  [[nodiscard]] std::unique_ptr<Scheme> Clone() const override;
  [[nodiscard]] Status CheckInvariants() const override;
  [[nodiscard]] std::string DebugString() const override;

 private:
  struct Entry {
    uint64_t token;
    NodeId owner;
    friend auto operator<=>(const Entry&, const Entry&) = default;
  };

  // The vnodes_ hashed tokens of `node`.
  [[nodiscard]] std::vector<uint64_t> HashedTokens(NodeId node) const;
  // Replaces the ring by `entries` (any order, duplicates allowed) and rebuilds the index.
  void Rebuild(std::vector<Entry> entries);
  [[nodiscard]] std::vector<Entry> Entries() const;
  // The number of real tokens (without the sentinel).
  [[nodiscard]] size_t token_count() const { return tokens_.size() - 1; }

  uint32_t vnodes_;
  uint64_t hash_seed_;
  std::vector<NodeId> nodes_;     // sorted, distinct, non-empty
  std::vector<uint64_t> tokens_;  // sorted by (token, owner), then the sentinel 2^64-1
  std::vector<NodeId> owners_;    // owners_[i] holds tokens_[i]; the sentinel's is owners_[0]
  std::vector<uint32_t> index_;   // 2^k entries: first position with token >= b << (64 - k)
  int index_shift_ = 63;          // 64 - k, k in [1, kMaxIndexBits]: never a shift by 64
};

}  // namespace shoal::partition
