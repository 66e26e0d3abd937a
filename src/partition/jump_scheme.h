#pragma once

// JumpScheme: jump consistent hash (Lamping and Veach, "A Fast, Minimal Memory, Consistent Hash
// Algorithm", 2014) over the point, then a slot -> node table. A reference point for the other
// schemes: no state but the table, O(log n) expected steps per lookup, even shares.
//
// Jump hashes a key to a slot in [0, n) such that going from n to n + 1 slots moves exactly the
// keys that land in the new slot n (about 1/(n+1) of them). Slots are numbered, not named, so:
//   - AddNode appends a slot for the new node: keys move only to it.
//   - RemoveNode of the node in the last slot pops that slot: only its keys move.
//   - RemoveNode of any other node moves the last slot's node into the freed slot and pops the
//     last slot. The removed node's keys go to the moved node, and the moved node's former keys
//     scatter over all remaining slots. Jump only promises minimal movement when the most
//     recently added (last-slot) node leaves; any other removal moves about twice the optimum.
// The initial nodes fill the slots in id order.
//
// Thread-safety: const methods may be called concurrently; mutators need exclusive access.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "src/partition/scheme.h"

namespace shoal::partition {

class JumpScheme final : public Scheme {
 public:
  // `nodes` non-empty and distinct (NewJumpScheme checks).
  explicit JumpScheme(std::span<const NodeId> nodes);

  [[nodiscard]] SchemeKind kind() const override { return SchemeKind::kJump; }
  [[nodiscard]] NodeId OwnerOf(const KeyRef& key) const override { return Owner(key.point); }
  [[nodiscard]] NodeId Owner(Point point) const {
    return slots_[JumpHash(point.value(), static_cast<uint32_t>(slots_.size()))];
  }
  [[nodiscard]] Status AddNode(NodeId node) override;
  [[nodiscard]] Status RemoveNode(NodeId node) override;
  [[nodiscard]] std::vector<NodeId> Nodes() const override { return nodes_; }

  // The slot table: slot i is served by slots()[i]; the last entry is the node whose removal
  // moves only its own keys.
  [[nodiscard]] const std::vector<NodeId>& slots() const { return slots_; }

  // The jump consistent hash of `key` over `slots` > 0 slots, in [0, slots).
  //
  // The published algorithm follows one key through the sequence of slot counts at which its
  // slot would change: with a 64-bit linear congruential generator seeded by the key it draws a
  // uniform r in (0, 1] and jumps from slot b to floor((b + 1) / r), the next count at which the
  // key moves, until the jump lands at or past `slots`. The last slot reached is the answer.
  [[nodiscard]] static uint32_t JumpHash(uint64_t key, uint32_t slots) {
    constexpr uint64_t kLcgMultiplier = 2862933555777941757ULL;
    constexpr double kTwoPow31 = 2147483648.0;
    int64_t slot = -1;
    int64_t next = 0;
    while (next < static_cast<int64_t>(slots)) {
      slot = next;
      key = key * kLcgMultiplier + 1;
      // (key >> 33) + 1 is uniform over [1, 2^31], so 2^31 / that is 1 / r with r in (0, 1].
      next = static_cast<int64_t>(static_cast<double>(slot + 1) *
                                  (kTwoPow31 / static_cast<double>((key >> 33) + 1)));
    }
    return static_cast<uint32_t>(slot);
  }

  [[nodiscard]] std::unique_ptr<Scheme> Clone() const override;
  [[nodiscard]] Status CheckInvariants() const override;
  [[nodiscard]] std::string DebugString() const override;

 private:
  std::vector<NodeId> nodes_;  // sorted, distinct, non-empty
  std::vector<NodeId> slots_;  // a permutation of nodes_
};

}  // namespace shoal::partition
