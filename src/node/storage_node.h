#pragma once

// StorageNode: one Shoal storage node — serves the documents of the buckets the ShardMap gives it
// from a BucketStore, and plays the source or destination role of bucket moves
// (ARCHITECTURE.md §3, docs/design/cluster.md).
//
// Per-bucket state (LocalRole), derived from the node's latest map and its move records:
//   kNotAssigned  not a replica and not part of a transition of the bucket;
//   kAdding       destination of an uncommitted move: data is staged (ingest, catch-up) but
//                 nothing is served — except in kCopy of a switch-then-copy move, where it
//                 serves through the source (below);
//   kReadWrite    stable replica, or destination of a committed move: serves reads and writes;
//   kLeaving      source of an uncommitted move: serves until fenced, then queues;
//                 after the commit, answers WRONG_SHARD and keeps its data until DropBucket.
//
// Invariants:
//   - FENCE: a source that acknowledged Fence(m), or that holds a map where m is in kPrepare,
//     acknowledges no read or write of the bucket until a map without m in an uncommitted stage
//     arrives. Fence returns only after every write admitted before it has been written, so the
//     sequence it returns bounds every acknowledged write of the bucket at this node.
//   - A destination serves only from a map in which the move is committed; the coordinator
//     commits only after the destination applied every write up to the fence sequence, so at
//     every instant at most one node acknowledges writes to a key.
//   - Requests are decided against the node's own map, whatever epoch the client sent; a client
//     ahead of the node makes the node fetch the map first. The decision is taken again after
//     every wait, and a write holds the bucket's in-flight count from its check to its end.
//   - SWITCH-THEN-COPY (kCopy): the destination admits clients, but every write is executed by
//     the source first (a request with via_move; the source decides its outcome, as the complete
//     copy) and then applied at the destination if newer, before the acknowledgement; a read is
//     read at the source and stored locally (if newer) before the answer, since a forwarded write
//     whose reply was lost (timeout, or a crash of the destination) may run at the source at any
//     later time; a scan is served by the source. The
//     source answers clients WRONG_SHARD and serves only via_move requests of that move. So the
//     destination holds every acknowledged write and every value a read returned, and pulling
//     the rest (TransferBucket, apply-if-newer) never overwrites a newer version.
//   - SEAL (switch-then-copy kCatchUp): a source whose map shows the move in kCatchUp, or that
//     has answered a Fence of the switched move, refuses the destination's writes; the Fence
//     answers only once the writes it admitted before are done, with a sequence that covers
//     them. The destination queues client writes in kCatchUp. So the source's copy no longer
//     changes, and the destination's catch-up to that sequence leaves it with every write that
//     took effect at the source, including forwarded ones whose reply was lost.
//   - ROLLBACK OF A SWITCHED MOVE: by the two rules above, the source's copy holds every write
//     the destination acknowledged and every value it returned, so the coordinator may abort a
//     switched move before its commit (it does when the destination is down). The source serves
//     clients again only from a map without the move, and from then on refuses the move's
//     forwarded requests, so a destination that is cut off answers nothing of the bucket.
//   - Data of a range is dropped only when the node's map (durable at the coordinator) shows the
//     node neither serves it nor takes part in a move of it.
//   - ABORTED STAGING (HandleDrop): an aborted move's drop at its destination
//     (DropReason::kAbortedStaging) deletes only data the move may have staged. Every staging
//     (ingest, resume, a switch-then-copy destination's writes) clears the bucket's stored
//     replica state before it changes the data (COPIES VOUCH FOR THEIR DATA,
//     storage_node_resume.cc), so a copy whose stored state still has a position is untouched
//     by the move and stays: kept across a restart too, and a later repair resumes it. A copy a
//     resume of the move had begun to catch up vouches for nothing and goes.
//   - HOT KEYS: every write this node acknowledges to a client (not one it executes for the
//     destination of a switch-then-copy move, which acknowledges it) counts in the node's
//     hot-key sketch under hot_keys_mu_, taken after the write and never with mu_ held; the
//     load report carries the hottest keys (docs/design/hotspot.md).
//   - MOVE I/O OUTSIDE THE LOCK: the engine calls of a move (export, ingest, catch-up apply,
//     reading the change log) run outside mu_, so that client requests for every other bucket
//     go on meanwhile. A destination's ingest and apply hold the bucket's move-I/O count from
//     their check of the move (under mu_) to their end; DropBucket waits for it to reach zero
//     before dropping, so no write of an ended move lands after the drop. An ingest runs alone:
//     it starts only when no ingest or apply of the bucket runs and forgets the catch-up record,
//     without which no apply starts, until it has staged the range; a refused ingest is not
//     serving (retry).
//   - ROOM: the destination of a copy-then-switch move refuses its ingest, every catch-up and
//     the drain (NO_SPACE) while its store's free-space guard refuses writes, even when there is
//     nothing to apply, so the move aborts before the commit hands it a bucket it cannot take
//     writes for; the abort also releases a fenced source.
//   - MOVE CPU: export, ingest and the catch-up rounds before the fence run at
//     NodeOptions::background_nice below request priority; the drain after a fence (or a seal)
//     and every client request run at the node's own priority, so a fence is not slowed down.
//     Priority only orders CPU use: no correctness property depends on it.
//   - REPLICATION (storage_node_replica.cc; docs/design/replication.md §3): for a bucket whose
//     map lists backups after this node (replicas[0] = self, no move in flight), a client write
//     is ordered by the store under the bucket's term (ApplyEachStamped), handed to one ordered
//     stream per backup, and acknowledged only once the local WAL and every backup of the
//     node's current map hold it durably (ReplicationLog's watermark); a read answers only once
//     everything the store held when it read is committed. A backup applies a primary's entries
//     only if its own map names that primary at the entries' term, and syncs once per message
//     before it answers. Writes a backup refused under a newer term are never acknowledged.
//   - FILE TRANSFER (move_files.h): a source serves FetchMoveFile only for the files of its
//     latest export of a move of which its map shows it the source; a destination ingests only
//     copies it fetched in the same ingest and verified (chunk and whole-file CRC-32C, size),
//     from its own data directory, and removes them afterwards.
//
// Thread-safety: Handle may run concurrently on many tasks; state is guarded by mu_, never held
// across a runtime yield (runtime.h rules).

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "src/cluster/admission.h"
#include "src/cluster/shard_map.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/hotspot/top_k_sketch.h"
#include "src/node/cluster_identity.h"
#include "src/node/move_files.h"
#include "src/node/node_options.h"
#include "src/node/recent_entries.h"
#include "src/node/replica_stream_queue.h"
#include "src/node/replication_log.h"
#include "src/node/request_rates.h"
#include "src/storage/bucket_store.h"
#include "src/transport/runtime.h"

