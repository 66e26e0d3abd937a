// BucketStore: statistics, export to SST files, ingest, catch-up reads (bucket_store.h).

#include <fmt/format.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/transaction_log.h>
#include <rocksdb/write_batch.h>

#include <filesystem>

#include "src/storage/bucket_store.h"
#include "src/storage/codec.h"
#include "src/storage/errors.h"

namespace shoal::storage {
namespace {

// Totals over the engine's tables that overlap `range` (from their properties, no data read).
struct TableTotals {
  uint64_t entries = 0;
  uint64_t data_bytes = 0;  // on disk, after compression
  uint64_t raw_bytes = 0;   // keys and values before it
};

StatusOr<TableTotals> SumTablesInRange(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* cf,
                                       const rocksdb::Range& range) {
  rocksdb::TablePropertiesCollection tables;
  SHOAL_RETURN_IF_ERROR(
      FromRocks(db.GetPropertiesOfTablesInRange(cf, &range, 1, &tables), "table properties"));
  TableTotals totals;
  for (const auto& [name, props] : tables) {
    totals.entries += props->num_entries;
    totals.data_bytes += props->data_size;
    totals.raw_bytes += props->raw_key_size + props->raw_value_size;
  }
  return totals;
}

std::string_view View(const rocksdb::Slice& s) { return std::string_view(s.data(), s.size()); }

bool KeyInRange(std::string_view key, const PointRange& range) {
  return key.size() >= 8 && range.Contains(DecodeBigEndian64(key.data()));
}

// Collects the document writes of a write batch that fall in a range. Sequence numbers: the
// batch's first operation has the batch's sequence, each later operation the next one.
class ChangeCollector : public rocksdb::WriteBatch::Handler {
 public:
  ChangeCollector(uint32_t documents_cf, const PointRange& range, uint64_t after,
                  uint64_t first_sequence, std::vector<Document>* out)
      : documents_cf_(documents_cf),
        range_(range),
        after_(after),
        sequence_(first_sequence),
        out_(out) {}

  rocksdb::Status PutCF(uint32_t cf, const rocksdb::Slice& key,
                        const rocksdb::Slice& value) override {
    if (Relevant(cf, View(key))) {
      StatusOr<Document> document = DocumentFromStored(View(key), View(value));
      if (!document.ok()) {
        error_ = document.status();
        return rocksdb::Status::Corruption("undecodable document in the WAL");
      }
      out_->push_back(*std::move(document));
    }
    return rocksdb::Status::OK();
  }
  rocksdb::Status DeleteCF(uint32_t cf, const rocksdb::Slice& key) override {
    return Refuse(Relevant(cf, View(key)), "a point delete");
  }
  rocksdb::Status SingleDeleteCF(uint32_t cf, const rocksdb::Slice& key) override {
    return Refuse(Relevant(cf, View(key)), "a single delete");
  }
  rocksdb::Status DeleteRangeCF(uint32_t cf, const rocksdb::Slice& begin,
                                const rocksdb::Slice& end) override {
    const uint64_t sequence = sequence_++;
    bool overlaps = false;
    if (cf == documents_cf_ && sequence > after_) {
      overlaps = View(begin) < range_.EndKey() && View(end) > range_.BeginKey();
    }
    return Refuse(overlaps, "a range delete");
  }
  rocksdb::Status MergeCF(uint32_t cf, const rocksdb::Slice& key, const rocksdb::Slice&) override {
    return Refuse(Relevant(cf, View(key)), "a merge");
  }
  rocksdb::Status PutBlobIndexCF(uint32_t cf, const rocksdb::Slice& key,
                                 const rocksdb::Slice&) override {
    return Refuse(Relevant(cf, View(key)), "a blob index");
  }

  [[nodiscard]] const Status& error() const { return error_; }

