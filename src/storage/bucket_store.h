#pragma once

// BucketStore: the documents of one node on one RocksDB instance, laid out so that a bucket (a
// range of points) is one contiguous key range. Design and measurements: docs/design/storage.md.
//
// Layout. Column family "documents": key [point BE 8][collection id BE 4][primary key], value
// [format][flags][version BE 8][JSON body] (codec.h). Column family "meta": the store format,
// the store id, the version reservation, the collection registry and the local directory. A
// bucket is therefore one range over all collections: one SST set per move, one DeleteRange per
// drop; a collection scan filters on the collection id.
//
// Contract:
//  - Every single-document operation is atomic with respect to every other operation on the same
//    key: mutations of a key are serialized by a striped lock around read-decide-write, and a
//    read sees a whole committed write. Get is linearizable with the mutations.
//  - Every write stamps a store-wide version that is larger than every version stamped or
//    observed before, also across restarts (VersionClock). kApplyIfNewer writes the version it
//    carries and never replaces a stored version that is equal or newer.
//  - A failing operation changes nothing; ApplyBatch is all-or-nothing in one WriteBatch;
//    ApplyEach fails slot by slot, as the same mutations applied one after the other would.
//  - Durability follows StoreOptions::sync (store_options.h), except for a mutation called with
//    WalSync::kDeferred: readable at once, durable only after a later SyncWal.
//  - With check_ownership, client operations need the point in a kReadWrite or kLeaving bucket,
//    kApplyIfNewer in a kReadWrite or kAdding bucket. Mutations hold the directory lock shared
//    from the check to the end of their write, so a directory change (state change, drop) waits
//    for writes in flight and no write lands in a bucket after it stopped being served. Scans,
//    statistics, exports and catch-up reads see what is stored in a range, whatever its state.
//
// Thread-safety: all methods may be called concurrently. A Snapshot must be destroyed before the
// store; Close() (or the destructor) must not race with other calls.

#include <rocksdb/db.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "src/common/directory_identity.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/storage/bucket_values.h"
#include "src/storage/disk_space_guard.h"
#include "src/storage/document.h"
#include "src/storage/group_sync.h"
#include "src/storage/local_directory.h"
#include "src/storage/mutation.h"
#include "src/storage/point_range.h"
#include "src/storage/predicate.h"
#include "src/storage/replica_position.h"
#include "src/storage/rseq_index.h"
#include "src/storage/store_options.h"
#include "src/storage/version_clock.h"

namespace shoal::storage {

// A consistent point-in-time view. Released on destruction, which must happen before the store
// is closed. Thread-safe to share.
class Snapshot {
 public:
  ~Snapshot();
  Snapshot(const Snapshot&) = delete;
  Snapshot& operator=(const Snapshot&) = delete;

  // Engine sequence number of the snapshot: ReadChangesSince(range, sequence()) returns exactly
  // the writes that the snapshot does not contain.
  [[nodiscard]] uint64_t sequence() const;

