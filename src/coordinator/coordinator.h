#pragma once

// Coordinator: the cluster's control plane (ARCHITECTURE.md §3, docs/design/cluster.md). A
// facade over its parts, each with its own lock and its own tests:
//   Membership        which nodes are alive and which wait for their bootstrap (membership.h)
//   MapCommitter      the ShardMap, next move id and collections in the MetadataStore: commit
//                     an edit, reload, publish (map_committer.h)
//   MoveExecutor      bucket moves, one task per move, and the resolution of transitions no
//                     task runs (move_executor.h, move.h)
//   BalancerLoop      recovery, then the balancer rounds, thresholds and plan previews
//                     (balancer_loop.h)
//   ProgressCounters  the MoveProgress of this incarnation (move_progress.h)
//   ReplicaManager    removal of silent backups, failover of primaries, store ids of replicated
//                     maps (replica_manager.h)
//   ReplicationFloor  K and min_in_sync changes, and a floor that waits for copies
//                     (replication_floor.h)
//   Resizer           splits and merges, quiesced in a replicated map (resizer.h)
// The coordinator answers the nodes' and clients' requests (Handle) and the operator's admin
// calls, and wires the parts together. The durable keys, the protocols and their invariants are
// stated in the part that owns them.
//
// Thread-safety: all public methods are thread-safe.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "src/cluster/shard_map.h"
#include "src/cluster/transition.h"
#include "src/coordinator/balancer_loop.h"
#include "src/coordinator/coordinator_options.h"
#include "src/coordinator/held_copies.h"
#include "src/coordinator/map_committer.h"
#include "src/coordinator/membership.h"
#include "src/coordinator/move_executor.h"
#include "src/coordinator/move_progress.h"
#include "src/coordinator/replica_manager.h"
#include "src/coordinator/replication_floor.h"
#include "src/coordinator/resizer.h"
#include "src/metadata/metadata_store.h"
#include "src/transport/runtime.h"