 private:
  bool Relevant(uint32_t cf, std::string_view key) {
    const uint64_t sequence = sequence_++;
    return cf == documents_cf_ && sequence > after_ && KeyInRange(key, range_);
  }
  rocksdb::Status Refuse(bool relevant, std::string_view what) {
    if (!relevant) return rocksdb::Status::OK();
    error_ = StorageError(
        ErrorReason::kBucketState,
        fmt::format("{} in {} during catch-up: the range was dropped", what, range_.DebugString()));
    return rocksdb::Status::Aborted("catch-up refused");
  }

  const uint32_t documents_cf_;
  const PointRange range_;
  const uint64_t after_;
  uint64_t sequence_;
  std::vector<Document>* out_;
  Status error_;
};

}  // namespace

StatusOr<BucketStats> BucketStore::ComputeStats(const PointRange& range,
                                                const Snapshot* snapshot) const {
  BucketStats stats{.exact = true};
  if (range.empty()) return stats;
  const std::string begin = range.BeginKey();
  const std::string end = range.EndKey();
  rocksdb::Slice upper(end);
  rocksdb::ReadOptions ro = MakeReadOptions(snapshot);
  ro.iterate_upper_bound = &upper;
  ro.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, documents_));
  for (it->Seek(begin); it->Valid(); it->Next()) {
    SHOAL_ASSIGN_OR_RETURN(StoredValueView v, DecodeStoredValue(View(it->value())));
    const uint64_t bytes = it->key().size() + it->value().size();
    if (v.tombstone) {
      ++stats.tombstones;
      stats.tombstone_bytes += bytes;
    } else {
      ++stats.documents;
      stats.live_bytes += bytes;
    }
    stats.max_version = std::max(stats.max_version, v.version);
  }
  SHOAL_RETURN_IF_ERROR(FromRocks(it->status(), "stats scan"));
  return stats;
}

StatusOr<BucketStats> BucketStore::EstimateStats(const PointRange& range) const {
  BucketStats stats{.exact = false};
  if (range.empty()) return stats;
  const std::string begin = range.BeginKey();
  const std::string end = range.EndKey();
  rocksdb::Range r(begin, end);
  uint64_t memtable_count = 0, memtable_bytes = 0, file_bytes = 0;
  db_->GetApproximateMemTableStats(documents_, r, &memtable_count, &memtable_bytes);
  rocksdb::SizeApproximationOptions size_options;
  size_options.include_memtables = false;
  size_options.include_files = true;
  SHOAL_RETURN_IF_ERROR(FromRocks(
      db_->GetApproximateSizes(size_options, documents_, &r, 1, &file_bytes), "approximate size"));
  // Files: scale the on-disk bytes in range by the entries per on-disk byte and the raw bytes per
  // entry of the tables that overlap the range.
  SHOAL_ASSIGN_OR_RETURN(const TableTotals tables, SumTablesInRange(*db_, documents_, r));
  const uint64_t entries = tables.entries;
  const uint64_t data_bytes = tables.data_bytes;
  const uint64_t raw_bytes = tables.raw_bytes;
  uint64_t file_entries = 0;
  if (data_bytes > 0) {
    file_entries = static_cast<uint64_t>(static_cast<double>(file_bytes) * entries / data_bytes);
  }
  stats.documents = memtable_count + file_entries;
  stats.live_bytes = memtable_bytes;
  if (entries > 0) stats.live_bytes += file_entries * raw_bytes / entries;
  return stats;
}

StatusOr<bool> BucketStore::RangeCompresses(const std::string& begin,
                                            const std::string& end) const {
  if (engine_.documents.compression == rocksdb::kNoCompression) return false;
  SHOAL_ASSIGN_OR_RETURN(const TableTotals tables,
                         SumTablesInRange(*db_, documents_, rocksdb::Range(begin, end)));
  // The engine keeps a block raw unless compression saves at least an eighth of it; tables that
  // kept (nearly) every block raw say the range's data does not compress.
  return tables.raw_bytes == 0 || tables.data_bytes < tables.raw_bytes - tables.raw_bytes / 8;
}