 private:
  friend class BucketStore;
  Snapshot(rocksdb::DB* db, const rocksdb::Snapshot* snapshot) : db_(db), snapshot_(snapshot) {}
  rocksdb::DB* db_;
  const rocksdb::Snapshot* snapshot_;
};

// One document's key, for GetMany. The view must outlive the call.
struct DocumentKey {
  CollectionId collection{};
  std::string_view primary_key{};
};

struct GetOptions {
  bool include_tombstones = false;
  const Snapshot* snapshot = nullptr;
};

struct ScanOptions {
  PointRange range = PointRange::All();
  std::optional<CollectionId> collection{};  // all collections if unset
  DocumentFilter filter{};
  bool include_tombstones = false;
  const Snapshot* snapshot = nullptr;  // latest state if null
  std::string cursor{};                // ScanPage::next_cursor of the previous page; "" = start
  size_t max_documents = 1000;         // per page, >= 1
  size_t max_bytes = 4u << 20;         // per page, soft (the page ends after crossing it)
  // Per page, hard, 0 = none: the page ends before the document that would take its key + body
  // bytes past this; a page's first document always goes, however large (a streamed message).
  size_t max_page_bytes = 0;
  size_t max_examined = 100000;  // stored entries read per page, >= 1
};

struct ScanPage {
  std::vector<Document> documents{};  // in stored-key order: (point, collection, primary key)
  std::string next_cursor{};          // empty: the range is exhausted
  uint64_t examined = 0;              // stored entries read for this page
};

// Exact figures come from a scan at a snapshot; estimates from engine metadata only.
struct BucketStats {
  bool exact = false;
  uint64_t documents = 0;        // live documents (estimate: all entries, tombstones included)
  uint64_t tombstones = 0;       // exact only
  uint64_t live_bytes = 0;       // key + value bytes of live documents (estimate: all entries)
  uint64_t tombstone_bytes = 0;  // exact only
  uint64_t max_version = 0;      // exact only
};

struct ExportOptions {
  std::string directory{};                  // created if missing; files are named export-N.sst
  uint64_t target_file_bytes = 256u << 20;  // key + value bytes per file before a new one
  const Snapshot* snapshot = nullptr;       // one is taken (and released) if null
};

struct IngestOptions {
  // Hard-link/move instead of copy. The files are never modified either way (the sequence number
  // they get is kept in the engine's MANIFEST), so a link may share its data with another file.
  bool move_files = false;
  // Require the range to be covered by kAdding buckets of the local directory. A caller that
  // tracks staging itself (the storage node derives it from the ShardMap) turns this off; the
  // range must still hold no data.
  bool require_adding_buckets = true;
};

// Writes to a range after a sequence number, in commit order (ReadChangesSince).
struct ChangeBatch {
  std::vector<Document> changes{};  // the new state of each written key, with its version
  uint64_t next_sequence = 0;       // pass back to continue; every change <= it was returned
};

class BucketStore {
 public:
  // Opens (creating if allowed) the store at options.path and recovers its directory, registry
  // and version clock. kCorruption if the path holds something else.
  [[nodiscard]] static StatusOr<std::unique_ptr<BucketStore>> Open(const StoreOptions& options);
  ~BucketStore();
  BucketStore(const BucketStore&) = delete;
  BucketStore& operator=(const BucketStore&) = delete;

  // Flushes nothing extra (the WAL is the log); stops the sync thread, syncs the WAL, closes.
  // Idempotent. Other calls after Close are programmer errors.
  [[nodiscard]] Status Close();

  // A random non-zero id drawn when the store is created (or first opened without one) and
  // durable before Open returns; it never changes. A wiped or replaced data directory has another
  // id, so that a copy it once held is never taken for one it still holds
  // (docs/design/replication.md §4.6).
  [[nodiscard]] uint64_t store_id() const { return store_id_; }

  // --- collections (idempotent create; ids are assigned by the cluster) ---
  [[nodiscard]] Status CreateCollection(const CollectionSpec& spec);
  [[nodiscard]] StatusOr<CollectionSpec> GetCollection(CollectionId id) const;
  [[nodiscard]] StatusOr<CollectionSpec> FindCollection(std::string_view name) const;
  [[nodiscard]] std::vector<CollectionSpec> ListCollections() const;