namespace shoal::node {

enum class LocalRole : uint8_t { kNotAssigned, kAdding, kReadWrite, kLeaving };
[[nodiscard]] std::string_view ToString(LocalRole role);

class StorageNode final : public transport::Service,
                          public std::enable_shared_from_this<StorageNode> {
 public:
  [[nodiscard]] static StatusOr<std::shared_ptr<StorageNode>> Open(transport::Runtime& runtime,
                                                                   const NodeOptions& options);
  ~StorageNode() override;

  // Serves the node's address and starts its heartbeat task.
  void Start();
  // Stops serving and closes the store once no task or handler of this node runs any more.
  // Call from outside the node's own tasks, after runtime.Stop (a crash) or instead of it.
  [[nodiscard]] Status Close();

  transport::Response Handle(const transport::Address& from,
                             const transport::Request& request) override;

  [[nodiscard]] NodeId id() const { return options_.id; }
  [[nodiscard]] MapEpoch epoch() const;
  // The cluster the data directory belongs to (ClusterIdentity; 0 until one is adopted).
  [[nodiscard]] uint64_t ClusterId() const;
  [[nodiscard]] LocalRole RoleOf(BucketId bucket) const;
  // Test oracle: whether this node would acknowledge a write to `point` right now. A replicated
  // primary also needs its read lease: a write commits only once every backup accepted it,
  // which renews the lease, and a failover waits the old primary's lease out after sealing the
  // backups, so a primary the coordinator replaced while it was alive holds none.
  [[nodiscard]] bool CanAcknowledgeWrite(Point point) const;
  [[nodiscard]] NodeCounters counters() const;
  // Tasks and handlers of this node running now.
  [[nodiscard]] int active() const;
  [[nodiscard]] storage::BucketStore* store() { return store_.get(); }

 private:
  // What the node does with a data request for a point or a bucket right now, and whether the
  // request reads or writes: decided by the routing table (cluster::Admit, admission.h).
  using Admission = cluster::Admission;
  using Access = cluster::Access;
  // What an admitted request needs: its bucket and, for kServeViaSource, the move and source.
  struct Admitted {
    Admission admission = Admission::kNotYet;
    BucketId bucket{};
    MoveId move{};
    NodeId source{};
    // kServe of a bucket this node is the replicated primary of (storage_node_replica.cc).
    bool replicated = false;
  };
  struct MoveRecord {
    MoveId move;
    bool source = false;
    bool fenced = false;
    // Source of a switched switch-then-copy move: fenced again (the seal) before its commit; it
    // refuses the destination's writes from then on.
    bool sealed = false;
    uint64_t applied_sequence = 0;  // destination: catch-up position

    // A new record: not fenced, not sealed.
    static MoveRecord New(MoveId move, bool source, uint64_t applied_sequence) {
      return MoveRecord{.move = move,
                        .source = source,
                        .fenced = false,
                        .sealed = false,
                        .applied_sequence = applied_sequence};
    }
  };
  // An exact bucket size of HandleLoad, and when it was computed.
  struct CachedLoad {
    storage::PointRange range;
    uint64_t bytes = 0;
    uint64_t documents = 0;
    uint64_t churn = 0;  // store_->LiveBytesChurn(range) before the scan
    transport::Micros computed = 0;
  };
  // Counts a running handler or task, so that Close waits for it.
  class ActiveGuard {
   public:
    explicit ActiveGuard(StorageNode* node) : node_(node) {
      absl::MutexLock lock(&node_->mu_);
      ++node_->active_;
    }
    ~ActiveGuard() {
      absl::MutexLock lock(&node_->mu_);
      --node_->active_;
    }
    ActiveGuard(const ActiveGuard&) = delete;
    ActiveGuard& operator=(const ActiveGuard&) = delete;

   private:
    StorageNode* node_;
  };

  StorageNode(transport::Runtime& runtime, const NodeOptions& options);

  // cluster::Admit for this node, with its own record of the bucket's move.
  // `via_move`: the request was forwarded by the destination of that switch-then-copy move.
  [[nodiscard]] Admission AdmitLocked(const cluster::BucketPlacement& bucket,
                                      std::optional<MoveId> via_move, Access access) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // AdmitLocked, then for kServe the replication gate (GateReplicatedLocked), and for
  // kServeViaSource the move and its source: the whole decision for one bucket now.
  [[nodiscard]] StatusOr<Admitted> DecideLocked(const cluster::BucketPlacement& bucket,
                                                std::optional<MoveId> via_move, Access access) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  [[nodiscard]] LocalRole RoleLocked(const cluster::BucketPlacement& bucket) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits while the admission is kQueue or kNotYet (fetching the map when the client is ahead);
  // returns the final admission and what it was decided for. kServe and kServeViaSource count
  // the bucket's in-flight requests (the caller calls Release).
  [[nodiscard]] StatusOr<Admitted> AwaitAdmission(MapEpoch client_epoch, Point point,
                                                  std::optional<MoveId> via_move, Access access);
  // The same for a scan of `range` in `bucket`, which must fit the node's map
  // (ScanBucketLocked; kInvalidArgument otherwise). Counts nothing in flight.
  [[nodiscard]] StatusOr<Admitted> AwaitScanAdmission(MapEpoch client_epoch, BucketId bucket,
                                                      const storage::PointRange& range,
                                                      std::optional<MoveId> via_move);
  // Whether a scan of `range` naming `bucket`, sent at `client_epoch`, fits this node's map: kServe
  // when the map has `bucket` and its range holds `range`. Otherwise the client's map decides:
  // older, kWrongShard (the id may name a bucket since split or merged, or none; the client
  // learns ours); newer, kNotYet (we learn the client's); the same, kInvalidArgument (the
  // request does not match the map it was built from).
  [[nodiscard]] StatusOr<Admission> ScanBucketLocked(MapEpoch client_epoch, BucketId bucket,
                                                     const storage::PointRange& range) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Release(BucketId bucket, bool write);
  [[nodiscard]] transport::Response Refuse(Admission admission);
  [[nodiscard]] Status RefreshMap();
  [[nodiscard]] Status EnsureCollection(CollectionId collection);
  void InstallLocked(const transport::ClusterState& state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  [[nodiscard]] Status RegisterCollections(const transport::ClusterState& state);
  [[nodiscard]] StatusOr<const cluster::BucketPlacement*> MoveBucketLocked(BucketId bucket,
                                                                           MoveId move,
                                                                           bool as_source) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The exact sizes of `served` (bucket, range), from the cache where it is fresh enough. The
  // cache keeps the entries of `served` and of `adding` (buckets being moved in) only.
  // Folds the reads and writes counted since the last report (RequestRates) and sets each
  // load's rates; the buckets outside `served` are forgotten.
  void AddRequestRates(const std::vector<std::pair<BucketId, storage::PointRange>>& served,
                       std::vector<transport::BucketLoad>* loads) ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] std::vector<transport::BucketLoad> ExactLoads(
      const std::vector<std::pair<BucketId, storage::PointRange>>& served,
      const std::vector<BucketId>& adding);
  // A bucket moved in arrives with its size: the export's live part at its snapshot, with the
  // churn counter read right after the ingest, so that the catch-up's writes count as churn
  // since. Its first load report then needs no scan. An export with entries but no live part
  // (tombstones only, or from a binary that did not count it) seeds nothing: the report scans.
  // Never called with mu_ held.
  void SeedLoad(BucketId bucket, const storage::PointRange& range,
                const storage::ExportedRange& exported, uint64_t churn) ABSL_LOCKS_EXCLUDED(mu_);
  // Drops the cached size of `bucket` (its range was dropped). Never called with mu_ held.
  void ForgetLoad(BucketId bucket) ABSL_LOCKS_EXCLUDED(mu_);
  void HeartbeatLoop();
  // Counts an acknowledged write of (collection, primary key) in the hot-key sketch.
  void RecordWrite(CollectionId collection, std::string_view primary_key);
  // The hottest keys of the sketch now.
  [[nodiscard]] std::vector<transport::HotKeyStat> HotKeys();
  // The engine part of an ingest, outside mu_: drops what an earlier attempt staged, then
  // ingests `exported`, copied from `source` first unless it may be read by path.
  [[nodiscard]] Status StageIngest(const storage::PointRange& range,
                                   const transport::IngestBucketRequest& request, NodeId source);

  // kDeferred (a batch): the write is not synced here, the caller syncs before acknowledging it.
  transport::Response HandleWrite(const transport::WriteRequest& request,
                                  storage::WalSync wal_sync = storage::WalSync::kAsConfigured);
  // Each write with the result HandleWrite would give it at the batch's epoch, in order, one
  // result per slot, then one WAL sync for them all before the answer (storage_node_batch.cc).
  transport::Response HandleBatchWrite(const transport::BatchWriteRequest& request);
  // AT ONCE (storage_node_batch.cc): the admissions of every key, taken together under mu_ and
  // without a wait when each is kServe and `epoch` is not ahead of the node's map: their buckets,
  // each counted in flight until ReleaseAtOnce; nullopt, having taken nothing, otherwise.
  struct AdmittedAtOnce {
    std::vector<BucketId> buckets;  // by key
    std::vector<bool> replicated;   // by key: the bucket's replicated primary is this node
    [[nodiscard]] bool AnyReplicated() const;
  };
  [[nodiscard]] std::optional<AdmittedAtOnce> AdmitAtOnce(
      MapEpoch epoch, std::span<const storage::DocumentKey> keys, Access access);
  void ReleaseAtOnce(const std::vector<BucketId>& buckets, Access access);
  // Its two ways (storage_node_batch.cc): all writes in one store call when every bucket is
  // served here right now (nullopt otherwise, having taken nothing), or each through HandleWrite.
  // `*synced`: the WAL was synced for the batch already (a batch with replicated writes).
  std::optional<transport::Response> ApplyBatchAtOnce(const transport::BatchWriteRequest& request,
                                                      bool* synced);
  // AT ONCE with writes of replicated buckets (storage_node_batch_replicated.cc): one ordered
  // entry per bucket, one local sync, then a wait for every entry to commit. One result per
  // mutation.
  [[nodiscard]] std::vector<StatusOr<storage::MutationResult>> ApplyBatchReplicated(
      std::span<const storage::Mutation> mutations, const AdmittedAtOnce& admitted);
  transport::Response ApplyBatchOneByOne(const transport::BatchWriteRequest& request);
  transport::Response HandleGet(const transport::GetRequest& request);
  // storage_node_batch_get.cc.
  transport::Response HandleBatchGet(const transport::BatchGetRequest& request);
  // Its two ways, as for batch writes: one GetMany when every bucket is served here right now
  // (nullopt otherwise, having taken nothing), or each get through HandleGet.
  std::optional<transport::Response> ReadBatchAtOnce(const transport::BatchGetRequest& request);
  transport::Response ReadBatchOneByOne(const transport::BatchGetRequest& request);
  transport::Response HandleScan(const transport::ScanRequest& request);
  transport::Response HandleInstallMap(const transport::InstallMapRequest& request);
  transport::Response HandleExport(const transport::ExportBucketRequest& request);
  transport::Response HandleIngest(const transport::IngestBucketRequest& request);
  transport::Response HandleCatchUp(const transport::CatchUpRequest& request);
  transport::Response HandleReadChanges(const transport::ReadChangesRequest& request);
  transport::Response HandleFence(const transport::FenceRequest& request);
  // Refused while the map shows this node serving or receiving the range. Drops the range's data
  // and the copies' states, except that a kAbortedStaging drop keeps a copy that still vouches for
  // its data (ABORTED STAGING) and answers OK.
  transport::Response HandleDrop(const transport::DropBucketRequest& request);
  transport::Response HandleLoad();
  transport::Response HandleTransfer(const transport::TransferBucketRequest& request);
  transport::Response HandleFetchMoveFile(const transport::FetchMoveFileRequest& request);
  // storage_node_resume.cc (RESUMED COPY): the destination resumes the copy it holds from the
  // primary's log; the source says whether its log retains what that copy lacks.
  transport::Response HandleResumeCopy(const transport::ResumeCopyRequest& request);
  // An incoming copy's claim on `bucket` for staging by `move` (an ingest, or the resume of a
  // copy held from before), shared by both so that they exclude each other: the map (refreshed
  // once if it does not show the move yet) lists this node as the move's copy being added, the
  // staged range (when given) is the bucket's, and no other staging of the bucket runs. The
  // claim drops the record of an earlier call of the move (the copy is judged afresh, and no
  // catch-up applies meanwhile, since it needs the record) and holds move_io_ until
  // ReleaseStagingLocked. Returns the bucket's placement as the claim found it; `what` names the
  // request in errors.
  [[nodiscard]] StatusOr<cluster::BucketPlacement> ClaimForStaging(
      BucketId bucket, MoveId move, const storage::PointRange* staged_range, std::string_view what)
      ABSL_LOCKS_EXCLUDED(mu_);
  void ReleaseStagingLocked(BucketId bucket) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  transport::Response HandleRetainedLog(const transport::RetainedLogRequest& request);
  // At a map install: a bucket this node is no replica of, or whose range differs from
  // `before`'s, loses its log index (storage/rseq_index.h): this node's WAL may lack writes of
  // its range from then on, or a copy of the old range may lack part of the new one.
  void ForgetRetainedLogsLocked(const cluster::ShardMap& before) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Clears the bucket's stored replica state, if any, before its data is dropped or replaced: a
  // state says the data is the history up to its position (storage_node_resume.cc).
  [[nodiscard]] Status ForgetCopy(BucketId bucket);
  // kServeViaSource: run the request at the source, then keep its result locally.
  transport::Response ForwardWrite(const transport::WriteRequest& request, const Admitted& admitted,
                                   storage::WalSync wal_sync);
  transport::Response ForwardGet(const transport::GetRequest& request, const Admitted& admitted);
  transport::Response ForwardScan(const transport::ScanRequest& request, const Admitted& admitted);
  // Turns a failed call to the source into what the client should see; learns a carried route.
  transport::Response ForwardFailure(const StatusOr<transport::Response>& response,
                                     bool idempotent);

  // ---- replication (storage_node_replica.cc) ----
  // Whether the map makes this node the bucket's primary in a replicated map (K > 1), with no
  // move in flight.
  [[nodiscard]] bool ReplicatedPrimaryLocked(const cluster::BucketPlacement& bucket) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A kServe admission of a bucket this node is the replicated primary of: kQueue while its term
  // is fenced (held before a restart) or sealed; NOT_ENOUGH_REPLICAS for a write while the bucket
  // has fewer replicas than min_in_sync. Sets `admitted->replicated`.
  [[nodiscard]] Status GateReplicatedLocked(const cluster::BucketPlacement& bucket, Access access,
                                            Admitted* admitted) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The map binds this node to another store (its directory was wiped or replaced): no copy
  // here serves, and its primaries are reported fenced.
  [[nodiscard]] bool StoreReplacedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The bucket's term is fenced (restart), sealed (failover), or the store was replaced.
  [[nodiscard]] bool TermClosedLocked(const cluster::BucketPlacement& bucket) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // At the first map after a start: every bucket this node is the replicated primary of and has
  // written to before is fenced at its term.
  void FenceRestartedTermsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // True while this node's map makes it the replicated primary of `at.bucket` at `at.term`
  // with `backup` among the bucket's replicas.
  [[nodiscard]] bool StillStreamsTo(const transport::BucketTerm& at, NodeId backup) const;
  // A backup still listed at this node's term answered sealed (a failover began): the bucket's
  // pending writes are abandoned and the term is closed here as a seal closes it at a backup,
  // so that this node serves nothing more at it and its heartbeats report it until a map with
  // a newer term comes. The failover may never finish by itself (the sealed backup left the
  // bucket), and with its writes abandoned the term could not
  // commit another write: the report makes the coordinator end it.
  void CloseTermSealedAtBackup(const transport::BucketTerm& at);
  // The closed terms the heartbeat reports (HeartbeatRequest::fenced): the restart-fenced
  // buckets whose map still names this node primary at that term, and the buckets this node
  // holds, sealed at their current term.
  [[nodiscard]] std::vector<transport::BucketTerm> FencedTerms() const;
  transport::Response HandleSealTerm(const transport::SealTermRequest& request);
  // Forgets the seals a newer term (or the bucket's end) made moot, here and in the store.
  void ForgetMootSealsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The buckets (with their terms) this node replicates to `backup` now.
  [[nodiscard]] std::vector<transport::BucketTerm> TermsFor(NodeId backup);
  // The coordinator kept the silent `backup` of `bucket` at the floor: new writes are refused
  // until it answers again (UnblockAtFloor) or the map drops it.
  void BlockAtFloor(BucketId bucket, NodeId backup) ABSL_LOCKS_EXCLUDED(mu_);
  void UnblockAtFloor(BucketId bucket, NodeId backup) ABSL_LOCKS_EXCLUDED(mu_);
  // Asks the coordinator to remove `backup` from `bucket` at `term` (`broken`: it answered but
  // cannot catch up); refreshes the map after. Runs on a task of its own.
  void ReportBackup(BucketId bucket, Term term, NodeId backup, std::string reason, bool broken);
  // A silent `backup`: reports its buckets one at a time on one task, each after the map the
  // last answer made. The coordinator takes a silent backup out of every bucket of this primary
  // it can in one edit, so a few reports do for thousands of buckets.
  void ReportSilentBackup(NodeId backup, std::string reason);
  // ReportBackup's call on the calling task: the coordinator's answer.
  Status ReportBackupNow(const transport::BucketTerm& at, NodeId backup, const std::string& reason,
                         bool broken);
  // Tracks the buckets this node is the primary of with backups in its map (no move in
  // flight): ReplicationLog, outboxes and streams. Part of InstallLocked.
  void ConfigureReplicationLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  transport::Response HandleReplicate(const transport::ReplicateRequest& request);
  // A client write admitted (kServe) for a replicated bucket; releases the admission.
  transport::Response ReplicatedWrite(const transport::WriteRequest& request, BucketId bucket);
  // Makes the WAL durable before a replicated write counts as held here, as
  // SyncPolicy::kEveryWrite (the default of `shoal node`) asks; otherwise the write is already in
  // the WAL, which survives a process crash, as a write of an unreplicated bucket does.
  [[nodiscard]] Status SyncReplicatedWrites();
  // The outcome of a replicated write whose WAL sync failed: unknown.
  [[nodiscard]] static Status SyncFailed(const Status& sync);
  // Waits until the write at `rseq` of `bucket` is committed or abandoned, or until
  // call_timeout since `start` (then kPending), woken by the ReplicationLog (Runtime::Await).
  [[nodiscard]] StatusOr<WriteState> AwaitDecided(BucketId bucket, uint64_t rseq,
                                                  transport::Micros start);
  // OK for a committed write; the client's kUnknown, saying why, otherwise.
  [[nodiscard]] Status OutcomeOf(BucketId bucket, uint64_t rseq, WriteState state) const;
  // Waits until the read lease holds and every write of `bucket` the store holds now is
  // committed, or with `key` only every write of that key (a replicated primary's read answers
  // after this). OK at once when !replicated.
  [[nodiscard]] Status AwaitReadable(BucketId bucket, bool replicated,
                                     std::optional<storage::DocumentKey> key = std::nullopt);
  // The read lease of a bucket this node is the replicated primary of holds now (§5): every
  // backup accepted this node as the primary within read_lease - clock_drift.
  [[nodiscard]] bool LeaseHeld(BucketId bucket) const;
  // A backup's answer to a kAnyReplica read of `pk` (after reading it): NOT_SERVING unless the
  // primary's latest message is at most max_staleness old and every write of the key this copy
  // holds is committed. OK at once at a primary or for an unreplicated bucket.
  [[nodiscard]] Status CheckBackupRead(BucketId bucket, CollectionId collection,
                                       std::string_view pk);
  // Begins the bucket's map term in the store if the store is behind it.
  [[nodiscard]] Status EnsureTerm(BucketId bucket);
  // Hands a stamped write to the streams of its bucket's backups, in rseq order.
  void Send(storage::ReplicatedEntry entry);
  // Sends the next message of `backup`'s stream unless one is in flight: what is queued, or with
  // `keepalive` an empty message naming the buckets' terms. Never called with a lock held.
  void SendNext(NodeId backup, const std::shared_ptr<ReplicaStreamQueue>& queue, bool keepalive);
  // The completion of a stream message sent at `sent_at` naming `terms`.
  void HandleReplicateAnswer(NodeId backup, const std::shared_ptr<ReplicaStreamQueue>& queue,
                             const std::vector<transport::BucketTerm>& terms,
                             transport::Micros sent_at, StatusOr<transport::Response> response);
  // Keepalives, resends and reports of one backup's stream.
  void ReplicaKeeperLoop(NodeId backup, std::shared_ptr<ReplicaStreamQueue> queue);

  // ---- quiesce for splits and merges (storage_node_quiesce.cc) ----
  transport::Response HandleQuiesce(const transport::QuiesceRequest& request);
  // A write to `bucket` waits (kQueue): a quiesce holds it at the current map's epoch.
  [[nodiscard]] bool QuiescedLocked(BucketId bucket) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets the quiesces of epochs before the map's (part of InstallLocked).
  void EndQuiescesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Clears a stale replication state of each bucket new since `before` that this node is a
  // replica of (a split's upper half; part of InstallLocked).
  void StartNewBucketsLocked(const cluster::ShardMap& before) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The quiesces held longer than the fence timeout (HeartbeatRequest::quiesced).
  [[nodiscard]] std::vector<transport::QuiescedBucket> LongQuiesces() const;
  // Lifts the quiesces the coordinator released (HeartbeatResponse::released, or a
  // QuiesceRequest with `release`), each only if its token still holds the bucket.
  void LiftQuiesces(const std::vector<transport::QuiescedBucket>& released);

  transport::Runtime& runtime_;
  const NodeOptions options_;
  std::unique_ptr<storage::BucketStore> store_;

  mutable absl::Mutex mu_;
  cluster::ShardMapPtr map_ ABSL_GUARDED_BY(mu_);                         // latest installed
  absl::flat_hash_map<BucketId, MoveRecord> moves_ ABSL_GUARDED_BY(mu_);  // by bucket
  // Admitted, not yet written.
  absl::flat_hash_map<BucketId, int> inflight_writes_ ABSL_GUARDED_BY(mu_);
  // The reads and the writes served per bucket, for the load report (HandleLoad folds them).
  RequestRates read_rates_ ABSL_GUARDED_BY(mu_);
  RequestRates write_rates_ ABSL_GUARDED_BY(mu_);
  // Destination ingest/apply running.
  absl::flat_hash_map<BucketId, int> move_io_ ABSL_GUARDED_BY(mu_);
  std::map<CollectionId, bool> collections_ ABSL_GUARDED_BY(mu_);  // registered in the store
  NodeCounters counters_ ABSL_GUARDED_BY(mu_);
  int active_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t export_counter_ ABSL_GUARDED_BY(mu_) = 0;
  MoveExports exports_;  // source: the export files FetchMoveFile serves (its own lock)

  absl::Mutex load_mu_;  // never taken with mu_ held
  absl::flat_hash_map<BucketId, CachedLoad> load_cache_ ABSL_GUARDED_BY(load_mu_);

  ReplicationLog replication_;                   // its own lock, taken after mu_ or alone
  RecentEntries recent_;                         // its own lock, taken after outbox_mu_ or alone
  const uint64_t incarnation_;                   // this start of the process
  bool installed_ ABSL_GUARDED_BY(mu_) = false;  // a map was installed since the start
  // The cluster the data directory belongs to: a state of another is never installed.
  std::optional<ClusterIdentity> cluster_ ABSL_GUARDED_BY(mu_);
  bool other_cluster_logged_ ABSL_GUARDED_BY(mu_) = false;
  // Terms this node held as a replicated primary before its start, and terms the coordinator
  // sealed here (a failover; durable in the store, restored at Open): no read or write of the
  // bucket is admitted at or below them.
  absl::flat_hash_map<BucketId, Term> restart_fenced_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<BucketId, Term> sealed_ ABSL_GUARDED_BY(mu_);
  // At a backup: when it last acknowledged the bucket's stream (what a seal reports), and the
  // primary's watermark at that term (what a kAnyReplica read may return).
  absl::flat_hash_map<BucketId, transport::Micros> last_ack_ ABSL_GUARDED_BY(mu_);
  struct Committed {
    Term term;
    uint64_t rseq = 0;
  };
  absl::flat_hash_map<BucketId, Committed> committed_ ABSL_GUARDED_BY(mu_);
  // At a primary: buckets whose silent backup the coordinator kept at the floor (the removal was
  // refused), by that backup. New writes get NOT_ENOUGH_REPLICAS until it answers again or the
  // map drops it. `floor_blocked_count_` spares the stream's answers the lock while it is empty.
  absl::flat_hash_map<BucketId, NodeId> floor_blocked_ ABSL_GUARDED_BY(mu_);
  std::atomic<size_t> floor_blocked_count_{0};
  // The send time of this node's latest heartbeat the coordinator answered (INT64_MIN: none):
  // the read lease of a bucket whose silent backup is kept at the floor (ReplicationLog::Excuse).
  std::atomic<int64_t> heartbeat_answered_{INT64_MIN};
  // At a replicated primary: buckets whose writes queue for a split or merge (QuiesceRequest),
  // until a map after `epoch` or the release of `token`.
  struct Quiesce {
    MapEpoch epoch;
    uint64_t token = 0;
    transport::Micros since = 0;
  };
  absl::flat_hash_map<BucketId, Quiesce> quiesced_ ABSL_GUARDED_BY(mu_);
  // Per replicated bucket: its backups and the stamped writes waiting for an earlier rseq
  // before they go to the streams (writers of one bucket finish out of rseq order).
  struct Outbox {
    Term term;
    std::vector<NodeId> backups;
    std::vector<std::shared_ptr<ReplicaStreamQueue>> queues;  // the backups' streams
    uint64_t next = 0;  // the next rseq to hand to the streams
    std::map<uint64_t, storage::ReplicatedEntry> waiting;
  };
  absl::Mutex outbox_mu_;  // taken after mu_ or alone
  absl::flat_hash_map<BucketId, Outbox> outboxes_ ABSL_GUARDED_BY(outbox_mu_);
  // One stream per backup, each drained by its sender task; by backup.
  absl::flat_hash_map<NodeId, std::shared_ptr<ReplicaStreamQueue>> streams_ ABSL_GUARDED_BY(mu_);

  absl::Mutex hot_keys_mu_;  // never taken with mu_ held
  hotspot::TopKSketch hot_keys_ ABSL_GUARDED_BY(hot_keys_mu_);
};

}  // namespace shoal::node