namespace shoal::coordinator {

class Coordinator final : public transport::Service,
                          public std::enable_shared_from_this<Coordinator> {
 public:
  [[nodiscard]] static StatusOr<std::shared_ptr<Coordinator>> Open(
      transport::Runtime& runtime, metadata::MetadataStore& store,
      const CoordinatorOptions& options);

  // Creates the first map (epoch 1), with K = `replication_factor` copies of every bucket and
  // writes acknowledged with at least `min_in_sync` of them (0: a majority of K), unless the
  // store holds one.
  [[nodiscard]] Status Initialize(const std::vector<NodeId>& nodes, uint32_t bucket_count,
                                  uint32_t replication_factor = 1, uint32_t min_in_sync = 0);
  // Serves, recovers interrupted moves, then runs the balancer loop (if enabled); runs the
  // replica manager.
  void Start();

  // The coordinator's requests (GetMap, Heartbeat, CreateCollection, ReplicaReport); others are
  // kUnimplemented.
  transport::Response Handle(const transport::Address& from,
                             const transport::Request& request) override;

  // --- admin; call from a task or an outside thread of the runtime ---
  // kFailedPrecondition unless the node has checked in (a heartbeat within node_timeout, or it
  // answers the coordinator now): a node id with no process behind it is never added. A node
  // started a moment ago gets kAddNodeGrace to send its first heartbeat.
  [[nodiscard]] Status AddNode(NodeId node);
  // Decommission: no new buckets; the balancer drains it, then removes it from the map.
  // kFailedPrecondition, changing nothing, for the last active node and for one whose leaving
  // would leave fewer active nodes than K (its copies would have nowhere to go).
  [[nodiscard]] Status RemoveNode(NodeId node);
  // Runs one move to completion (or abort) on the calling task. The destination must have
  // checked in, as for AddNode.
  [[nodiscard]] Status MoveBucket(
      BucketId bucket, NodeId destination,
      cluster::TransitionMode mode = cluster::TransitionMode::kCopyThenSwitch);
  // Changes K and the floor (0: the default, a majority of K) online
  // (docs/design/replication.md §7): raising K leaves buckets with fewer copies, which the
  // balancer rebuilds before anything else, and a floor they cannot meet yet waits for them
  // (ReplicationFloor: writes go on meanwhile, with the copies every bucket has); lowering it
  // drops the last backups of every bucket in the same edit. New moves wait while it runs, and it
  // waits (up to `kReplicationChangeWait`) for the moves in flight to end, since no move may span
  // the change. kInvalidArgument outside 1 <= min_in_sync <= K <= active nodes, and nothing
  // changes.
  [[nodiscard]] Status SetReplication(uint32_t replication_factor, uint32_t min_in_sync = 0);
  // Makes `node` the only replica, and so the primary, of `bucket` under a new term, whatever
  // the other copies hold (§4.6): the operator's way out once every in-sync copy is lost. Any
  // acknowledged write the node lacks is lost: logged as such. An uncommitted move of the
  // bucket is aborted in the same edit; a committed one must finish first. kFailedPrecondition,
  // changing nothing, while the bucket's primary is up (Membership::IsDown is false).
  [[nodiscard]] Status ForcePrimary(BucketId bucket, NodeId node);
  [[nodiscard]] Status SplitBucket(BucketId bucket, std::optional<uint64_t> at = std::nullopt);
  [[nodiscard]] Status MergeBuckets(BucketId left, BucketId right);
  // What a rebalance would do now (or after adding / removing a node), with sizes and time
  // (BalancerLoop::Plan). Changes nothing.
  [[nodiscard]] StatusOr<PlanSummary> Plan(std::optional<NodeId> add = std::nullopt,
                                           std::optional<NodeId> remove = std::nullopt);
  // The collection `name`, created (recorded and published) if it does not exist. A name that
  // breaks storage::ValidateCollectionName is kInvalidArgument and records nothing.
  [[nodiscard]] StatusOr<storage::CollectionSpec> CreateCollection(std::string_view name);
  // True once no transition is in flight and a balancer round on the current map (its epoch)
  // found nothing to do.
  [[nodiscard]] StatusOr<bool> Balanced();
  void SetAutoBalance(bool enabled);
  // Replaces the thresholds (an absent value keeps the current one), stores them, and wakes the
  // balancer, whose next round plans with them. kInvalidArgument (ValidateThresholds) changes
  // nothing; a failed metadata write changes nothing either.
  [[nodiscard]] Status SetThresholds(std::optional<uint64_t> split_bytes,
                                     std::optional<uint64_t> merge_bytes);
  [[nodiscard]] Thresholds thresholds() const;
  // The floor SetReplication asked for that waits for copies (ReplicationFloor), above the map's;
  // 0 when none waits.
  [[nodiscard]] uint32_t pending_min_in_sync() const;
  // Per bucket, the nodes outside its replicas that hold a copy, most advanced first, as the
  // balancer's latest load collection saw them (BalancerLoop::CopiesOutsideReplicas): what a
  // repair prefers and what ForcePrimary may need once every replica is lost.
  [[nodiscard]] std::map<BucketId, std::vector<HeldCopies::Holder>> CopiesOutsideReplicas() const;
  // Called with the state after each committed map edit or new collection, on the task that made
  // it (and at once with the current state). For map watchers: it must not block.
  using StateObserver = MapCommitter::StateObserver;
  void SetStateObserver(StateObserver observer);

  [[nodiscard]] transport::ClusterState State() const;
  [[nodiscard]] cluster::ShardMapPtr map() const;
  [[nodiscard]] MoveProgress progress() const;
  [[nodiscard]] std::set<NodeId> DownNodes() const;
  [[nodiscard]] bool recovered() const;

 private:
  Coordinator(transport::Runtime& runtime, metadata::MetadataStore& store,
              const CoordinatorOptions& options);
  // Runs the replica manager's task once the coordinator serves a replicated map.
  void StartReplicaManager();

  transport::Runtime& runtime_;
  const std::shared_ptr<Membership> membership_;
  const std::shared_ptr<MapCommitter> committer_;
  const std::shared_ptr<ProgressCounters> progress_;
  const std::shared_ptr<MoveExecutor> executor_;
  const std::shared_ptr<Resizer> resizer_;
  const std::shared_ptr<ReplicationFloor> floor_;
  const std::shared_ptr<BalancerLoop> balancer_;
  const std::shared_ptr<ReplicaManager> replicas_;
  std::atomic<bool> started_{false};
  std::atomic<bool> replicas_running_{false};
};

}  // namespace shoal::coordinator
