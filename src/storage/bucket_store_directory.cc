// BucketStore: the local directory, persisted in the meta column family (bucket_store.h).

#include <fmt/format.h>
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/experimental.h>
#include <rocksdb/write_batch.h>

#include <memory>

#include "src/storage/bucket_store.h"
#include "src/storage/errors.h"

namespace shoal::storage {

Status BucketStore::AddBucket(const BucketEntry& entry) {
  std::unique_lock<std::shared_mutex> lock(directory_mu_);
  LocalDirectory next = directory_;
  SHOAL_RETURN_IF_ERROR(next.Add(entry));
  rocksdb::WriteBatch batch;
  batch.Put(meta_, BucketMetaKey(entry.id), EncodeBucketEntry(entry));
  SHOAL_RETURN_IF_ERROR(WriteBatchToEngine(&batch));
  directory_ = std::move(next);
  return OkStatus();
}

Status BucketStore::SetBucketState(BucketId id, BucketState state) {
  std::unique_lock<std::shared_mutex> lock(directory_mu_);
  LocalDirectory next = directory_;
  SHOAL_RETURN_IF_ERROR(next.SetState(id, state));
  SHOAL_ASSIGN_OR_RETURN(BucketEntry entry, next.Get(id));
  rocksdb::WriteBatch batch;
  batch.Put(meta_, BucketMetaKey(id), EncodeBucketEntry(entry));
  SHOAL_RETURN_IF_ERROR(WriteBatchToEngine(&batch));
  directory_ = std::move(next);
  return OkStatus();
}

StatusOr<std::pair<BucketEntry, BucketEntry>> BucketStore::SplitBucket(BucketId id, uint64_t at,
                                                                       BucketId right_id) {
  // Both halves go on from the parent's replication position (replication.md §7).
  std::shared_ptr<ReplicaTrack> parent = Track(id);
  std::shared_ptr<ReplicaTrack> right = Track(right_id);
  std::scoped_lock sequencers(parent->sequencer, right->sequencer);
  std::unique_lock<std::shared_mutex> lock(directory_mu_);
  LocalDirectory next = directory_;
  SHOAL_ASSIGN_OR_RETURN(auto halves, next.Split(id, at, right_id));
  rocksdb::WriteBatch batch;
  batch.Put(meta_, BucketMetaKey(halves.first.id), EncodeBucketEntry(halves.first));
  batch.Put(meta_, BucketMetaKey(halves.second.id), EncodeBucketEntry(halves.second));
  const bool replicated = parent->state != ReplicaState();
  if (replicated) PutReplicaState(right_id, parent->state, &batch);
  SHOAL_RETURN_IF_ERROR(WriteBatchToEngine(&batch));
  directory_ = std::move(next);
  if (replicated) right->state = parent->state;
  return halves;
}

Status BucketStore::RemoveBucket(BucketId id) {
  PointRange range;
  {
    std::shared_ptr<ReplicaTrack> track = Track(id);
    std::lock_guard<std::mutex> sequencer(track->sequencer);
    std::unique_lock<std::shared_mutex> lock(directory_mu_);
    SHOAL_ASSIGN_OR_RETURN(BucketEntry entry, directory_.Get(id));
    if (entry.state == BucketState::kReadWrite) {
      return StorageError(ErrorReason::kBucketState,
                          fmt::format("{} is served; set it Leaving first", entry.DebugString()));
    }
    LocalDirectory next = directory_;
    SHOAL_RETURN_IF_ERROR(next.Remove(id));
    range = entry.range;
    const std::string begin = range.BeginKey();
    const std::string end = range.EndKey();
    rocksdb::WriteBatch batch;
    batch.DeleteRange(documents_, begin, end);
    batch.Delete(meta_, BucketMetaKey(id));
    batch.Delete(meta_, ReplicaPositionKey(id));
    batch.Delete(meta_, TermHistoryKey(id));
    SHOAL_RETURN_IF_ERROR(WriteBatchToEngine(&batch));
    directory_ = std::move(next);
    track->state = ReplicaState();
  }
  return ReclaimRange(range);
}

StatusOr<BucketEntry> BucketStore::GetBucket(BucketId id) const {
  std::shared_lock<std::shared_mutex> lock(directory_mu_);
  return directory_.Get(id);
}

std::vector<BucketEntry> BucketStore::ListBuckets() const {
  std::shared_lock<std::shared_mutex> lock(directory_mu_);
  return directory_.List();
}

Status BucketStore::CheckNotServed(const PointRange& range, bool allow_leaving) const {
  for (const BucketEntry& entry : directory_.Overlapping(range)) {
    const bool served = entry.state == BucketState::kReadWrite ||
                        (entry.state == BucketState::kLeaving && !allow_leaving);
    if (served) {
      return StorageError(
          ErrorReason::kBucketState,
          fmt::format("{} overlaps served {}", range.DebugString(), entry.DebugString()));
    }
  }
  return OkStatus();
}

Status BucketStore::DropRange(const PointRange& range) {
  if (range.empty()) return OkStatus();
  const std::string begin = range.BeginKey();
  const std::string end = range.EndKey();
  {
    std::unique_lock<std::shared_mutex> lock(directory_mu_);
    SHOAL_RETURN_IF_ERROR(CheckNotServed(range, /*allow_leaving=*/false));
    // Nothing stored: write nothing. A range tombstone in the memtable would make the ingest
    // that usually follows (a destination re-staging a range) flush the memtable and stall
    // every writer meanwhile.
    {
      rocksdb::Slice upper(end);
      rocksdb::ReadOptions ro;
      ro.iterate_upper_bound = &upper;
      std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, documents_));
      it->Seek(begin);
      SHOAL_RETURN_IF_ERROR(FromRocks(it->status(), "check empty range"));
      if (!it->Valid()) return OkStatus();
    }
    // Logged first: the range is logically empty from here on, also after a crash.
    rocksdb::WriteBatch batch;
    batch.DeleteRange(documents_, begin, end);
    SHOAL_RETURN_IF_ERROR(WriteBatchToEngine(&batch));
  }
  return ReclaimRange(range);
}

Status BucketStore::ReclaimRange(const PointRange& range) {
  // The range is already deleted by a logged DeleteRange. Drop the files that lie wholly inside;
  // the files that straddle the edges are rewritten by ordinary compaction, which drops the
  // covered keys. Forcing it (SuggestCompactRange) rewrote whole neighbouring files after every
  // move and took CPU from the clients while buckets moved (docs/results/rebalance.md).
  const std::string begin = range.BeginKey();
  const std::string end = range.EndKey();
  const rocksdb::Slice b(begin), e(end);
  rocksdb::RangePtr ranges(&b, &e);
  return FromRocks(rocksdb::DeleteFilesInRanges(db_, documents_, &ranges, 1, /*include_end=*/false),
                   "delete files in range");
}

}  // namespace shoal::storage