StatusOr<ExportedRange> BucketStore::ExportRange(const PointRange& range,
                                                 const ExportOptions& options) const {
  if (options.directory.empty()) {
    return StorageError(ErrorReason::kInvalidArgument, "export needs a directory");
  }
  std::error_code ec;
  std::filesystem::create_directories(options.directory, ec);
  if (ec) {
    return StorageError(ErrorReason::kIo,
                        fmt::format("create {}: {}", options.directory, ec.message()));
  }
  std::unique_ptr<Snapshot> own;
  const Snapshot* snapshot = options.snapshot;
  if (snapshot == nullptr) {
    own = GetSnapshot();
    snapshot = own.get();
  }
  ExportedRange exported{.range = range, .sequence = snapshot->sequence()};
  if (range.empty()) return exported;

  const std::string begin = range.BeginKey();
  const std::string end = range.EndKey();
  rocksdb::Slice upper(end);
  rocksdb::ReadOptions ro = MakeReadOptions(snapshot);
  ro.iterate_upper_bound = &upper;
  ro.fill_cache = false;
  ro.readahead_size = 2u << 20;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, documents_));
  rocksdb::Options writer_options(engine_.db, engine_.documents);
  SHOAL_ASSIGN_OR_RETURN(const bool compressible, RangeCompresses(begin, end));
  if (!compressible) writer_options.compression = rocksdb::kNoCompression;
  std::unique_ptr<rocksdb::SstFileWriter> writer;
  auto finish = [&]() -> Status {
    if (writer == nullptr) return OkStatus();
    Status s = FromRocks(writer->Finish(), "finish export file");
    writer.reset();
    return s;
  };
  uint64_t file_bytes = 0;  // key + value bytes in the current file
  // The export's files take disk space beside the store's: admitted in steps, so that an export
  // stops (and the move aborts) before the store's own writes would find the disk full.
  static constexpr uint64_t kAdmitStep = 1u << 20;
  uint64_t unadmitted = 0;
  SHOAL_RETURN_IF_ERROR(space_->Admit(0));
  for (it->Seek(begin); it->Valid(); it->Next()) {
    if (unadmitted >= kAdmitStep) {
      SHOAL_RETURN_IF_ERROR(space_->Admit(unadmitted));
      unadmitted = 0;
    }
    if (writer != nullptr && file_bytes >= options.target_file_bytes) {
      SHOAL_RETURN_IF_ERROR(finish());
      file_bytes = 0;
    }
    if (writer == nullptr) {
      const std::string path = (std::filesystem::absolute(options.directory) /
                                fmt::format("export-{}.sst", exported.files.size()))
                                   .string();
      // The written pages stay in the OS page cache (RocksDB drops them by default): the
      // destination reads this very file next (a hard link to it, or chunks of it) and then
      // serves reads from it; dropped pages made its clients read the moved data from disk.
      writer = std::make_unique<rocksdb::SstFileWriter>(rocksdb::EnvOptions(), writer_options,
                                                        documents_,
                                                        /*invalidate_page_cache=*/false);
      SHOAL_RETURN_IF_ERROR(FromRocks(writer->Open(path), "open export file"));
      exported.files.push_back(path);
    }
    SHOAL_ASSIGN_OR_RETURN(StoredValueView v, DecodeStoredValue(View(it->value())));
    exported.max_version = std::max(exported.max_version, v.version);
    const uint64_t entry_bytes = it->key().size() + it->value().size();
    ++exported.entries;
    exported.bytes += entry_bytes;
    if (!v.tombstone) {  // as ComputeStats counts
      ++exported.live_documents;
      exported.live_bytes += entry_bytes;
    }
    file_bytes += entry_bytes;
    unadmitted += entry_bytes;
    SHOAL_RETURN_IF_ERROR(FromRocks(writer->Put(it->key(), it->value()), "write export file"));
  }
  SHOAL_RETURN_IF_ERROR(FromRocks(it->status(), "export scan"));
  SHOAL_RETURN_IF_ERROR(finish());
  return exported;
}

