#pragma once

// Balance: the greedy assignment of buckets to nodes of paper 004 §5.1, Algorithm 2 ("Computing
// the new global directory"), as a pure function. The extendible and range schemes call it with
// their own bucket sizes (normalized sizes 2^(D-d), partition bytes); the cluster Balancer can
// call it with bucket byte sizes.
//
// Algorithm (paper 004 §5.1, Algorithm 2):
//   Step 1 (lines 2-3): every unassigned bucket goes to the least loaded node. A bucket is
//     unassigned when it has no owner or when its owner is not in the target node set (nodes
//     that leave are simply absent). Unassigned buckets are placed in the order: larger size
//     first, then smaller bucket id first (largest-first keeps the greedy placement tight).
//   Step 2 (lines 4-11): repeat: Pmax = the most loaded node, B = the smallest bucket on Pmax,
//     Pmin = the least loaded node; if |(|Pmax| - |B|) - (|Pmin| + |B|)| < |Pmax| - |Pmin|, move
//     B to Pmin, else stop.
//
// Load order (the paper's tie-break text after Algorithm 2 orders equal partitions by the load
// of their node; here a node is the unit, so the remaining tie-break is the node id): node a is
// more loaded than node b if load(a) > load(b), or if the loads are equal and a's id is higher.
// So among equally loaded nodes the HIGHEST id is Pmax (gives first) and the LOWEST id is Pmin
// (receives first). Among equal-sized buckets on Pmax, the lowest bucket id is B.
//
// Like the paper's greedy, step 2 only ever looks at Pmax: it stops as soon as Pmax's smallest
// bucket is too big to narrow the gap, even if another node with the same load could give.
//
// Room (BalanceOptions::room; empty = the paper's algorithm): a node may have a limit on the
// size it can still receive (a disk near its reserve). Step 2 then gives B to the least loaded
// node with room for it instead of Pmin, and stops when that node fails the paper's test or no
// node has room; step 1 places a bucket on the least loaded node with room for it, or, when no
// node has any, on the least loaded node (a placement that must happen: a leaving node's bucket
// needs an owner; the move itself then waits for space). Every assignment uses up its size of the
// receiver's room; giving a bucket away frees none (the giver's disk is freed only once a move
// ends). With room limits the max - min bound below does not hold; the other properties do.
//
// Groups (BalanceBucket::group; none = the paper's algorithm): the K replicas of one cluster
// bucket are K units of one group, and no node may hold two units of a group (paper 001 §3.2: no
// two copies of a partition on one node). Step 1 places a unit on the least loaded node (with
// room) that holds no unit of its group, falling back to ignoring the group when every node
// holds one. Step 2 then gives to the least loaded node that may receive one of Pmax's buckets
// (no unit of its group there, room for it) the smallest such bucket that passes the paper's
// test, and stops when no node less loaded than Pmax has one. Without groups and room limits
// that is the paper's step 2: Pmin receives, and a larger bucket of Pmax never passes the test
// where the smallest failed. Giving to the least loaded node first keeps a joining node's share
// coming from every other node, not from lateral moves among them. With groups the max - min
// bound below need not hold (a node may be unable to give its smallest buckets to the least
// loaded node); the other properties do, and each move still lowers the sum of squared loads.
//
// Kept units (BalanceBucket::keep; none = the paper's algorithm): a unit whose move costs more
// than moving another (the cluster marks a replicated bucket's primary copy: replacing it first
// needs a handoff of the primary). Step 2 gives the receiver the smallest of Pmax's units that
// passes the test and is not kept, and a kept one only when none other passes. The receiver and
// the stopping rule are unchanged, so every property below holds; only which of the passing
// units moves differs.
//
// Zero-size buckets are never chosen as B: moving one changes no load, so the paper's test can
// never pass for it. With the paper's normalized sizes (all >= 1) this is exactly the paper.
//
// Properties (tested): each move of step 2 strictly narrows the difference of the two nodes it
// touches and never widens the global max - min; it ends with max - min <= the smallest non-zero
// bucket on the most loaded node; the result depends only on the set of (id, size, owner, group,
// keep) and the set of nodes, not on input order. Step 2 strictly decreases the sum of squared
// loads, so it terminates; a safety cap on iterations turns a bug into an Internal error, never a
// hang.
//
// Pure: no I/O, no threads, no clocks. Thread-safe (no shared state).

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "src/common/ids.h"
#include "src/common/status.h"

namespace shoal::partition {

struct BalanceBucket {
  BucketId id;                  // distinct within one call
  uint64_t size = 0;            // any unit (normalized size, bytes); the sum must fit in 64 bits
  std::optional<NodeId> owner;  // none, or a node not in the target set = unassigned
  std::optional<uint32_t> group = std::nullopt;  // units of one group never share a node
  // A unit whose move costs more than another's of its size (see "Kept units").
  bool keep = false;
};

// One reassignment of a bucket. `from` is none for a bucket that had no owner.
struct BalanceMove {
  BucketId bucket;
  std::optional<NodeId> from;
  NodeId to;
  friend bool operator==(const BalanceMove&, const BalanceMove&) = default;
};

struct BalanceOptions {
  // Safety cap on the number of step-2 iterations; 0 = kDefaultMaxStepsPerBucket per bucket plus
  // kMinMaxSteps. Reaching it returns an Internal error.
  uint64_t max_steps = 0;
  static constexpr uint64_t kDefaultMaxStepsPerBucket = 64;
  static constexpr uint64_t kMinMaxSteps = 1024;
  // The most size each listed node may receive in this run (same unit as the sizes); nodes not
  // listed have no limit. See "Room" above.
  std::map<NodeId, uint64_t> room;
};

struct BalanceResult {
  // owners[i] is the final owner of the i-th input bucket; always a member of `nodes`.
  std::vector<NodeId> owners;
  // Net reassignments, one per bucket whose final owner differs from its input owner (all
  // unassigned buckets included), in input order. `from` is the input owner (possibly a node
  // that left, or none). This is what has to be transferred.
  std::vector<BalanceMove> moves;
  // Every single assignment in the order the algorithm made it: step 1's placements, then step
  // 2's moves (a bucket may appear more than once). `from` is none for step 1 and the giving
  // node (Pmax) for step 2.
  std::vector<BalanceMove> steps;
  // Number of step-2 moves (the tail of `steps`).
  uint64_t step2_moves = 0;
  // The target nodes sorted by id, and their final loads in that order.
  std::vector<NodeId> nodes;
  std::vector<uint64_t> loads;
};

// Runs Algorithm 2. InvalidArgument if `nodes` is empty or has duplicates, if bucket ids repeat,
// or if the total size overflows 64 bits; Internal if the safety cap is reached.
[[nodiscard]] StatusOr<BalanceResult> Balance(std::span<const BalanceBucket> buckets,
                                              std::span<const NodeId> nodes,
                                              const BalanceOptions& options = {});

// The load of each node of `nodes` (same order): the total size of the buckets it owns. Buckets
// without an owner or owned by a node not in `nodes` count for nobody.
[[nodiscard]] std::vector<uint64_t> NodeLoads(std::span<const BalanceBucket> buckets,
                                              std::span<const NodeId> nodes);

// max - min of `loads`; 0 when empty.
[[nodiscard]] uint64_t MaxMinSpread(std::span<const uint64_t> loads);

// MaxMinSpread(NodeLoads(buckets, nodes)).
[[nodiscard]] uint64_t LoadSpread(std::span<const BalanceBucket> buckets,
                                  std::span<const NodeId> nodes);

}  // namespace shoal::partition
