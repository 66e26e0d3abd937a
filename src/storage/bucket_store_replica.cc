// BucketStore: replication positions, stamped writes at a primary, replicated writes at a backup
// (bucket_store.h, replica_position.h, docs/design/replication.md §3).

#include <fmt/format.h>
#include <rocksdb/write_batch.h>
#include <xxhash.h>

#include <algorithm>
#include <map>

#include "src/storage/apply_if_newer.h"
#include "src/storage/bucket_store.h"
#include "src/storage/codec.h"
#include "src/storage/errors.h"

namespace shoal::storage {
namespace {

// The sequencers of `buckets` (sorted, distinct), locked in that order.
class SequencerLocks {
 public:
  void Add(std::shared_ptr<void> owner, std::mutex* mu) {
    owners_.push_back(std::move(owner));
    locks_.emplace_back(*mu);
  }

 private:
  std::vector<std::shared_ptr<void>> owners_;  // keep the tracks alive while locked
  std::vector<std::unique_lock<std::mutex>> locks_;
};

}  // namespace

std::shared_ptr<BucketStore::ReplicaTrack> BucketStore::Track(BucketId bucket) const {
  std::lock_guard<std::mutex> lock(replica_mu_);
  std::shared_ptr<ReplicaTrack>& track = tracks_[bucket];
  if (track == nullptr) track = std::make_shared<ReplicaTrack>();
  return track;
}

Status BucketStore::LoadReplicaRecord(std::string_view key, std::string_view value) {
  if (key.size() != 5) return StorageError(ErrorReason::kCorruption, "bad replica record key");
  const BucketId bucket(DecodeBigEndian32(key.data() + 1));
  std::shared_ptr<ReplicaTrack> track = Track(bucket);
  std::lock_guard<std::mutex> lock(track->sequencer);
  if (key[0] == kReplicaPositionPrefix) {
    SHOAL_ASSIGN_OR_RETURN(track->state.position, DecodeReplicaPosition(value));
  } else {
    SHOAL_ASSIGN_OR_RETURN(track->state.history, DecodeTermHistory(value));
  }
  return OkStatus();
}

void BucketStore::PutReplicaState(BucketId bucket, const ReplicaState& state,
                                  rocksdb::WriteBatch* batch) {
  batch->Put(meta_, ReplicaPositionKey(bucket), EncodeReplicaPosition(state.position));
  batch->Put(meta_, TermHistoryKey(bucket), EncodeTermHistory(state.history));
}

ReplicaState BucketStore::GetReplicaState(BucketId bucket) const {
  std::shared_ptr<ReplicaTrack> track = Track(bucket);
  std::lock_guard<std::mutex> lock(track->sequencer);
  return track->state;
}

Status BucketStore::BeginTerm(BucketId bucket, Term term) {
  std::shared_ptr<ReplicaTrack> track = Track(bucket);
  std::lock_guard<std::mutex> lock(track->sequencer);
  if (term <= track->state.current_term()) {
    return FailedPreconditionError(fmt::format("bucket {}: term {} is not above the current {}",
                                               bucket.DebugString(), term.DebugString(),
                                               track->state.current_term().DebugString()));
  }
  ReplicaState next = track->state;
  next.history.push_back({.term = term, .first_rseq = next.position.rseq + 1});
  rocksdb::WriteBatch batch;
  batch.Put(meta_, TermHistoryKey(bucket), EncodeTermHistory(next.history));
  SHOAL_RETURN_IF_ERROR(WriteBatchToEngine(&batch));
  SHOAL_RETURN_IF_ERROR(SyncWal());
  track->state = std::move(next);
  return OkStatus();
}

Status BucketStore::SetReplicaState(BucketId bucket, const ReplicaState& state) {
  SHOAL_RETURN_IF_ERROR(state.CheckInvariants());
  std::shared_ptr<ReplicaTrack> track = Track(bucket);
  std::lock_guard<std::mutex> lock(track->sequencer);
  rocksdb::WriteBatch batch;
  PutReplicaState(bucket, state, &batch);
  // Whatever the index said was about the data before: from here on it covers the writes after
  // the stored position, which the stream applies later than this write.
  track->index.Clear();
  SHOAL_RETURN_IF_ERROR(WriteBatchToEngine(&batch));
  SHOAL_RETURN_IF_ERROR(SyncWal());
  track->state = state;
  track->index.Record(state.position.rseq, LatestSequence());
  return OkStatus();
}

Status BucketStore::RecordSeals(std::span<const std::pair<BucketId, Term>> seals) {
  std::lock_guard<std::mutex> lock(seals_mu_);
  rocksdb::WriteBatch batch;
  std::map<BucketId, Term> raised;
  for (const auto& [bucket, term] : seals) {
    auto known = seals_.find(bucket);
    if (known != seals_.end() && known->second >= term) continue;
    Term& next = raised[bucket];
    next = std::max(next, term);
  }
  if (raised.empty()) return OkStatus();
  for (const auto& [bucket, term] : raised) {
    std::string value;
    AppendBigEndian64(term.value(), &value);
    batch.Put(meta_, SealKey(bucket), value);
  }
  SHOAL_RETURN_IF_ERROR(WriteBatchToEngine(&batch));
  SHOAL_RETURN_IF_ERROR(SyncWal());
  for (const auto& [bucket, term] : raised) seals_[bucket] = term;
  return OkStatus();
}

std::map<BucketId, Term> BucketStore::Seals() const {
  std::lock_guard<std::mutex> lock(seals_mu_);
  return seals_;
}

Status BucketStore::ForgetSeals(std::span<const BucketId> buckets) {
  std::lock_guard<std::mutex> lock(seals_mu_);
  rocksdb::WriteBatch batch;
  for (BucketId bucket : buckets) {
    if (seals_.erase(bucket) > 0) batch.Delete(meta_, SealKey(bucket));
  }
  if (batch.Count() == 0) return OkStatus();
  return WriteBatchToEngine(&batch);
}

std::optional<uint64_t> BucketStore::RetainedLogStart(BucketId bucket, uint64_t rseq) const {
  std::shared_ptr<ReplicaTrack> track = Track(bucket);
  std::lock_guard<std::mutex> lock(track->sequencer);
  return track->index.SequenceAfter(rseq);
}

void BucketStore::ForgetRetainedLog(BucketId bucket) {
  std::shared_ptr<ReplicaTrack> track;
  {
    std::lock_guard<std::mutex> lock(replica_mu_);
    auto it = tracks_.find(bucket);
    if (it == tracks_.end()) return;
    track = it->second;
  }
  std::lock_guard<std::mutex> lock(track->sequencer);
  track->index.Clear();
}

StatusOr<BucketStore::StampedWrite> BucketStore::ApplyEachStamped(BucketId bucket,
                                                                  std::span<const Mutation> ms,
                                                                  WalSync wal_sync) {
  std::shared_ptr<ReplicaTrack> track = Track(bucket);
  std::lock_guard<std::mutex> sequencer(track->sequencer);
  const Term term = track->state.current_term();
  if (term == Term(0)) {
    return FailedPreconditionError(
        fmt::format("bucket {} began no term: it orders no write", bucket.DebugString()));
  }
  // Every write of rseq <= position has returned; this one and later ones come after.
  track->index.Record(track->state.position.rseq, LatestSequence());
  StampedWrite out;
  ReplicatedEntry entry{.bucket = bucket,
                        .position = {.term = term, .rseq = track->state.position.rseq + 1},
                        .documents = {}};
  bool written = false;
  BatchHook hook;
  hook.prepare = [&](std::span<const size_t> writes,
                     const std::vector<StatusOr<MutationResult>>& results,
                     rocksdb::WriteBatch* batch) -> Status {
    for (size_t i : writes) {
      const Mutation& m = ms[i];
      const bool tombstone = m.WritesTombstone();
      entry.documents.push_back(Document{.collection = m.collection,
                                         .primary_key = std::string(m.primary_key),
                                         .body = tombstone ? std::string() : std::string(m.body),
                                         .version = results[i]->version,
                                         .tombstone = tombstone});
    }
    batch->Put(meta_, ReplicaPositionKey(bucket), EncodeReplicaPosition(entry.position));
    return OkStatus();
  };
  hook.written = [&] {
    written = true;
    track->state.position = entry.position;
  };
  SHOAL_ASSIGN_OR_RETURN(out.results, ApplyMutations(ms, wal_sync, BatchFailure::kPerSlot, &hook));
  // Nothing written (every slot skipped or failed, or the batch failed): nothing was ordered.
  if (written) out.entries.push_back(std::move(entry));
  return out;
}

StatusOr<std::vector<StatusOr<ReplicaPosition>>> BucketStore::ApplyReplicated(
    std::span<const ReplicatedEntry> entries, WalSync wal_sync) {
  std::map<BucketId, std::shared_ptr<ReplicaTrack>> tracks;
  for (const ReplicatedEntry& e : entries) tracks.emplace(e.bucket, nullptr);
  SequencerLocks locks;
  std::map<BucketId, ReplicaState> working;
  for (auto& [bucket, track] : tracks) {
    track = Track(bucket);
    locks.Add(track, &track->sequencer);
    working[bucket] = track->state;
  }
  std::vector<StatusOr<ReplicaPosition>> results(entries.size(), InternalError("undecided"));
  std::vector<Mutation> mutations;
  std::map<BucketId, bool> new_term;
  for (size_t i = 0; i < entries.size(); ++i) {
    const ReplicatedEntry& e = entries[i];
    ReplicaState& state = working[e.bucket];
    const ReplicaPosition& at = e.position;
    if (at.rseq == 0 || at.term == Term(0)) {
      results[i] = InvalidArgumentError(fmt::format("bucket {}: entry at {} is not a write",
                                                    e.bucket.DebugString(), at.DebugString()));
      continue;
    }
    if (at.rseq <= state.position.rseq) {
      if (state.TermOf(at.rseq) != at.term) {
        results[i] = AbortedError(
            fmt::format("bucket {}: write {} has term {} here, not {}: the copy diverged",
                        e.bucket.DebugString(), at.rseq, state.TermOf(at.rseq).DebugString(),
                        at.term.DebugString()));
      } else {
        results[i] = state.position;  // a resend of a write this copy holds
      }
      continue;
    }
    if (at.rseq > state.position.rseq + 1) {
      results[i] = OutOfRangeError(fmt::format("bucket {}: gap: the copy is at {}, got {}",
                                               e.bucket.DebugString(), state.position.DebugString(),
                                               at.DebugString()));
      continue;
    }
    if (at.term < state.current_term()) {
      results[i] = FailedPreconditionError(fmt::format(
          "bucket {}: entry {} is of a term older than the copy's {}", e.bucket.DebugString(),
          at.DebugString(), state.current_term().DebugString()));
      continue;
    }
    if (at.term > state.current_term()) {
      state.history.push_back({.term = at.term, .first_rseq = at.rseq});
      new_term[e.bucket] = true;
    }
    if (at.rseq == tracks.at(e.bucket)->state.position.rseq + 1) {
      // The bucket's first entry of this call: the writes it holds returned before.
      tracks.at(e.bucket)->index.Record(at.rseq - 1, LatestSequence());
    }
    state.position = at;
    results[i] = at;
    for (const Document& d : e.documents) mutations.push_back(ApplyIfNewerOf(d));
  }
  // Records of every bucket whose position moved, in the documents' WriteBatch.
  std::map<BucketId, ReplicaState> changed;
  for (auto& [bucket, state] : working) {
    if (state != tracks.at(bucket)->state) changed.emplace(bucket, state);
  }
  if (changed.empty()) return results;
  auto put_records = [&](rocksdb::WriteBatch* batch) {
    for (const auto& [bucket, state] : changed) {
      batch->Put(meta_, ReplicaPositionKey(bucket), EncodeReplicaPosition(state.position));
      if (new_term.contains(bucket)) {
        batch->Put(meta_, TermHistoryKey(bucket), EncodeTermHistory(state.history));
      }
    }
  };
  bool written = false;
  BatchHook hook{.prepare =
                     [&](std::span<const size_t>, const std::vector<StatusOr<MutationResult>>&,
                         rocksdb::WriteBatch* batch) {
                       put_records(batch);
                       return OkStatus();
                     },
                 .written = [&] { written = true; }};
  SHOAL_RETURN_IF_ERROR(ApplyMutations(mutations, wal_sync, BatchFailure::kWhole, &hook).status());
  if (!written) {
    // Every document was already as new (or the entries were empty): the records still go.
    rocksdb::WriteBatch batch;
    put_records(&batch);
    SHOAL_RETURN_IF_ERROR(WriteBatchToEngine(&batch, wal_sync));
  }
  for (auto& [bucket, state] : changed) tracks.at(bucket)->state = std::move(state);
  return results;
}

StatusOr<uint64_t> BucketStore::DigestRange(const PointRange& range,
                                            const Snapshot* snapshot) const {
  XXH3_state_t* state = XXH3_createState();
  if (state == nullptr) return ResourceExhaustedError("digest: out of memory");
  XXH3_64bits_reset(state);
  Status status = OkStatus();
  if (!range.empty()) {
    const std::string begin = range.BeginKey();
    const std::string end = range.EndKey();
    rocksdb::Slice upper(end);
    rocksdb::ReadOptions ro = MakeReadOptions(snapshot);
    ro.iterate_upper_bound = &upper;
    ro.fill_cache = false;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, documents_));
    for (it->Seek(begin); it->Valid(); it->Next()) {
      // Length-prefixed, so that no two different entries hash the same bytes.
      const uint64_t sizes[2] = {it->key().size(), it->value().size()};
      XXH3_64bits_update(state, sizes, sizeof(sizes));
      XXH3_64bits_update(state, it->key().data(), it->key().size());
      XXH3_64bits_update(state, it->value().data(), it->value().size());
    }
    status = FromRocks(it->status(), "digest scan");
  }
  const uint64_t digest = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  SHOAL_RETURN_IF_ERROR(status);
  return digest;
}

}  // namespace shoal::storage
