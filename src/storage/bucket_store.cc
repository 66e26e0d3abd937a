#include "src/storage/bucket_store.h"

#include <fmt/format.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>

#include "src/common/steady_clock.h"
#include "src/storage/codec.h"
#include "src/storage/collection_name.h"
#include "src/storage/engine_info_log.h"
#include "src/storage/errors.h"
#include "src/storage/json.h"

namespace shoal::storage {
namespace {

// Meta column family keys (bucket entries: local_directory.h).
constexpr std::string_view kFormatKey = "F";
constexpr std::string_view kVersionKey = "V";
constexpr std::string_view kStoreIdKey = "I";
constexpr char kCollectionPrefix = 'c';
constexpr uint8_t kStoreFormatV1 = 1;
constexpr uint8_t kCollectionFormatV1 = 1;

rocksdb::Slice ToSlice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }

std::string CollectionMetaKey(CollectionId id) {
  std::string key(1, kCollectionPrefix);
  AppendBigEndian32(id.value(), &key);
  return key;
}

}  // namespace

uint64_t Snapshot::sequence() const { return snapshot_->GetSequenceNumber(); }

Snapshot::~Snapshot() { db_->ReleaseSnapshot(snapshot_); }

BucketStore::BucketStore(const StoreOptions& options) : options_(options) {}

StatusOr<std::unique_ptr<BucketStore>> BucketStore::Open(const StoreOptions& options) {
  std::unique_ptr<BucketStore> store(new BucketStore(options));
  SHOAL_ASSIGN_OR_RETURN(store->engine_, BuildEngineOptions(options));
  rocksdb::Env* env = options.env != nullptr ? options.env : rocksdb::Env::Default();
  store->space_ = std::make_unique<DiskSpaceGuard>(
      [env, path = options.path]() -> StatusOr<uint64_t> {
        uint64_t free = 0;
        SHOAL_RETURN_IF_ERROR(FromRocks(env->GetFreeSpace(path, &free), "free disk space"));
        return free;
      },
      options.path,
      DiskSpaceGuard::Options{.reserve_bytes = options.min_free_disk_bytes,
                              .recheck_interval = options.disk_check_interval});
  SHOAL_RETURN_IF_ERROR(store->OpenEngine());
  // A directory the process cannot stat (an Env of another kind) is not checked.
  if (StatusOr<DirectoryIdentity> directory = DirectoryIdentity::Of(options.path); directory.ok()) {
    store->directory_identity_ = *std::move(directory);
  }
  SHOAL_RETURN_IF_ERROR(store->LoadMeta());
  store->stripes_ = std::make_unique<Stripe[]>(options.lock_stripes);
  if (options.sync == SyncPolicy::kPeriodic && options.sync_interval.count() > 0) {
    store->sync_thread_ = std::thread([s = store.get()] { s->SyncLoop(); });
  }
  return store;
}

Status BucketStore::OpenEngine() {
  if (options_.create_if_missing) {
    std::error_code ec;
    std::filesystem::create_directories(options_.path, ec);
    if (ec) {
      return StorageError(ErrorReason::kIo,
                          fmt::format("create {}: {}", options_.path, ec.message()));
    }
  }
  // RocksDB's info log through Shoal's own writer, which a failing disk cannot crash
  // (engine_info_log.h).
  if (engine_.db.info_log == nullptr) engine_.db.info_log = EngineInfoLog::Open(options_.path);
  std::vector<std::string> existing;
  rocksdb::Status listed = rocksdb::DB::ListColumnFamilies(engine_.db, options_.path, &existing);
  if (listed.ok()) {
    for (const std::string& name : existing) {
      if (name != rocksdb::kDefaultColumnFamilyName && name != kDocumentsColumnFamily &&
          name != kMetaColumnFamily) {
        return StorageError(
            ErrorReason::kCorruption,
            fmt::format("{} holds an unknown column family {}", options_.path, name));
      }
    }
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
      {kDocumentsColumnFamily, engine_.documents},
      {kMetaColumnFamily, engine_.meta},
  };
  SHOAL_RETURN_IF_ERROR(
      FromRocks(rocksdb::DB::Open(engine_.db, options_.path, descriptors, &handles_, &db_),
                fmt::format("open {}", options_.path)));
  documents_ = handles_[1];
  meta_ = handles_[2];
  return OkStatus();
}