Status BucketStore::IngestRange(const ExportedRange& exported, const IngestOptions& options) {
  const PointRange& range = exported.range;
  if (exported.files.empty()) return OkStatus();
  // Every file must lie inside the range (a foreign or mislabelled file changes nothing).
  for (const std::string& file : exported.files) {
    rocksdb::SstFileReader reader(rocksdb::Options(engine_.db, engine_.documents));
    SHOAL_RETURN_IF_ERROR(FromRocks(reader.Open(file), fmt::format("open {}", file)));
    std::unique_ptr<rocksdb::Iterator> it(reader.NewIterator(rocksdb::ReadOptions()));
    it->SeekToFirst();
    const bool first_in = it->Valid() && KeyInRange(View(it->key()), range);
    it->SeekToLast();
    const bool last_in = it->Valid() && KeyInRange(View(it->key()), range);
    SHOAL_RETURN_IF_ERROR(FromRocks(it->status(), fmt::format("read {}", file)));
    if (!first_in || !last_in) {
      return StorageError(ErrorReason::kInvalidArgument,
                          fmt::format("{} holds keys outside {}", file, range.DebugString()));
    }
  }
  // Shared: the directory cannot change under the ingest, other writes go on. The caller does
  // not apply changes to the range before the ingest returned (ingest first, then catch-up).
  std::shared_lock<std::shared_mutex> lock(directory_mu_);
  // The range must be staged: covered by kAdding buckets, and empty.
  uint64_t covered_to = range.begin();
  bool covered_to_max = false;
  for (const BucketEntry& entry : directory_.Overlapping(range)) {
    if (!options.require_adding_buckets) break;
    if (entry.state != BucketState::kAdding) {
      return StorageError(ErrorReason::kBucketState,
                          fmt::format("ingest into {} needs Adding buckets, found {}",
                                      range.DebugString(), entry.DebugString()));
    }
    if (entry.range.begin() > covered_to) break;
    covered_to_max = entry.range.end_is_max();
    covered_to = entry.range.end();
  }
  const bool covered = !options.require_adding_buckets || covered_to_max ||
                       (!range.end_is_max() && covered_to >= range.end());
  if (!covered) {
    return StorageError(ErrorReason::kBucketState,
                        fmt::format("{} is not covered by Adding buckets", range.DebugString()));
  }
  {
    const std::string begin = range.BeginKey();
    const std::string end = range.EndKey();
    rocksdb::Slice upper(end);
    rocksdb::ReadOptions ro;
    ro.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, documents_));
    it->Seek(begin);
    if (it->Valid()) {
      return StorageError(ErrorReason::kBucketState,
                          fmt::format("{} already holds data; drop it first", range.DebugString()));
    }
    SHOAL_RETURN_IF_ERROR(FromRocks(it->status(), "check empty range"));
  }
  // The files are on this disk already (linked or fetched), but the catch-up and the clients'
  // writes follow: a destination at its reserve takes no bucket.
  SHOAL_RETURN_IF_ERROR(space_->Admit(0));
  SHOAL_RETURN_IF_ERROR(clock_->Observe(exported.max_version));
  rocksdb::IngestExternalFileOptions io;
  io.move_files = options.move_files;
  io.snapshot_consistency = true;
  io.allow_global_seqno = true;
  io.allow_blocking_flush = true;
  // The global sequence number goes to the MANIFEST only, never into the file: an ingested file
  // may be a hard link to the source's export (move_files), which must stay byte for byte as the
  // source registered it for a retried transfer.
  io.write_global_seqno = false;
  // A stopped engine resumes first. An ingest's own failure does not count as a stop (a missing
  // file fails it alone); a MANIFEST write the disk refused stops the engine, and the next write
  // notes that.
  SHOAL_RETURN_IF_ERROR(ResumeEngineIfStopped());
  SHOAL_RETURN_IF_ERROR(
      FromRocks(db_->IngestExternalFile(documents_, exported.files, io), "ingest"));
  // The ingested bytes count as churn spread over the range's slots, so that a served range
  // (a switch-then-copy move) is rescanned.
  if (range.empty()) return OkStatus();
  const uint64_t first = range.begin() >> kChurnSlotShift;
  const uint64_t last = (range.end_is_max() ? ~uint64_t{0} : range.end() - 1) >> kChurnSlotShift;
  const uint64_t share = exported.bytes / (last - first + 1) + 1;
  for (uint64_t slot = first; slot <= last; ++slot) {
    live_bytes_churn_[slot].fetch_add(share, std::memory_order_relaxed);
  }
  return OkStatus();
}

