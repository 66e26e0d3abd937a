#pragma once

// BalancerLoop: the coordinator's background task. It recovers the transitions a previous
// incarnation left (MoveExecutor::Resolve), then, every balance_interval (sooner when a move it
// started ends or an operator changed the membership or the thresholds), resolves orphans,
// removes drained leaving nodes, raises a pending replication floor (ReplicationFloor), collects
// the nodes' loads, plans with cluster::Balancer
// (two-phase bootstrap for joining nodes first, paper 001 §3.2) and starts the planned moves,
// splits and merges. The copies nodes report outside a bucket's replicas (HeldCopies) steer its
// repairs, and the loop drops them once the bucket has been whole for stale_copy_grace. It also
// holds the split and merge thresholds (durable key cluster/thresholds: "<split_bytes>
// <merge_bytes>") and computes plan previews (Plan).
//
// Invariants:
//   - at most max_moves_in_flight moves run at once, and a node takes part in at most
//     max_moves_per_node moves, counting moves whose BEGIN is not stored yet;
//   - a node that is down is neither a source nor a destination of a new move;
//   - a damped node (Membership::flaps()) is no destination of a new move or primary;
//   - a node out of disk space (cluster::LoadReport::OutOfSpace) receives no new copy: a move
//     planned to it (a drain or repair with no other place) waits for its space, logged once
//     (move.waits_for_space), instead of being begun and refused again every round;
//   - a copy outside a bucket's replicas is dropped only under HeldCopies' rule (never while
//     the bucket is short of copies, has a replica down or moves);
//   - Balanced() holds only when the last round planned on the current map (its epoch) found
//     nothing to do, no move runs or waits, no node waits for its bootstrap, and no operator
//     change came after that round began;
//   - a plan preview changes nothing: no edit is stored, no node is asked for more than its
//     bucket sizes.
//
// Thread-safety: thread-safe; mu_ is never held while calling out.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/cluster/balancer.h"
#include "src/cluster/migration_plan.h"
#include "src/cluster/shard_map.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/coordinator/coordinator_options.h"
#include "src/coordinator/held_copies.h"
#include "src/coordinator/map_committer.h"
#include "src/coordinator/membership.h"
#include "src/coordinator/move_executor.h"
#include "src/coordinator/replication_floor.h"
#include "src/coordinator/resizer.h"
#include "src/metadata/metadata_store.h"
#include "src/transport/runtime.h"

namespace shoal::coordinator {

class BalancerLoop : public std::enable_shared_from_this<BalancerLoop> {
 public:
  BalancerLoop(transport::Runtime& runtime, metadata::MetadataStore& store,
               std::shared_ptr<MapCommitter> committer, std::shared_ptr<Membership> membership,
               std::shared_ptr<MoveExecutor> executor, std::shared_ptr<Resizer> resizer,
               const CoordinatorOptions& options,
               std::shared_ptr<ReplicationFloor> floor = nullptr);

  // Reads the stored thresholds (at open).
  [[nodiscard]] Status LoadThresholds();
  // Recovery, then the loop, on the calling task, until the runtime stops it.
  void Run();

  [[nodiscard]] bool recovered() const;
  [[nodiscard]] bool Balanced() const;
  void SetAutoBalance(bool enabled);
  // An operator changed the membership: the next round starts now and no earlier round may
  // declare the cluster balanced.
  void NoteAdminChange();
  // Replaces the thresholds (an absent value keeps the current one), stores them, and wakes the
  // loop. kInvalidArgument (ValidateThresholds) or a failed metadata write changes nothing.
  [[nodiscard]] Status SetThresholds(std::optional<uint64_t> split_bytes,
                                     std::optional<uint64_t> merge_bytes);
  [[nodiscard]] Thresholds thresholds() const;
  // What a rebalance would do now (or after adding / removing a node): every round of the
  // balancer with the thresholds in force, moves first, then splits and merges
  // (balancer_plan.cc). Changes nothing.
  [[nodiscard]] StatusOr<PlanSummary> Plan(std::optional<NodeId> add, std::optional<NodeId> remove);
  // Per bucket of the current map, the copies outside its replicas as the latest load reports
  // name them (HeldCopies::Copies): collected by each round and by each plan preview.
  [[nodiscard]] std::map<BucketId, std::vector<HeldCopies::Holder>> CopiesOutsideReplicas() const;

 private:
  void Recover();
  [[nodiscard]] Status BalanceOnce();
  [[nodiscard]] StatusOr<cluster::LoadReport> CollectLoads();
  // Drops the stale copies of the newest map (HeldCopies::TakeStale), a few per round.
  [[nodiscard]] Status DropStaleCopies();
  [[nodiscard]] StatusOr<cluster::MigrationPlan> PlanNow(const cluster::ShardMap& map,
                                                         const cluster::LoadReport& load);
  // What the rounds plan `map` with: the thresholds in force, the bucket floor, the per-node
  // limit, the nodes down or damped, the copies held outside replicas. Also the plan preview's.
  [[nodiscard]] cluster::BalancerOptions OptionsFor(const cluster::ShardMap& map) const;
  [[nodiscard]] uint64_t generation() const;

  transport::Runtime& runtime_;
  metadata::MetadataStore& store_;
  const std::shared_ptr<MapCommitter> committer_;
  const std::shared_ptr<Membership> membership_;
  const std::shared_ptr<MoveExecutor> executor_;
  const std::shared_ptr<Resizer> resizer_;
  const CoordinatorOptions options_;
  const std::shared_ptr<ReplicationFloor> floor_;  // may be null: no floor to raise
  HeldCopies held_;  // the latest load reports' copies outside the replicas

  absl::Mutex set_thresholds_mu_;  // orders setters: what is stored last is in effect
  mutable absl::Mutex mu_ ABSL_ACQUIRED_AFTER(set_thresholds_mu_);
  bool auto_balance_ ABSL_GUARDED_BY(mu_);
  Thresholds thresholds_ ABSL_GUARDED_BY(mu_);
  bool recovered_ ABSL_GUARDED_BY(mu_) = false;
  bool wake_ ABSL_GUARDED_BY(mu_) = false;  // a balancer move ended: start the next round now
  // Bumped by operator changes: a round that saw an older map may not declare the cluster
  // balanced.
  uint64_t admin_generation_ ABSL_GUARDED_BY(mu_) = 0;
  // The epoch of the map on which the last round found nothing to do.
  std::optional<MapEpoch> idle_at_ ABSL_GUARDED_BY(mu_);
  // Moves this loop started and still running: bucket -> (source, destination).
  std::map<BucketId, std::pair<NodeId, NodeId>> moves_ ABSL_GUARDED_BY(mu_);
  // Planned moves the last round left waiting for disk space: (bucket, the full node).
  std::set<std::pair<BucketId, NodeId>> waiting_for_space_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal::coordinator