Status BucketStore::LoadMeta() {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), meta_, ToSlice(kFormatKey), &value);
  if (s.IsNotFound()) {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), documents_));
    it->SeekToFirst();
    if (it->Valid()) {
      return StorageError(ErrorReason::kCorruption, "documents without a store format marker");
    }
    SHOAL_RETURN_IF_ERROR(FromRocks(it->status(), "check new store"));
    rocksdb::WriteOptions sync_write;
    sync_write.sync = true;
    SHOAL_RETURN_IF_ERROR(FromRocks(db_->Put(sync_write, meta_, ToSlice(kFormatKey),
                                             std::string(1, static_cast<char>(kStoreFormatV1))),
                                    "write format marker"));
  } else {
    SHOAL_RETURN_IF_ERROR(FromRocks(s, "read format marker"));
    if (value.size() != 1 || static_cast<uint8_t>(value[0]) != kStoreFormatV1) {
      return StorageError(ErrorReason::kCorruption, "unknown store format");
    }
  }

  SHOAL_RETURN_IF_ERROR(LoadStoreId());

  uint64_t reserved = 0;
  s = db_->Get(rocksdb::ReadOptions(), meta_, ToSlice(kVersionKey), &value);
  if (s.ok()) {
    if (value.size() != 8) return StorageError(ErrorReason::kCorruption, "bad version record");
    reserved = DecodeBigEndian64(value.data());
  } else if (!s.IsNotFound()) {
    return FromRocks(s, "read version record");
  }
  clock_ = std::make_unique<VersionClock>(reserved, options_.version_block, [this](uint64_t r) {
    rocksdb::WriteBatch batch;
    std::string encoded;
    AppendBigEndian64(r, &encoded);
    batch.Put(meta_, ToSlice(kVersionKey), encoded);
    return WriteBatchToEngine(&batch);
  });

  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), meta_));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string_view key(it->key().data(), it->key().size());
    const std::string_view val(it->value().data(), it->value().size());
    if (key[0] == kCollectionPrefix) {
      if (key.size() != 5 || val.empty() || static_cast<uint8_t>(val[0]) != kCollectionFormatV1) {
        return StorageError(ErrorReason::kCorruption, "bad collection record");
      }
      const CollectionId id(DecodeBigEndian32(key.data() + 1));
      collections_[id] = std::string(val.substr(1));
      collection_by_name_[std::string(val.substr(1))] = id;
    } else if (key[0] == kBucketMetaPrefix) {
      SHOAL_ASSIGN_OR_RETURN(BucketEntry entry, DecodeBucketEntry(key, val));
      SHOAL_RETURN_IF_ERROR(Prefixed(directory_.Add(entry), "recover directory"));
    } else if (key[0] == kReplicaPositionPrefix || key[0] == kTermHistoryPrefix) {
      SHOAL_RETURN_IF_ERROR(LoadReplicaRecord(key, val));
    } else if (key[0] == kSealPrefix) {
      if (key.size() != 5 || val.size() != 8) {
        return StorageError(ErrorReason::kCorruption, "bad seal record");
      }
      seals_[BucketId(DecodeBigEndian32(key.data() + 1))] = Term(DecodeBigEndian64(val.data()));
    }
  }
  return FromRocks(it->status(), "load meta");
}

Status BucketStore::LoadStoreId() {
  std::string value;
  const rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), meta_, ToSlice(kStoreIdKey), &value);
  if (s.ok()) {
    if (value.size() != 8) return StorageError(ErrorReason::kCorruption, "bad store id record");
    store_id_ = DecodeBigEndian64(value.data());
    if (store_id_ == 0) return StorageError(ErrorReason::kCorruption, "store id 0");
    return OkStatus();
  }
  if (!s.IsNotFound()) return FromRocks(s, "read store id");
  // A new store, or one created before stores had ids: draw one and make it durable before the
  // store is used, so that no write is ever acknowledged under an id a crash could change.
  std::random_device random;
  while (store_id_ == 0) {
    store_id_ = (static_cast<uint64_t>(random()) << 32) ^ static_cast<uint64_t>(random());
  }
  std::string encoded;
  AppendBigEndian64(store_id_, &encoded);
  rocksdb::WriteOptions sync_write;
  sync_write.sync = true;
  return FromRocks(db_->Put(sync_write, meta_, ToSlice(kStoreIdKey), encoded), "write store id");
}

