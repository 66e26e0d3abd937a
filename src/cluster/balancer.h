#pragma once

// Balancer: the pure, idempotent planner of the coordinator (CONVENTIONS.md "intent, plan,
// execution apart"; docs/design/shard-map.md).
//
// Plan(map, load, options) looks at the map with every move in flight counted as done (a moving
// bucket's owners are its destination; it is never planned again until its transition is gone)
// and returns, in priority order:
//   0. disk full (K > 1): a bucket whose primary is on a node out of disk space
//      (LoadReport::OutOfSpace) hands the primary to a backup with room (no data moves); such a
//      node takes no primary in step 5 either. Its other moves wait for a later plan;
//   1. drain: replicas on leaving nodes go elsewhere (paper 001 §3.3);
//   2. repair: buckets with fewer than K replicas get new replicas (paper 001 §3.2 rule 2);
//   3. balance: paper 004 §5.1 Algorithm 2 (partition::Balance) over bucket byte sizes, one
//      Balance unit per replica slot, over the active nodes; drain and repair are its step 1
//      (units whose owner left or is missing), balance is its step 2. A unit weighs its
//      bucket's bytes and at least 1, so that the copies of empty buckets are spread by count
//      (a node that joins a cluster holding no data yet gets its share);
//   4. split and merge (only when 1-3 want nothing and no move is in flight): buckets above Θmax
//   split at their reported
//      split point or midpoint (paper 001 §3.1); adjacent buckets with the same replicas whose
//      total is below Θmin merge (Θmax >= 2Θmin, so a split's halves never merge back). Moving
//      buckets are never split or merged (paper 001 §3.2 rule 1);
//   5. handoffs (K > 1, only when 1-4 want nothing): primaries evened out by their buckets'
//      requests (LoadReport hits_ema: reads and writes) when they are enough to weigh, else by
//      count, each handoff giving a primary to a backup (no data moves; the rule and its margin
//      in balancer.cc).
// Free space: a node listed in load.node_room_bytes receives at most that many bytes, less the
// bytes of the moves in flight to it (partition/balance.h, "Room"); balance moves that would
// overfill it are not planned, and drain and repair placements prefer nodes with room.
// Each node takes part in at most options.max_moves_per_node transitions at a time (those in
// flight included); moves that would exceed it are left for a later plan. Under the limit, the
// balance moves taken are a PREFIX of Algorithm 2's step sequence (collapsed per bucket), never
// an arbitrary subset: every intermediate state is one the greedy passes through, so each plan
// strictly lowers the sum of squared loads and plan -> apply always converges. Balance moves are
// planned only once every drain and repair placement fits.
//
// Idempotent: the plan is a function of (map, load, options) only; once its moves are done and
// the load is unchanged, planning again yields nothing new. Ending state of repeated plan ->
// apply at K = 1: max - min node weight <= the lightest bucket on the most loaded node (the
// guarantee of Algorithm 2).
//
// For K > 1, the K units of a bucket are one group of Algorithm 2 (partition/balance.h,
// "Groups"): it never wants two replicas of a bucket on one node, so that a join or a leave moves
// only the copies it must. Where it places two anyway (step 1, when every node already holds
// one), the slot keeps its current owner if that is distinct, else takes the least loaded active
// node not yet holding the bucket. A node holding a copy outside the replicas is preferred for
// a copy added in step 1 (BalancerOptions::held_copies). A bucket's primary copy is a kept unit
// (partition/balance.h, "Kept units"): a balance move replaces a backup's copy where one of the
// same node would do as well, so that a join does not first hand primaries to backups that stay
// (coordinator/executable_step.h) and then even them out again.
//
// Pure; thread-safe.

#include <cstdint>
#include <map>
#include <vector>

#include "src/cluster/migration_plan.h"
#include "src/cluster/shard_map.h"

namespace shoal::cluster {

struct BalancerOptions {
  uint64_t theta_max_bytes = 0;  // split above this; 0 = never split
  uint64_t theta_min_bytes = 0;  // merge below this; 0 = never merge
  // Merges never take the bucket count below this (0: no floor), so that a young cluster keeps
  // the buckets it needs to spread over the nodes that join later.
  size_t min_buckets = 0;
  uint32_t max_moves_per_node = 2;
  TransitionMode mode = TransitionMode::kCopyThenSwitch;
  // Nodes that do not answer (the coordinator's failure detector). With K > 1 they receive no
  // copy and their copies count as missing, so that live nodes rebuild them (paper 001 §3.2
  // rule 2); with K = 1 ignored: the only copy of a bucket cannot be copied off a node that is
  // down.
  std::vector<NodeId> unavailable = {};
  // Nodes that receive no new copy and no primary for now (flap damping,
  // docs/design/replication.md §4.1): moves to them are left for a later plan, as if they took
  // part in max_moves_per_node moves already. Their copies count as present.
  std::vector<NodeId> damped = {};
  // Per bucket, the nodes outside its replicas that hold a copy of its range in the map (their
  // load reports, transport::HeldCopy; docs/design/replication.md §6.1, "Copies outside the
  // replicas"). A copy the plan adds to the bucket (a repair, or the replacement of a copy on a
  // node that left or is down) goes to the least loaded of them that may receive it: active,
  // not unavailable, not damped, within max_moves_per_node and its room, holding no other copy
  // of the bucket, and left at most that bucket above the most loaded node after Algorithm 2's
  // step 1 (the one bucket of spread Algorithm 2 itself leaves; the balance moves of later plans
  // even out what the preference gives up). When the only such holders are at max_moves_per_node,
  // the copy waits for a later plan rather than going elsewhere by snapshot. Such a copy may resume
  // from the primary's log instead of a snapshot; the move checks that and falls back to a
  // snapshot, so the preference is never unsafe. Balance moves wait for a plan that placed nothing
  // this way. Ignored at K = 1.
  std::map<BucketId, std::vector<NodeId>> held_copies = {};
};

class Balancer {
 public:
  // InvalidArgument for bad options (max_moves_per_node = 0, Θmax < 2Θmin when both set);
  // FailedPrecondition when buckets need a home and no node is active.
  [[nodiscard]] static StatusOr<MigrationPlan> Plan(const ShardMap& map, const LoadReport& load,
                                                    const BalancerOptions& options);
};

}  // namespace shoal::cluster