Status BucketStore::CheckWalRetained(uint64_t sequence) const {
  rocksdb::VectorLogPtr files;
  SHOAL_RETURN_IF_ERROR(FromRocks(db_->GetSortedWalFiles(files), "list WAL files"));
  if (files.empty() || files.front()->StartSequence() > sequence) {
    return StorageError(ErrorReason::kUnavailable,
                        fmt::format("WAL from sequence {} is no longer retained", sequence));
  }
  return OkStatus();
}

std::pair<std::unique_ptr<rocksdb::TransactionLogIterator>, uint64_t> BucketStore::TakeWalCursor(
    uint64_t expected) const {
  std::lock_guard<std::mutex> lock(wal_cursors_mu_);
  auto best = wal_cursors_.end();
  for (auto it = wal_cursors_.begin(); it != wal_cursors_.end(); ++it) {
    if (it->expected > expected) continue;
    if (best == wal_cursors_.end() || it->expected > best->expected) best = it;
  }
  if (best == wal_cursors_.end()) return {nullptr, 0};
  std::pair<std::unique_ptr<rocksdb::TransactionLogIterator>, uint64_t> out{std::move(best->it),
                                                                            best->expected};
  wal_cursors_.erase(best);
  return out;
}

void BucketStore::ParkWalCursor(std::unique_ptr<rocksdb::TransactionLogIterator> it,
                                uint64_t expected) const {
  std::lock_guard<std::mutex> lock(wal_cursors_mu_);
  if (closed_) return;
  if (wal_cursors_.size() >= kMaxWalCursors) wal_cursors_.erase(wal_cursors_.begin());
  wal_cursors_.push_back(WalCursor{.it = std::move(it), .expected = expected});
}