void BucketStore::SyncLoop() {
  std::unique_lock<std::mutex> lock(sync_mu_);
  while (!stopping_) {
    sync_cv_.wait_for(lock, options_.sync_interval);
    if (stopping_) break;
    lock.unlock();
    // A failed background sync counts as a failed write (EngineWriteStatus): a full disk
    // stops the engine until a write resumes it, and any other I/O error is the store's
    // failure for good, since retried at the next tick a sync could "succeed" once the kernel
    // has dropped the pages it could not write (PostgreSQL's fsync lesson). A stopped engine
    // is not synced: RocksDB 7.8 asserts on a sync of a WAL file that failed a write
    // (bucket_store_recovery.cc), and a write that succeeds resumes the engine first.
    if (!engine_stopped_.load(std::memory_order_acquire)) {
      Status ignored = EngineWriteStatus(db_->SyncWAL(), "periodic WAL sync");
      (void)ignored;
    }
    lock.lock();
  }
}

Status BucketStore::Close() {
  if (closed_ || db_ == nullptr) return OkStatus();
  closed_ = true;
  {
    std::lock_guard<std::mutex> lock(sync_mu_);
    stopping_ = true;
  }
  sync_cv_.notify_all();
  if (sync_thread_.joinable()) sync_thread_.join();
  {
    std::lock_guard<std::mutex> lock(wal_cursors_mu_);
    wal_cursors_.clear();  // WAL readers go before the DB
  }
  // A stopped engine's WAL is not synced (see SyncLoop): what it acknowledged is durable per
  // the sync policy, and what was not yet synced stays in the OS page cache for the reopen.
  Status status = engine_stopped_.load(std::memory_order_acquire)
                      ? StorageError(ErrorReason::kIo,
                                     "closed with the engine stopped after a failed write; the "
                                     "WAL was not synced")
                      : FromRocks(db_->SyncWAL(), "sync WAL at close");
  for (rocksdb::ColumnFamilyHandle* h : handles_) {
    Status destroyed = FromRocks(db_->DestroyColumnFamilyHandle(h), "close column family");
    if (status.ok()) status = destroyed;
  }
  handles_.clear();
  Status closed = FromRocks(db_->Close(), "close");
  if (status.ok()) status = closed;
  delete db_;
  db_ = nullptr;
  return status;
}

BucketStore::~BucketStore() {
  Status ignored = Close();  // the destructor cannot report; call Close() to see errors
  (void)ignored;
}

// --- collections ---

Status BucketStore::CreateCollection(const CollectionSpec& spec) {
  if (!IsValidCollectionId(spec.id)) {
    return StorageError(ErrorReason::kInvalidArgument,
                        fmt::format("collection id {} is reserved", spec.id.value()));
  }
  SHOAL_RETURN_IF_ERROR(ValidateCollectionName(spec.name));
  std::unique_lock<std::shared_mutex> lock(collections_mu_);
  auto by_id = collections_.find(spec.id);
  auto by_name = collection_by_name_.find(spec.name);
  if (by_id != collections_.end() || by_name != collection_by_name_.end()) {
    if (by_id != collections_.end() && by_id->second == spec.name) return OkStatus();
    return StorageError(ErrorReason::kCollectionExists,
                        fmt::format("collection {} {:?} conflicts with a registered one",
                                    spec.id.DebugString(), spec.name));
  }
  rocksdb::WriteBatch batch;
  batch.Put(meta_, CollectionMetaKey(spec.id),
            std::string(1, static_cast<char>(kCollectionFormatV1)) + spec.name);
  SHOAL_RETURN_IF_ERROR(WriteBatchToEngine(&batch));
  collections_[spec.id] = spec.name;
  collection_by_name_[spec.name] = spec.id;
  return OkStatus();
}

StatusOr<CollectionSpec> BucketStore::GetCollection(CollectionId id) const {
  std::shared_lock<std::shared_mutex> lock(collections_mu_);
  auto it = collections_.find(id);
  if (it == collections_.end()) {
    return StorageError(ErrorReason::kUnknownCollection,
                        fmt::format("collection {} not registered", id.DebugString()));
  }
  return CollectionSpec{.id = id, .name = it->second};
}