  // --- single documents (mutation.h has the full table) ---
  [[nodiscard]] StatusOr<Document> Get(CollectionId collection, std::string_view primary_key,
                                       const GetOptions& options = {}) const;
  // Get of each key, with one MultiGet for them all: one result per key, in order.
  [[nodiscard]] std::vector<StatusOr<Document>> GetMany(std::span<const DocumentKey> keys,
                                                        const GetOptions& options = {}) const;
  // Every mutation takes a WalSync (store_options.h): kDeferred leaves the WAL sync to the
  // caller's SyncWal, which must come before the write is acknowledged.
  [[nodiscard]] StatusOr<uint64_t> Insert(CollectionId c, std::string_view pk,
                                          std::string_view body,
                                          WalSync wal_sync = WalSync::kAsConfigured);
  [[nodiscard]] StatusOr<uint64_t> Update(CollectionId c, std::string_view pk,
                                          std::string_view body,
                                          WalSync wal_sync = WalSync::kAsConfigured);
  [[nodiscard]] StatusOr<uint64_t> Upsert(CollectionId c, std::string_view pk,
                                          std::string_view body,
                                          WalSync wal_sync = WalSync::kAsConfigured);
  [[nodiscard]] StatusOr<uint64_t> Delete(CollectionId c, std::string_view pk,
                                          WalSync wal_sync = WalSync::kAsConfigured);
  [[nodiscard]] StatusOr<uint64_t> UpdateIf(CollectionId c, std::string_view pk,
                                            std::string_view body, const Condition& condition);
  [[nodiscard]] StatusOr<uint64_t> UpsertIf(CollectionId c, std::string_view pk,
                                            std::string_view body, const Condition& condition);
  [[nodiscard]] StatusOr<uint64_t> CompareAndSet(CollectionId c, std::string_view pk,
                                                 uint64_t expected_version, std::string_view body,
                                                 WalSync wal_sync = WalSync::kAsConfigured);
  [[nodiscard]] StatusOr<MutationResult> Apply(const Mutation& mutation,
                                               WalSync wal_sync = WalSync::kAsConfigured);
  // All or nothing, in one WriteBatch. A key may appear more than once; later mutations see the
  // effect of earlier ones. On error nothing is written and the message names the index.
  [[nodiscard]] StatusOr<std::vector<MutationResult>> ApplyBatch(
      std::span<const Mutation> mutations, WalSync wal_sync = WalSync::kAsConfigured);
  // The same mutations with the outcome each would have had applied alone, one after the other,
  // in order (later mutations see the effect of earlier ones): a slot's error (validation,
  // DUPLICATE, NOT_FOUND...) fails that slot only. The writes of the other slots go to the engine
  // in one WriteBatch, with one MultiGet for the stored versions; if that write fails, nothing
  // is written and every slot of a key the batch writes gets its error (its decision may have
  // counted on a write that did not happen). The call itself fails only for a batch over
  // max_batch_bytes. The storage node applies a batch of client writes with it.
  [[nodiscard]] StatusOr<std::vector<StatusOr<MutationResult>>> ApplyEach(
      std::span<const Mutation> mutations, WalSync wal_sync = WalSync::kAsConfigured);

  // --- scans (bucket_store_scan.cc) ---
  [[nodiscard]] StatusOr<ScanPage> Scan(const ScanOptions& options) const;
  // Calls `fn` for every match until it returns false; ignores cursor and page limits.
  [[nodiscard]] Status ForEach(const ScanOptions& options,
                               const std::function<bool(const Document&)>& fn) const;
  [[nodiscard]] std::unique_ptr<Snapshot> GetSnapshot() const;

  // --- local directory (bucket_store_directory.cc) ---
  [[nodiscard]] Status AddBucket(const BucketEntry& entry);
  [[nodiscard]] Status SetBucketState(BucketId id, BucketState state);
  // Metadata only: constant time whatever the bucket's size.
  [[nodiscard]] StatusOr<std::pair<BucketEntry, BucketEntry>> SplitBucket(BucketId id, uint64_t at,
                                                                          BucketId right_id);
  // Removes the bucket and, in the same WriteBatch, deletes its data (then drops whole files and
  // hints compaction). Refused for a kReadWrite bucket: move it to kLeaving first.
  [[nodiscard]] Status RemoveBucket(BucketId id);
  [[nodiscard]] StatusOr<BucketEntry> GetBucket(BucketId id) const;
  [[nodiscard]] std::vector<BucketEntry> ListBuckets() const;

  // --- bucket data (bucket_store_transfer.cc) ---
  [[nodiscard]] StatusOr<BucketStats> ComputeStats(const PointRange& range,
                                                   const Snapshot* snapshot = nullptr) const;
  [[nodiscard]] StatusOr<BucketStats> EstimateStats(const PointRange& range) const;
  [[nodiscard]] StatusOr<ExportedRange> ExportRange(const PointRange& range,
                                                    const ExportOptions& options) const;
  // Ingests exported files. The range must lie inside kAdding buckets and hold no data, and no
  // change may be applied to it until this returns (ingest first, then catch-up).
  // move_files hard-links files from the same filesystem; otherwise they are copied.
  [[nodiscard]] Status IngestRange(const ExportedRange& exported, const IngestOptions& options);
  // Deletes every stored entry in `range`; refused if a kReadWrite bucket overlaps it.
  [[nodiscard]] Status DropRange(const PointRange& range);
  // Document writes to `range` with sequence > after_sequence, in commit order, at most
  // `max_changes` (the batch ends at a write-batch boundary). An empty batch means "nothing yet",
  // never "caught up": only the caller's fence ends catch-up. kUnavailable if the WAL needed was
  // already deleted (the move must restart from a new export).
  [[nodiscard]] StatusOr<ChangeBatch> ReadChangesSince(const PointRange& range,
                                                       uint64_t after_sequence,
                                                       size_t max_changes) const;
  // How many ReadChangesSince reads had to seek the WAL afresh (the rest went on from a parked
  // reader). For tests and diagnostics.
  [[nodiscard]] uint64_t wal_seeks() const { return wal_seeks_.load(); }
  // Applies changes read from another node: kApplyIfNewer for each, in one WriteBatch.
  [[nodiscard]] StatusOr<std::vector<MutationResult>> ApplyChanges(
      std::span<const Document> changes, WalSync wal_sync = WalSync::kAsConfigured);

