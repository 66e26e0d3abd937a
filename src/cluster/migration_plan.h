#pragma once

// Intent and plan (CONVENTIONS.md "intent, plan, execution, persistence apart"): planners
// (balancer.h, bootstrap_planner.h) are pure functions from (ShardMap, LoadReport) to a
// MigrationPlan; an executor turns a plan into ShardMapEdits (ToBeginEdit) and drives each move
// through its stages; a store persists the edits. Value types; thread-compatible.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/cluster/shard_map.h"
#include "src/cluster/shard_map_edit.h"
#include "src/cluster/transition.h"
#include "src/common/ids.h"
#include "src/common/status.h"

namespace shoal::cluster {

// What a planner knows about load. Missing entries count as zero.
struct BucketLoad {
  uint64_t bytes = 0;     // stored size of the bucket (one replica)
  double hits_ema = 0.0;  // EMA of the hit count (paper 001 Equation 3, EmaUpdate)
  // Where to split the bucket so that both halves hold about the same bytes (e.g. the median
  // point of its keys); the midpoint of the range when absent or outside it.
  std::optional<uint64_t> split_point;
};
struct LoadReport {
  std::map<BucketId, BucketLoad> buckets;
  // Workload of each node as a fraction of its capacity (paper 001 uses CPU usage), in [0, 1].
  std::map<NodeId, double> node_utilization;
  // Bytes each node can still receive before its disk reaches the free-space reserve
  // (docs/design/cluster.md, "Free space"); a node not listed has no known limit. Planners give
  // a node no bucket it has no room for, unless the bucket must go somewhere (drain, repair) and
  // no node has room.
  std::map<NodeId, uint64_t> node_room_bytes;

  // True when `node` is listed with no room at all: its free disk space is at its reserve, so it
  // refuses every write (a client's, a replicated one, a move's).
  [[nodiscard]] bool OutOfSpace(NodeId node) const;

  [[nodiscard]] uint64_t BytesOf(BucketId bucket) const;
  [[nodiscard]] double HitsOf(BucketId bucket) const;
  [[nodiscard]] double UtilizationOf(NodeId node) const;
};

// Each node's LoadReport::node_room_bytes less the bytes of the moves in flight to it (a moving
// bucket counts at its destination, as the planners count it); nodes without a known room are
// absent.
[[nodiscard]] std::map<NodeId, uint64_t> RoomAfterMovesInFlight(const ShardMap& map,
                                                                const LoadReport& load);

// Why a move is planned; the order is the priority (lower first).
enum class MoveReason : uint8_t {
  kDiskFull = 0,       // a primary on a node out of disk space goes to a backup (a handoff)
  kDrain = 1,          // a replica sits on a leaving node (paper 001 §3.3)
  kRepair = 2,         // the bucket has fewer than K replicas (paper 001 §3.2 rule 2)
  kPreBootstrap = 3,   // relieve a heavily loaded node now (paper 001 §3.2, rule 3)
  kBalance = 4,        // paper 004 §5.1 Algorithm 2
  kPostBootstrap = 5,  // bring the new node to the average (paper 001 §3.2, rule 4)
};
[[nodiscard]] std::string_view ToString(MoveReason reason);

// One bucket to move from its current replicas to `destination` (primary first).
struct MoveIntent {
  BucketId bucket;
  std::vector<NodeId> source;
  std::vector<NodeId> destination;
  TransitionMode mode = TransitionMode::kCopyThenSwitch;
  MoveReason reason = MoveReason::kBalance;
  uint64_t bytes = 0;  // as reported when planned

  [[nodiscard]] std::string DebugString() const;
  friend bool operator==(const MoveIntent&, const MoveIntent&) = default;
};

// The first step from `source` toward `target` (primary first) that changes one replica, as
// a transition of a replicated bucket must (docs/design/replication.md §2 rule 11): add one copy
// at the end (first, when `source` has fewer), replace one member in its position, or, with the
// same members, take `target`'s order (a handoff). None when `target` equals `source` or only drops
// copies (RemoveReplica and SetReplication do that). With one replica on both sides it is `target`
// itself.
[[nodiscard]] std::optional<std::vector<NodeId>> OneReplicaStep(const std::vector<NodeId>& source,
                                                                const std::vector<NodeId>& target);

// `requested`, except that a switch-then-copy move never changes the primary of a replicated
// bucket (rule 12): such a move is copy-then-switch, a fenced handoff.
[[nodiscard]] TransitionMode ModeFor(const std::vector<NodeId>& source,
                                     const std::vector<NodeId>& destination,
                                     TransitionMode requested);

// Split `bucket` at `at` (paper 001 §3.1: above Θmax).
struct SplitIntent {
  BucketId bucket;
  uint64_t at = 0;
  friend bool operator==(const SplitIntent&, const SplitIntent&) = default;
};

// Merge the adjacent `left` and `right` (same replicas, together below Θmin).
struct MergeIntent {
  BucketId left;
  BucketId right;
  friend bool operator==(const MergeIntent&, const MergeIntent&) = default;
};

struct MigrationPlan {
  std::vector<MoveIntent> moves;  // in priority order
  std::vector<SplitIntent> splits;
  std::vector<MergeIntent> merges;

  [[nodiscard]] bool empty() const { return moves.empty() && splits.empty() && merges.empty(); }
  [[nodiscard]] std::string DebugString() const;
  friend bool operator==(const MigrationPlan&, const MigrationPlan&) = default;
};

// Identifiers an executor hands out; the move log guarantees that move ids are never reused,
// not even those of aborted attempts (FAILURE-PATTERNS.md #6).
struct IdSource {
  MoveId next_move;
  BucketId next_bucket;
};

// The edit (against `map`'s epoch) that starts every move, split and merge of `plan`: a
// BeginTransition per move, a SplitBucket per split (new ids from ids->next_bucket, raised to
// map.NextBucketId() if lower), a MergeBuckets per merge. `ids` is advanced past what was used.
// Apply checks the result; this only fails on an id overflow.
[[nodiscard]] StatusOr<ShardMapEdit> ToBeginEdit(const ShardMap& map, const MigrationPlan& plan,
                                                 IdSource* ids);

}  // namespace shoal::cluster