StatusOr<CollectionSpec> BucketStore::FindCollection(std::string_view name) const {
  std::shared_lock<std::shared_mutex> lock(collections_mu_);
  auto it = collection_by_name_.find(std::string(name));
  if (it == collection_by_name_.end()) {
    return StorageError(ErrorReason::kUnknownCollection,
                        fmt::format("collection {:?} not registered", name));
  }
  return CollectionSpec{.id = it->second, .name = std::string(name)};
}

std::vector<CollectionSpec> BucketStore::ListCollections() const {
  std::shared_lock<std::shared_mutex> lock(collections_mu_);
  std::vector<CollectionSpec> specs;
  for (const auto& [id, name] : collections_) specs.push_back({.id = id, .name = name});
  std::sort(specs.begin(), specs.end(),
            [](const CollectionSpec& a, const CollectionSpec& b) { return a.id < b.id; });
  return specs;
}

Status BucketStore::CheckCollection(CollectionId id) const {
  std::shared_lock<std::shared_mutex> lock(collections_mu_);
  if (!collections_.contains(id)) {
    return StorageError(ErrorReason::kUnknownCollection,
                        fmt::format("collection {} not registered", id.DebugString()));
  }
  return OkStatus();
}

// --- engine helpers ---

Status BucketStore::WriteBatchToEngine(rocksdb::WriteBatch* batch, WalSync wal_sync) {
  SHOAL_RETURN_IF_ERROR(ResumeEngineIfStopped());
  rocksdb::WriteOptions options = engine_.write;
  switch (wal_sync) {
    case WalSync::kAsConfigured:
      break;
    case WalSync::kDeferred:
      options.sync = false;
      break;
  }
  // Progress of engine writes, for write_waiting_since_nanos: a busy period starts with the
  // first write in flight, and every write that returns moves it on.
  if (writes_in_flight_.fetch_add(1, std::memory_order_acq_rel) == 0) {
    write_progress_ns_.store(SteadyNanos(), std::memory_order_release);
  }
  const rocksdb::Status written = db_->Write(options, batch);
  write_progress_ns_.store(SteadyNanos(), std::memory_order_release);
  writes_in_flight_.fetch_sub(1, std::memory_order_acq_rel);
  return EngineWriteStatus(written, "write");
}

int64_t BucketStore::write_waiting_since_nanos() const {
  if (writes_in_flight_.load(std::memory_order_acquire) == 0) return 0;
  return write_progress_ns_.load(std::memory_order_acquire);
}

rocksdb::ReadOptions BucketStore::MakeReadOptions(const Snapshot* snapshot) const {
  rocksdb::ReadOptions ro;
  if (snapshot != nullptr) ro.snapshot = snapshot->snapshot_;
  return ro;
}

std::unique_ptr<Snapshot> BucketStore::GetSnapshot() const {
  return std::unique_ptr<Snapshot>(new Snapshot(db_, db_->GetSnapshot()));
}

uint64_t BucketStore::LatestSequence() const { return db_->GetLatestSequenceNumber(); }

Status BucketStore::SyncWal() { return group_sync_.Sync(); }

Status BucketStore::CheckDirectory() const {
  const Status status = directory_identity_.Check();
  if (status.ok()) return status;
  return StorageError(ErrorReason::kIo, MessageOf(status));
}

Status BucketStore::SyncWalNow() {
  SHOAL_RETURN_IF_ERROR(ResumeEngineIfStopped());
  return EngineWriteStatus(db_->SyncWAL(), "sync WAL");
}

Status BucketStore::Flush() {
  rocksdb::FlushOptions fo;
  fo.wait = true;
  return FromRocks(db_->Flush(fo, {documents_, meta_}), "flush");
}

Status BucketStore::CompactRange(const PointRange& range) {
  const std::string begin = range.BeginKey();
  const std::string end = range.EndKey();
  rocksdb::Slice b(begin), e(end);
  return FromRocks(db_->CompactRange(rocksdb::CompactRangeOptions(), documents_, &b, &e),
                   "compact range");
}

bool BucketStore::BackgroundWorkPending() const {
  for (const char* property : {"rocksdb.num-running-compactions", "rocksdb.num-running-flushes",
                               "rocksdb.compaction-pending", "rocksdb.mem-table-flush-pending"}) {
    uint64_t value = 0;
    // A property the engine cannot report counts as pending: the caller waits, bounded.
    if (!db_->GetIntProperty(documents_, property, &value) || value != 0) return true;
  }
  return false;
}

}  // namespace shoal::storage