StatusOr<ChangeBatch> BucketStore::ReadChangesSince(const PointRange& range,
                                                    uint64_t after_sequence,
                                                    size_t max_changes) const {
  if (max_changes == 0) {
    return StorageError(ErrorReason::kInvalidArgument, "max_changes must be >= 1");
  }
  SHOAL_RETURN_IF_ERROR(CheckWalReadableAfter(after_sequence));
  ChangeBatch batch{.next_sequence = after_sequence};
  const uint32_t documents_cf = documents_->GetID();
  // Every sequence below `expected` is accounted for. An ingest consumes a sequence number
  // without a WAL record; the log iterator reports such a hole as an error, so reading resumes
  // past it (after checking that the hole is not a deleted WAL file).
  uint64_t expected = after_sequence + 1;
  // A parked reader sits on the last batch it consumed, or at the end of the WAL: one Next()
  // goes on from there (reading what was appended since to the same file). It is the previous
  // call of this catch-up's, or one left behind `expected` by an earlier catch-up, in which case
  // the batches up to `expected` are skipped (at most kMaxWalSkipBytes of them). Seeking afresh
  // reads the WAL file from its start, which costs a read of up to a memtable's worth of log.
  auto [it, parked_at] = TakeWalCursor(expected);
  bool resumed = it != nullptr;
  // Whether `it` returned a batch, so that it has a log file open. Only such a reader may be
  // parked: a fresh one that found no WAL file has none, and the engine asserts on its Next().
  bool read_a_batch = resumed;
  // Bytes of log a reader parked behind `expected` skipped so far.
  uint64_t skipped_bytes = 0;
  bool behind = resumed && parked_at < expected;
  bool progressed = true;
  bool reseek = false;
  while (progressed && expected <= db_->GetLatestSequenceNumber() &&
         batch.changes.size() < max_changes) {
    progressed = false;
    // Whether `it` is a parked reader that has not yet returned a batch.
    bool from_parked = false;
    if (resumed) {
      resumed = false;
      it->Next();
      // The end of the file it knows while newer files exist, or a hole: seek afresh.
      if (!it->Valid() && !it->status().ok()) {
        progressed = true;
      } else {
        from_parked = true;
      }
    } else {
      behind = false;
      wal_seeks_.fetch_add(1, std::memory_order_relaxed);
      read_a_batch = false;
      rocksdb::Status s = db_->GetUpdatesSince(expected, &it);
      if (!s.ok()) {
        return StorageError(ErrorReason::kUnavailable,
                            fmt::format("WAL from sequence {}: {}", expected, s.ToString()));
      }
      // Nothing to read from `expected` on, which is published: either every sequence from
      // there is a hole (an ingest's), or the WAL that held them is gone (no file left at all
      // also gives a reader with nothing and no error). Only the first is an answer.
      if (!it->Valid() && it->status().ok()) SHOAL_RETURN_IF_ERROR(CheckWalRetained(expected));
    }
    for (; it->Valid(); it->Next()) {
      read_a_batch = true;
      rocksdb::BatchResult result = it->GetBatch();
      const uint64_t count = std::max<uint64_t>(result.writeBatchPtr->Count(), 1);
      if (result.sequence + count <= expected) {  // fully read before
        if (behind) {
          skipped_bytes += result.writeBatchPtr->GetDataSize();
          if (skipped_bytes > kMaxWalSkipBytes) {
            reseek = true;  // too far behind: a fresh seek reads less
            break;
          }
        }
        continue;
      }
      if (from_parked && result.sequence > expected) {
        // A parked reader resumed across a hole (a sequence an ingest consumed) can step over
        // the batch written after the hole; only a fresh seek from `expected` finds it.
        reseek = true;
        break;
      }
      from_parked = false;
      if (result.sequence > expected) SHOAL_RETURN_IF_ERROR(CheckWalRetained(expected));
      ChangeCollector collector(documents_cf, range, expected - 1, result.sequence, &batch.changes);
      rocksdb::Status handled = result.writeBatchPtr->Iterate(&collector);
      if (!collector.error().ok()) return collector.error();
      SHOAL_RETURN_IF_ERROR(FromRocks(handled, "decode WAL batch"));
      expected = result.sequence + count;
      batch.next_sequence = expected - 1;
      progressed = true;
      if (batch.changes.size() >= max_changes) break;
      // Caught up with what is published: stay on this batch rather than step past the end.
      // A Next() at the end of the WAL races with the next commit: published between the
      // reader finding no record and its own check of the last sequence, it ends the reader
      // with TryAgain. Such a reader cannot go on, and the fresh seek that replaces it reads
      // the WAL file from its start (likely the 70 ms drains of docs/results/rebalance.md).
      if (expected > db_->GetLatestSequenceNumber()) break;
    }
    // A reader parked behind `expected` that reached the end of the files it knows (newer
    // ones exist) before `expected`: seek afresh. Only such a reader: a fresh seek that found
    // nothing ends the call.
    if (behind && !progressed && !it->Valid() && !it->status().ok()) reseek = true;
    if (reseek) {
      reseek = false;
      it.reset();
      progressed = true;
      continue;
    }
    if (it->Valid()) break;        // full or caught up: on the batch just consumed
    if (it->status().ok()) break;  // the end of the WAL
    if (!progressed) it.reset();   // nothing read from it: not worth parking
  }
  if (it != nullptr && read_a_batch && (it->Valid() || it->status().ok())) {
    ParkWalCursor(std::move(it), expected);
  }
  return batch;
}

}  // namespace shoal::storage