  // --- replication (bucket_store_replica.cc; replica_position.h, replication.md §3) ---
  // Lock order: a bucket's sequencer, then the directory lock, then the key stripes.

  // The bucket's copy position and term history: (0, 0) and none before any.
  [[nodiscard]] ReplicaState GetReplicaState(BucketId bucket) const;
  // Starts `term` at the bucket's next rseq; its primary does this before it orders a write of
  // the term. FailedPrecondition unless `term` is above the current one. Durable (synced).
  [[nodiscard]] Status BeginTerm(BucketId bucket, Term term);
  // Replaces the bucket's state, e.g. with its primary's once a new copy holds its data, or
  // with the empty state once the data no longer matches it. Durable (synced). The bucket's
  // RseqIndex starts afresh at the stored position.
  [[nodiscard]] Status SetReplicaState(BucketId bucket, const ReplicaState& state);
  // Seals (replication.md §4.2 step 2, §4.8): a replica sealed at a bucket's term refuses that
  // term's stream, and must go on refusing it after a restart, or it could renew a cut-off old
  // primary's read lease while a failover waits that lease out. RecordSeals raises each bucket's
  // sealed term (a lower or equal one changes nothing) and returns once the seals are durable
  // (synced). Seals() is every recorded seal. ForgetSeals drops those a newer term made moot,
  // unsynced: a seal that a crash brings back is below its bucket's term and refuses nothing.
  [[nodiscard]] Status RecordSeals(std::span<const std::pair<BucketId, Term>> seals);
  [[nodiscard]] std::map<BucketId, Term> Seals() const;
  [[nodiscard]] Status ForgetSeals(std::span<const BucketId> buckets);
  // Log retention (rseq_index.h, replication.md §6): an engine sequence from which
  // ReadChangesSince returns every write of the bucket after rseq `rseq`, when this store can
  // vouch for a copy at `rseq` (its index covers it; the WAL may still be gone: the read says).
  [[nodiscard]] std::optional<uint64_t> RetainedLogStart(BucketId bucket, uint64_t rseq) const;
  // Forgets the bucket's index: the store's log may lack writes of the bucket's range from now
  // on (it is no replica of it any more, or the range changed).
  void ForgetRetainedLog(BucketId bucket);
  // ApplyEach at a primary of `bucket`, which the caller says holds every mutation's key (the
  // storage node decides that by its map): if the call writes anything, it takes the bucket's
  // next rseq under its current term and records the position in the same WriteBatch, so commit
  // order is rseq order. `entries` then holds that one entry, what a backup applies.
  // FailedPrecondition (nothing written) if the bucket began no term.
  struct StampedWrite {
    std::vector<StatusOr<MutationResult>> results;
    std::vector<ReplicatedEntry> entries;
  };
  [[nodiscard]] StatusOr<StampedWrite> ApplyEachStamped(BucketId bucket,
                                                        std::span<const Mutation> mutations,
                                                        WalSync wal_sync = WalSync::kAsConfigured);
  // At a backup: applies every entry that is its bucket's next write (kApplyIfNewer) with the
  // position and, for a new term, the history record, all in one WriteBatch. One result per
  // entry: the bucket's position after it. An entry already applied under the same term is
  // skipped (a resend); OutOfRange for a gap; FailedPrecondition for a term older than the
  // copy's; Aborted where the copy's history has another term for that rseq (it diverged and
  // must be rebuilt). The call fails as a whole only if the write fails.
  [[nodiscard]] StatusOr<std::vector<StatusOr<ReplicaPosition>>> ApplyReplicated(
      std::span<const ReplicatedEntry> entries, WalSync wal_sync = WalSync::kAsConfigured);
  // A 64-bit digest of every stored entry in `range`, tombstones included (key, version,
  // tombstone, body): equal copies have equal digests.
  [[nodiscard]] StatusOr<uint64_t> DigestRange(const PointRange& range,
                                               const Snapshot* snapshot = nullptr) const;

