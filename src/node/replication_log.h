#pragma once

// ReplicationLog: what a primary knows of its replicated buckets' writes between ordering them
// and acknowledging them (docs/design/replication.md §3 steps 6 and 7).
//
// Per bucket: the highest rseq ordered locally, the highest the local WAL made durable, and each
// backup's durable (acknowledged) rseq, for the backups of the primary's current map. The
// WATERMARK is the minimum of the local durable rseq and every backup's: every write at or below
// it is on every replica of the configuration, durably, and may be acknowledged to its client
// (write-all, PacificA). A backup that leaves the configuration (RemoveReplica in a map the
// primary installed) stops counting, which is what lets the watermark pass a silent backup only
// after the coordinator removed it. A backup that joins starts at the rseq it joined with.
//
// A read waits until the watermark reaches the rseq ordered when it began (Ordered), so that no
// node returns a write that a failover could still lose.
//
// When the bucket's writes can no longer commit under this primary (a backup answered with a
// newer term; the primary lost the bucket), Abandon marks every write ordered so far and not
// committed as kAbandoned: its outcome is unknown to its client.
//
// A waiter for a write Watches it with a Wakeup, which the log sets once the write is no longer
// pending, and Awaits that (runtime.h rule 2): no poll per write on a real runtime.
//
// Thread-safe (one mutex; a Wakeup is set under it, a leaf lock).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "src/common/ids.h"
#include "src/transport/wakeup.h"

namespace shoal::node {

enum class WriteState : uint8_t {
  kPending = 0,    // ordered, not yet on every replica
  kCommitted = 1,  // at or below the watermark: acknowledge it
  kAbandoned = 2,  // the primary gave the bucket up before it committed: outcome unknown
};

class ReplicationLog {
 public:
  // The backups of the bucket in the primary's current map. Backups not listed are forgotten;
  // a new one starts at `joined_rseq` (what it holds when it joins). Also starts tracking the
  // bucket at `ordered_rseq` (the store's position) if it was not tracked yet.
  void Configure(BucketId bucket, const std::vector<NodeId>& backups, uint64_t ordered_rseq,
                 uint64_t joined_rseq);
  // Stops tracking the bucket (it left the node, or is no longer replicated). Its pending writes
  // become abandoned.
  void Forget(BucketId bucket);

  // A write ordered locally at `rseq` (ApplyEachStamped).
  void Ordered(BucketId bucket, uint64_t rseq);
  // The local WAL is durable through `rseq`.
  void LocalSynced(BucketId bucket, uint64_t rseq);
  // `backup` holds the bucket durably through `rseq`. Ignored for a backup outside the
  // configuration; never moves a backup's position back.
  void Acked(BucketId bucket, NodeId backup, uint64_t rseq);
  // Every write ordered so far and not committed is abandoned.
  void Abandon(BucketId bucket);
  // A silent backup the coordinator kept at the floor (it would not remove it below
  // min_in_sync), or nullopt once it answers again: the lease no longer waits for its renewals
  // and runs from the coordinator's instead (LeaseFrom). Ignored for a backup outside the
  // configuration; forgotten when the backup leaves it.
  void Excuse(BucketId bucket, std::optional<NodeId> backup);
  // READ LEASE (docs/design/replication.md §5): `backup` answered a message sent at `sent_at`
  // (this node's clock) without refusing the bucket, so it accepted no other primary for it
  // before that message. Ignored for a backup outside the configuration; never moves back.
  void Renewed(BucketId bucket, NodeId backup, int64_t sent_at);
  // The earliest of the backups' latest renewals: the primary's read lease runs from there.
  // nullopt while a backup of the configuration has renewed nothing, or for an untracked
  // bucket; INT64_MAX for a bucket with no backup (K > 1 with one replica left). An excused
  // backup counts as `coordinator` instead: the send time of this node's latest heartbeat the
  // coordinator answered (nullopt: none yet), since a failover waits until the primary has been
  // silent to the coordinator for as long as a lease lasts (ReplicaManager::Failover), and the
  // excused backup, silent as well, cannot be promoted before it answers a seal.
  [[nodiscard]] std::optional<int64_t> LeaseFrom(
      BucketId bucket, std::optional<int64_t> coordinator = std::nullopt) const;

  [[nodiscard]] WriteState StateOf(BucketId bucket, uint64_t rseq) const;
  // Sets `wakeup` once the write at `rseq` of `bucket` is no longer pending (at once when it is
  // not), until Unwatch.
  void Watch(BucketId bucket, uint64_t rseq, std::shared_ptr<transport::Wakeup> wakeup);
  void Unwatch(BucketId bucket, const transport::Wakeup* wakeup);
  // The highest rseq ordered; 0 for an untracked bucket.
  [[nodiscard]] uint64_t OrderedRseq(BucketId bucket) const;
  // min(local durable, each backup's); 0 for an untracked bucket.
  [[nodiscard]] uint64_t Watermark(BucketId bucket) const;
  // The backups whose acknowledged rseq is below `rseq` (what a write at `rseq` waits for).
  [[nodiscard]] std::vector<NodeId> Lagging(BucketId bucket, uint64_t rseq) const;
  [[nodiscard]] bool Tracks(BucketId bucket) const;
  [[nodiscard]] std::string DebugString(BucketId bucket) const;

 private:
  struct Bucket {
    uint64_t ordered = 0;
    uint64_t synced = 0;
    std::map<NodeId, uint64_t> acked;   // by backup of the current configuration
    std::map<NodeId, int64_t> renewed;  // by backup of the current configuration
    uint64_t abandoned_through = 0;     // writes in (committed, this] are abandoned
    uint64_t committed = 0;             // the highest watermark seen (it never moves back)
    std::optional<NodeId> excused;      // a silent backup kept at the floor
  };
  struct Watcher {
    uint64_t rseq = 0;
    std::shared_ptr<transport::Wakeup> wakeup;
  };
  static uint64_t WatermarkOf(const Bucket& b);
  static void Advance(Bucket& b);
  [[nodiscard]] WriteState StateOfLocked(BucketId bucket, uint64_t rseq) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sets the wakeups of the bucket's watchers whose write is decided.
  void WakeDecidedLocked(BucketId bucket) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  absl::flat_hash_map<BucketId, Bucket> buckets_ ABSL_GUARDED_BY(mu_);
  // The committed rseq of buckets forgotten since: a waiter of a write at or below it learns it
  // committed; any later write of the bucket is abandoned.
  absl::flat_hash_map<BucketId, uint64_t> forgotten_committed_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<BucketId, std::vector<Watcher>> watchers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal::node
