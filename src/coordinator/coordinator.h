#pragma once

// Coordinator: owns the ShardMap and the move log in the MetadataStore, tracks node liveness, and
// runs bucket moves, splits, merges, node additions (two-phase bootstrap) and removals
// (decommission). ARCHITECTURE.md §3, docs/design/cluster.md.
//
// Durable state (MetadataStore keys):
//   cluster/map                    EncodeShardMap of the current map (the commit point of every
//                                  edit: a move commits when the map with its transition in
//                                  kCommitted is stored)
//   cluster/next_move              the next MoveId (ids are never reused)
//   cluster/collections/<name>     the collection id
//   cluster/thresholds             "<split_bytes> <merge_bytes>" set by SetThresholds (absent:
//                                  CoordinatorOptions' values)
//   moves/<id, 20 digits>          the move log: BEGIN, SWITCH, SEAL, COMMIT, DONE or ABORT
//                                  with the bucket,
//                                  source and destination; written in the same Commit as the map
//
// Move protocols, one task per move (coordinator_moves.cc):
//   copy-then-switch (the default): BEGIN (map: transition kCopy) -> source exports a snapshot ->
//   destination ingests it -> kCatchUp: destination pulls the source's later writes -> kPrepare
//   (durable) -> source fences and reports its last sequence -> destination catches up to it ->
//   COMMIT (map) -> kCleanup -> source drops the range -> DONE (map without the transition).
//   switch-then-copy (pre-bootstrap of a joining node; MoveBucket on request): BEGIN (map:
//   kPrepare) -> source fences and drains -> SWITCH (map: kCopy; the destination serves through
//   the source) -> destination transfers the bucket (apply-if-newer) -> SEAL (map: kCatchUp;
//   the source fences the destination's writes and drains them) -> destination catches up with
//   the source's log since the switch (or transfers again) -> COMMIT -> kCleanup -> source
//   drops the range -> DONE.
// Recovery (paper 004 §5.4 cases 1-6): on start, every transition that may abort (not committed,
// not switched) is aborted (ABORT, the destination drops its staged data); every switched one is
// rolled forward and every committed one finished (cleanup, DONE). A failure of any step before
// COMMIT (or SWITCH) aborts the move; the balancer plans again later. A switched move whose
// destination is down (no heartbeat for node_timeout) before the commit is aborted too: the
// bucket goes back to its source, which holds every write (cluster::CanAbort).
// Destinations: a node receives a bucket only once it has checked in (CheckIn: a heartbeat
// within node_timeout, or an answer to the coordinator now), and a switch-then-copy move
// switches only after its destination has taken the map with the move in kPrepare.
// Orphans: a move's task may end with its transition still in the map (the metadata store was
// unreachable, so even its ABORT could not be stored, or a roll-forward step failed). Invariant:
// every transition in the map is either run by a task of this incarnation (its bucket is in
// moving_) or resolved by the balancer loop, which, every round and also with auto-balance off,
// treats each such orphan as recovery does, until it is stored. So a move across a metadata
// outage ends committed or aborted once the store answers again, never half-way.
// Unknown outcomes: a metadata Commit that failed with kUnavailable may have been applied; the
// next edit re-reads the map (and next_move) before building on it.
//
// Thread-safety: all public methods are thread-safe. Edits are serialized by edit_mu_, which is
// never held across a runtime yield.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "src/cluster/migration_plan.h"
#include "src/cluster/shard_map.h"
#include "src/cluster/shard_map_edit.h"
#include "src/metadata/metadata_store.h"
#include "src/transport/runtime.h"