  // --- versions and engine ---
  [[nodiscard]] uint64_t LastVersion() const { return clock_->Last(); }
  [[nodiscard]] Status ObserveVersion(uint64_t version) { return clock_->Observe(version); }
  [[nodiscard]] uint64_t LatestSequence() const;
  // Makes every write that returned before the call durable (fsyncs the WAL). Concurrent
  // callers share fsyncs (GroupSync).
  [[nodiscard]] Status SyncWal();
  // WAL syncs SyncWal ran so far.
  [[nodiscard]] uint64_t wal_syncs() const { return group_sync_.syncs(); }
  [[nodiscard]] Status Flush();
  [[nodiscard]] Status CompactRange(const PointRange& range);
  // Whether the engine has a flush or a compaction running or waiting to run. For benchmarks
  // that measure a steady state only once the work left by an earlier phase is done.
  [[nodiscard]] bool BackgroundWorkPending() const;
  [[nodiscard]] const StoreOptions& options() const { return options_; }
  // The free-space check of document writes and exports (StoreOptions::min_free_disk_bytes).
  [[nodiscard]] const DiskSpaceGuard& disk_space() const { return *space_; }
  [[nodiscard]] DiskSpaceGuard& disk_space() { return *space_; }
  // A write the engine's disk refused (past the guard) stops the engine: every later write
  // fails with the same error. The store resumes it in place once the disk has its reserve free
  // again (bucket_store_recovery.cc). For status and tests: whether it is stopped now, and how
  // often it stopped and resumed since Open.
  [[nodiscard]] bool engine_stopped() const { return engine_stopped_.load(); }
  [[nodiscard]] uint64_t engine_stops() const { return engine_stops_.load(); }
  [[nodiscard]] uint64_t engine_resumes() const { return engine_resumes_.load(); }
  // A failure the store does not recover from in place: the engine stopped after an I/O error
  // other than a full disk (EIO, a read-only remount, a deleted directory: the disk is not to
  // be trusted, as PostgreSQL learned of fsync errors), or it cannot resume from a full disk
  // without a restart. The first such error, for as long as the store is open; nullopt while
  // there is none. A node stops on it (node::StorageHealth).
  [[nodiscard]] std::optional<Status> EngineFailure() const;
  // When the WAL sync running now started (steady clock, ns; 0 while none runs).
  [[nodiscard]] int64_t sync_running_since_nanos() const {
    return group_sync_.running_since_nanos();
  }
  // While engine writes are in flight, when the latest of them returned or, if none returned
  // since the first began, when it began (steady clock, ns); 0 while none is in flight. A disk
  // that holds the engine's synced writes keeps this in the past.
  [[nodiscard]] int64_t write_waiting_since_nanos() const;
  // OK while the store's directory is the one it opened; kIo once it was removed or replaced
  // (a cleaner of /tmp, an operator's rm -rf): the engine then writes to deleted files.
  [[nodiscard]] Status CheckDirectory() const;
  // How much the writes applied since Open changed the live size of the data in `range`: the sum
  // over those writes of |new - old| key + body bytes of the document (a delete counts the bytes
  // it removed, an insert those it added, an overwrite by a body of the same size nothing).
  // Counted per 1/kChurnSlots of the hash space, so a range smaller than a slot also sees the
  // churn of its neighbours in the slot (an over-estimate, never an under-estimate). The storage
  // node rescans a cached bucket size once enough of it changed (storage_node_load.cc).
  [[nodiscard]] uint64_t LiveBytesChurn(const PointRange& range) const;

 private:
  class StripeGuard;
  struct PreparedKey;
  // What a failed mutation of ApplyMutations fails: the whole call (ApplyBatch), or its slot.
  enum class BatchFailure : uint8_t { kWhole, kPerSlot };

  explicit BucketStore(const StoreOptions& options);
  [[nodiscard]] Status OpenEngine();
  [[nodiscard]] Status LoadMeta();
  // Reads the store id, or draws and writes one (sync) when the store has none.
  [[nodiscard]] Status LoadStoreId();
  void SyncLoop();

  [[nodiscard]] Status CheckCollection(CollectionId id) const;
  [[nodiscard]] Status CheckOwnership(Point point, MutationKind kind) const;
  [[nodiscard]] Status ValidateMutation(const Mutation& m) const;
  // Adds records to a call's WriteBatch after its documents (directory lock and stripes held),
  // and learns whether the batch was written.
  struct BatchHook {
    std::function<Status(std::span<const size_t> writes,
                         const std::vector<StatusOr<MutationResult>>& results,
                         rocksdb::WriteBatch* batch)>
        prepare;
    std::function<void()> written;
  };
  // ApplyBatch and ApplyEach: decides the mutations in order, then writes one WriteBatch.
  [[nodiscard]] StatusOr<std::vector<StatusOr<MutationResult>>> ApplyMutations(
      std::span<const Mutation> mutations, WalSync wal_sync, BatchFailure failure,
      const BatchHook* hook = nullptr);
  // The replication state of one bucket; `sequencer` orders its stamped and replicated writes
  // and guards `state`.
  struct ReplicaTrack {
    std::mutex sequencer;
    ReplicaState state;
    RseqIndex index;  // where the log holds the writes after a position (rseq_index.h)
  };
  [[nodiscard]] std::shared_ptr<ReplicaTrack> Track(BucketId bucket) const;
  [[nodiscard]] Status LoadReplicaRecord(std::string_view key, std::string_view value);
  // Writes the state's records (position and history) to `batch`.
  void PutReplicaState(BucketId bucket, const ReplicaState& state, rocksdb::WriteBatch* batch);
  [[nodiscard]] StatusOr<std::optional<StoredState>> ReadStored(const std::string& key,
                                                                std::string* value) const;
  [[nodiscard]] Status WriteBatchToEngine(rocksdb::WriteBatch* batch,
                                          WalSync wal_sync = WalSync::kAsConfigured);
  // Engine stop and resume (bucket_store_recovery.cc). EngineWriteStatus converts the status of
  // a call that writes to the engine and notes a stop; ResumeEngineIfStopped runs before such a
  // call and resumes a stopped engine once the disk has room, or says why it is still stopped;
  // CheckWalReadableAfter refuses a WAL read that would cross a stop.
  [[nodiscard]] Status EngineWriteStatus(const rocksdb::Status& status, std::string_view context);
  [[nodiscard]] Status ResumeEngineIfStopped();
  [[nodiscard]] Status CheckWalReadableAfter(uint64_t after_sequence) const;
  [[nodiscard]] Status PersistDirectory(const LocalDirectory& next, rocksdb::WriteBatch* batch);
  [[nodiscard]] Status ReclaimRange(const PointRange& range);
  [[nodiscard]] Status CheckWalRetained(uint64_t sequence) const;
  [[nodiscard]] Status CheckNotServed(const PointRange& range, bool allow_leaving) const;
  [[nodiscard]] rocksdb::ReadOptions MakeReadOptions(const Snapshot* snapshot) const;

  const StoreOptions options_;
  EngineOptions engine_;
  rocksdb::DB* db_ = nullptr;
  rocksdb::ColumnFamilyHandle* documents_ = nullptr;
  rocksdb::ColumnFamilyHandle* meta_ = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  std::unique_ptr<VersionClock> clock_;
  uint64_t store_id_ = 0;  // set by Open, constant after
  std::unique_ptr<DiskSpaceGuard> space_;

  struct alignas(64) Stripe {
    std::mutex mu;
  };
  std::unique_ptr<Stripe[]> stripes_;

  mutable std::mutex replica_mu_;  // guards the map below, not the tracks
  mutable absl::flat_hash_map<BucketId, std::shared_ptr<ReplicaTrack>> tracks_;