namespace shoal::coordinator {

// The default move throttle (CoordinatorOptions::max_bytes_per_second): 16 MiB/s. On the 2-core
// machine a 1 GiB join then keeps the clients at >= 0.9 of their steady throughput on fast and
// slow days alike, for about 18 s to balance instead of 11 at 32 MiB/s
// (docs/results/rebalance.md, "Half the rate as the default").
inline constexpr uint64_t kDefaultMoveBytesPerSecond = uint64_t{16} << 20;

// AddNode waits this long for a node whose process just started to send its first heartbeat,
// polling every kCheckInPoll; a node id with no process behind it fails after the grace.
inline constexpr transport::Micros kAddNodeGrace = 2'000'000;
inline constexpr transport::Micros kCheckInPoll = 20'000;

struct CoordinatorOptions {
  transport::Micros call_timeout = 2'000'000;
  // An ingest copies the bucket's files from the source (over the network between machines):
  // its call waits call_timeout plus the exported bytes at this rate, so a large bucket is not
  // failed for the time its copy takes.
  uint64_t min_transfer_bytes_per_second = uint64_t{4} << 20;
  int call_attempts = 4;
  transport::Micros retry_backoff = 50'000;
  // Balancer loop.
  bool auto_balance = true;
  transport::Micros balance_interval = 500'000;
  // A balancer round also starts as soon as a move it started ends or a node is added or removed,
  // without waiting for the rest of balance_interval; the loop looks for that every balance_poll
  // (0: only every balance_interval).
  transport::Micros balance_poll = 10'000;
  uint32_t max_moves_in_flight = 2;
  uint32_t max_moves_per_node = 1;
  uint64_t split_bytes = 0;  // Θmax: split buckets above it; 0 = never
  uint64_t merge_bytes = 0;  // Θmin: merge adjacent buckets on the same node below it; 0 = never
  // Move throttle: after each move, its task pauses as long as the move's bytes take at this
  // rate; 0 = unthrottled. While a node joined at 1 GiB on 2 cores, the default cut the loss of
  // 4 saturating clients from 35% to 11% (medians) for 3x the time to balance
  // (docs/results/rebalance.md).
  uint64_t max_bytes_per_second = kDefaultMoveBytesPerSecond;
  // Catch-up rounds before fencing, and the backlog (changes per round) that allows the fence.
  uint32_t catch_up_rounds = 4;
  uint32_t fence_backlog = 64;
  transport::Micros node_timeout = 3'000'000;  // no heartbeat for this long = down
};

// A committed move's fence window (from the source's fence to the commit published: the time
// writes to the bucket wait), split into its steps in order.
struct FenceWindow {
  int64_t fence_call_micros = 0;  // the source's Fence call (it stops taking writes for the bucket)
  int64_t drain_micros = 0;       // the destination catching up to the fence's sequence (0: switch)
  // Of drain_micros, as the destination measured them: reading the source's changes, and
  // applying them (the rest is the call itself and waits between rounds).
  int64_t drain_read_micros = 0;
  int64_t drain_apply_micros = 0;
  int64_t commit_micros = 0;  // the map edit (COMMIT, or SWITCH) stored and published