  mutable std::mutex seals_mu_;  // orders RecordSeals and ForgetSeals; guards seals_
  std::map<BucketId, Term> seals_;

  mutable std::shared_mutex collections_mu_;
  absl::flat_hash_map<CollectionId, std::string> collections_;
  absl::flat_hash_map<std::string, CollectionId> collection_by_name_;

  // Shared by mutations from their ownership check to the end of their write; exclusive for
  // directory changes. Guards directory_.
  mutable std::shared_mutex directory_mu_;
  LocalDirectory directory_;

  // WAL readers parked where a ReadChangesSince call stopped (bucket_store_transfer.cc), so
  // that the next call of the same catch-up goes on from there instead of reading the WAL file
  // again from its start. A new catch-up takes the reader parked closest behind its start (the
  // one a finished catch-up left near the head of the log) and reads forward to its start,
  // skipping at most kMaxWalSkipBytes of log before it seeks afresh: a fresh seek reads the
  // log file that holds the start from its beginning, up to a memtable's worth, and checks every
  // record's CRC. Each reader belongs to no caller while parked; a caller takes it out.
  struct WalCursor {
    std::unique_ptr<rocksdb::TransactionLogIterator> it;
    uint64_t expected = 0;  // the first sequence not read yet
  };
  // The parked reader with the largest `expected` not above `expected`, and that `expected`.
  [[nodiscard]] std::pair<std::unique_ptr<rocksdb::TransactionLogIterator>, uint64_t> TakeWalCursor(
      uint64_t expected) const;
  // Whether the engine's tables that overlap [begin, end) found its data worth compressing (true
  // with no table to go by). An export of data the engine stored raw skips compression: it
  // would compress every block only to keep it raw.
  [[nodiscard]] StatusOr<bool> RangeCompresses(const std::string& begin,
                                               const std::string& end) const;
  void ParkWalCursor(std::unique_ptr<rocksdb::TransactionLogIterator> it, uint64_t expected) const;
  static constexpr size_t kMaxWalCursors = 16;
  static constexpr uint64_t kMaxWalSkipBytes = 16u << 20;
  mutable std::atomic<uint64_t> wal_seeks_{0};  // fresh GetUpdatesSince calls, for tests
  static constexpr int kChurnSlotShift = 54;    // 1024 slots of the 64-bit hash space
  static constexpr size_t kChurnSlots = size_t{1} << (64 - kChurnSlotShift);
  void AddChurn(Point point, uint64_t bytes);
  std::array<std::atomic<uint64_t>, kChurnSlots> live_bytes_churn_{};
  mutable std::mutex wal_cursors_mu_;
  mutable std::vector<WalCursor> wal_cursors_;  // oldest first

  // Engine stop and resume: set by EngineWriteStatus, cleared by ResumeEngineIfStopped.
  std::atomic<bool> engine_stopped_{false};
  std::atomic<bool> stopped_by_full_disk_{false};  // the stop's cause: ENOSPC or another error
  std::atomic<uint64_t> engine_stops_{0};
  std::atomic<uint64_t> engine_resumes_{0};
  // write_waiting_since_nanos(): engine writes in flight, and the latest progress.
  std::atomic<int64_t> writes_in_flight_{0};
  std::atomic<int64_t> write_progress_ns_{0};
  // EngineFailure(): set once, never cleared.
  mutable std::mutex failure_mu_;
  std::optional<Status> failure_;  // guarded by failure_mu_
  void NoteFailure(const Status& failure);
  // The directory Open created or found, for CheckDirectory.
  DirectoryIdentity directory_identity_{};
  // WAL reads from below this after_sequence are refused (0: none), because the WAL before
  // the last stop may hold records of writes that failed (bucket_store_recovery.cc).
  std::atomic<uint64_t> wal_readable_from_{0};
  std::mutex resume_mu_;                // one resume attempt at a time
  int64_t last_resume_attempt_ns_ = 0;  // steady clock; guarded by resume_mu_

  GroupSync group_sync_{[this] { return SyncWalNow(); }};
  [[nodiscard]] Status SyncWalNow();

  std::mutex sync_mu_;
  std::condition_variable sync_cv_;
  bool stopping_ = false;
  std::thread sync_thread_;
  bool closed_ = false;
};

}  // namespace shoal::storage