  [[nodiscard]] int64_t total_micros() const {
    return fence_call_micros + drain_micros + commit_micros;
  }
};

// Progress of every move since the coordinator started (this incarnation).
struct MoveProgress {
  uint64_t started = 0;
  uint64_t committed = 0;
  uint64_t aborted = 0;
  uint64_t finished = 0;
  uint64_t in_flight = 0;
  // Bytes of moves started (aborted ones included): at BEGIN the size the balancer planned the
  // move with (0 for a MoveBucket call), corrected to the exported size once a copy-then-switch
  // move has exported its snapshot (a switch-then-copy move keeps the planned size: it copies in
  // pages). It grows as moves start, so a progress bar's total is the Plan of the change.
  uint64_t bytes_planned = 0;
  // Bytes copied to destinations so far: an ingested snapshot, or each switch-then-copy page.
  // Grows during a move, so a rate and an ETA can be computed from it.
  uint64_t bytes_copied = 0;
  uint64_t bytes_moved = 0;  // exported bytes of committed moves: it jumps at each COMMIT
  std::vector<FenceWindow> fence_windows;     // one per committed move, in commit order
  std::map<NodeId, int64_t> first_commit_to;  // time a node first received a bucket
  std::vector<std::string> abort_reasons;     // the latest few
};

// The balancer's split (Θmax) and merge (Θmin) thresholds; 0 turns a rule off.
struct Thresholds {
  uint64_t split_bytes = 0;
  uint64_t merge_bytes = 0;
};

// Bounds of a threshold set by SetThresholds (CoordinatorOptions are not checked: tests and the
// simulation use tiny buckets).
inline constexpr uint64_t kMinThresholdBytes = uint64_t{64} << 10;  // 64 KiB
inline constexpr uint64_t kMaxThresholdBytes = uint64_t{64} << 30;  // 64 GiB

// kInvalidArgument unless each non-zero threshold is within the bounds and, with both on,
// 2 * merge_bytes < split_bytes. Why: a split halves a bucket above split_bytes into two above
// split_bytes / 2 > merge_bytes, which no merge takes back; a merge joins two buckets below
// merge_bytes into one below 2 * merge_bytes < split_bytes, which no split takes back. Without
// the gap a bucket could split and merge on alternate rounds for ever.
[[nodiscard]] Status ValidateThresholds(const Thresholds& thresholds);

struct PlanSummary {
  cluster::MigrationPlan plan;
  uint64_t buckets = 0;
  uint64_t bytes = 0;
  double estimated_seconds = 0;
};

class Coordinator final : public transport::Service,
                          public std::enable_shared_from_this<Coordinator> {
 public:
  [[nodiscard]] static StatusOr<std::shared_ptr<Coordinator>> Open(
      transport::Runtime& runtime, metadata::MetadataStore& store,
      const CoordinatorOptions& options);

  // Creates the first map (epoch 1) unless the store holds one.
  [[nodiscard]] Status Initialize(const std::vector<NodeId>& nodes, uint32_t bucket_count);
  // Serves, recovers interrupted moves, then runs the balancer loop (if enabled).
  void Start();

  transport::Response Handle(const transport::Address& from,
                             const transport::Request& request) override;

  // --- admin; call from a task or an outside thread of the runtime ---
  // kFailedPrecondition unless the node has checked in (a heartbeat within node_timeout, or it
  // answers the coordinator now): a node id with no process behind it is never added. A node
  // started a moment ago gets kAddNodeGrace to send its first heartbeat.
  [[nodiscard]] Status AddNode(NodeId node);
  // Decommission: no new buckets; the balancer drains it, then removes it from the map.
  [[nodiscard]] Status RemoveNode(NodeId node);
  // Runs one move to completion (or abort) on the calling task. The destination must have
  // checked in, as for AddNode.
  [[nodiscard]] Status MoveBucket(
      BucketId bucket, NodeId destination,
      cluster::TransitionMode mode = cluster::TransitionMode::kCopyThenSwitch);
  [[nodiscard]] Status SplitBucket(BucketId bucket, std::optional<uint64_t> at = std::nullopt);
  [[nodiscard]] Status MergeBuckets(BucketId left, BucketId right);
  // What a rebalance would do now (or after adding / removing a node), with sizes and time:
  // every round of the balancer with the thresholds in force (thresholds()), moves first, then
  // splits and merges (coordinator_plan.cc). Changes nothing.
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
  // Called with the state after each committed map edit or new collection, on the task that made
  // it (and at once with the current state). For map watchers: it must not block.
  using StateObserver = std::function<void(const transport::ClusterState&)>;
  void SetStateObserver(StateObserver observer);

  [[nodiscard]] transport::ClusterState State() const;
  [[nodiscard]] cluster::ShardMapPtr map() const;
  [[nodiscard]] MoveProgress progress() const;
  [[nodiscard]] std::set<NodeId> DownNodes() const;
  [[nodiscard]] bool recovered() const;

 private:
  Coordinator(transport::Runtime& runtime, metadata::MetadataStore& store,
              const CoordinatorOptions& options);
  [[nodiscard]] Status Load();
  [[nodiscard]] Status LoadThresholds();  // coordinator_thresholds.cc

  // Builds an edit against the current map with `build`, applies it and stores the result with
  // `log` in one metadata Commit; then publishes the new map to every node.
  using EditBuilder = std::function<Status(const cluster::ShardMap&, cluster::ShardMapEdit*)>;
  [[nodiscard]] StatusOr<cluster::ShardMapPtr> CommitEdit(const EditBuilder& build,
                                                          std::optional<std::string> log_key = {},
                                                          std::string log_value = {});
  void Publish(const cluster::ShardMapPtr& map);

  // `timeout` per attempt; 0 = options_.call_timeout.
  [[nodiscard]] StatusOr<transport::Response> CallNode(NodeId node, transport::Request request,
                                                       int attempts, transport::Micros timeout = 0);
  // BEGIN, then the protocol of `mode` (coordinator_moves.cc).
  // `planned_bytes`: the bucket's size as planned (progress only; 0 if unknown).
  [[nodiscard]] Status RunMove(BucketId bucket, NodeId destination, cluster::TransitionMode mode,
                               uint64_t planned_bytes);
  [[nodiscard]] Status CopyThenSwitch(BucketId bucket, MoveId move, NodeId source,
                                      NodeId destination, uint64_t planned_bytes);
  [[nodiscard]] Status SwitchThenCopy(BucketId bucket, MoveId move, NodeId source,
                                      NodeId destination);
  // Replaces a move's planned bytes by its actual size in progress_.bytes_planned.
  void CorrectPlannedBytes(uint64_t planned_bytes, uint64_t actual_bytes);
  // From the switch on: transfer, SEAL, catch-up, COMMIT, cleanup. Also run by recovery.
  // `switch_sequence`: the source's last sequence at its fence before the switch, when this
  // incarnation knows it (the catch-up starts there; otherwise a second full transfer runs).
  [[nodiscard]] Status RollForwardSwitched(BucketId bucket, MoveId move,
                                           std::optional<uint64_t> switch_sequence);
  // Pulls the whole bucket into the destination while the move stays in `stage`, waiting out
  // nodes that do not answer. Adds to *bytes.
  enum class TransferOutcome {
    kDone,             // the destination holds the whole bucket as of each page
    kNotOurs,          // the move left `stage` (another task finished or resolved it)
    kDestinationLost,  // the destination does not answer and is down (IsDown)
  };
  [[nodiscard]] StatusOr<TransferOutcome> TransferSwitched(BucketId bucket, MoveId move,
                                                           NodeId source, NodeId destination,
                                                           cluster::TransitionStage stage,
                                                           uint64_t* bytes);
  // A switched move whose destination is down goes back to its source (cluster::CanAbort says
  // why that is safe before the commit): ABORT, and the bucket is served by the source again.
  [[nodiscard]] Status RollBackSwitched(BucketId bucket, MoveId move, NodeId destination);
  // The seal's fence at the source (kCatchUp), retried until it answers: the source's last
  // sequence, after which it takes no write of the bucket. kAborted if the move left kCatchUp.
  [[nodiscard]] StatusOr<uint64_t> SealSource(BucketId bucket, MoveId move, NodeId source);
  // Catch-up rounds of the destination from `after_sequence`: until fewer than fence_backlog
  // changes came in a round or, with `until_sequence`, once up to it. The position reached, or
  // the error of a round (a node is down, the source's log is gone).
  [[nodiscard]] StatusOr<uint64_t> CatchUpRounds(BucketId bucket, MoveId move, NodeId source,
                                                 NodeId destination, uint64_t after_sequence,
                                                 std::optional<uint64_t> until_sequence);
  // A step before the commit (or switch) failed: abort, unless this incarnation was stopped.
  [[nodiscard]] Status FailMove(BucketId bucket, MoveId move, const Status& status);
  [[nodiscard]] Status AdvanceStage(BucketId bucket, MoveId move, cluster::TransitionStage stage,
                                    std::optional<std::string> log = std::nullopt);
  [[nodiscard]] Status FinishCommitted(BucketId bucket, MoveId move);
  // Stores ABORT unless the move is committed or gone; the destination drops its staged data.
  // The store's error if it could not be stored (the transition then stays: an orphan).
  [[nodiscard]] Status AbortMove(BucketId bucket, MoveId move, const Status& reason);
  // What recovery does with a transition found in the map: finish a committed one, abort one
  // that may abort (the ABORT record says `why`), roll a switched one forward.
  [[nodiscard]] Status Resolve(BucketId bucket, const cluster::BucketTransition& transition,
                               std::string_view why);
  // Resolves every transition of the map that no task of this incarnation runs (see "Orphans").
  [[nodiscard]] Status ResolveOrphans();
  // Re-reads the map and next_move after a commit of unknown outcome (edit_mu_ held).
  [[nodiscard]] Status ReloadMap();
  [[nodiscard]] StatusOr<cluster::LoadReport> CollectLoads();
  [[nodiscard]] StatusOr<cluster::MigrationPlan> PlanNow(const cluster::ShardMap& map,
                                                         const cluster::LoadReport& load);
  void Recover();
  void BalanceLoop();
  [[nodiscard]] Status BalanceOnce();
  [[nodiscard]] bool IsDown(NodeId node) const;     // mu_ held
  [[nodiscard]] bool HeardFrom(NodeId node) const;  // a heartbeat within node_timeout; mu_ held
  // OK once `node` has checked in: heard from lately, or it answers an InstallMap now (which
  // counts as a heartbeat). kFailedPrecondition otherwise, naming the node and the error.
  [[nodiscard]] Status CheckIn(NodeId node, transport::Micros grace = 0);

  transport::Runtime& runtime_;
  metadata::MetadataStore& store_;
  const CoordinatorOptions options_;
  const transport::Micros started_;  // node liveness is judged from here on

  mutable std::mutex mu_;  // guards everything below
  std::mutex edit_mu_;     // serializes CommitEdit
  cluster::ShardMapPtr map_;
  uint64_t map_version_ = 0;  // metadata version of cluster/map
  // Guarded by edit_mu_: the last map commit failed with kUnavailable (it may have been applied).
  bool map_unknown_ = false;
  uint64_t next_move_ = 1;
  std::vector<storage::CollectionSpec> collections_;
  std::map<NodeId, transport::Micros> last_heartbeat_;
  std::set<NodeId> joining_;   // added, pre-bootstrap pending
  std::set<BucketId> moving_;  // moves run by tasks of this incarnation
  // Moves started by the balancer and still running: bucket -> (source, destination).
  std::map<BucketId, std::pair<NodeId, NodeId>> balancer_moves_;
  bool balance_wake_ = false;  // a balancer move ended: start the next round now
  MoveProgress progress_;
  bool auto_balance_ = true;
  Thresholds thresholds_;
  StateObserver observer_;
  bool recovered_ = false;
  // The epoch of the map in which the last balancer round found nothing to do. Balanced() holds
  // only while the map is still at that epoch: a map changed since (an orphaned transition
  // resolved, a node removed) has not been planned on yet.
  std::optional<MapEpoch> planner_idle_at_;
  uint64_t admin_generation_ = 0;  // bumped by AddNode/RemoveNode: a round that saw an older
                                   // map may not declare the cluster balanced
};

}  // namespace shoal::coordinator
