#pragma once

// SyncTrackingFileSystem (test only): a RocksDB file system that remembers, for every WAL file
// (*.log) it creates, how many bytes were appended and how many of them a Sync/Fsync made
// durable, and counts those syncs. CopyDurable copies a store's directory as a machine crash
// (power loss) would leave it: each WAL file cut to its synced length. Other files (MANIFEST,
// CURRENT, OPTIONS, SST) are copied whole: the engine syncs them itself when it writes them.
//
// One store per instance (WAL files are known by file name). Thread-safe.

#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "src/common/status.h"
#include "src/storage/bucket_store.h"
#include "src/storage/store_options.h"

namespace shoal::storage {

class SyncTrackingFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  SyncTrackingFileSystem();

  // An Env over this file system, for StoreOptions::env; must outlive the store.
  [[nodiscard]] static std::unique_ptr<rocksdb::Env> NewEnv(
      const std::shared_ptr<SyncTrackingFileSystem>& fs);

  const char* Name() const override { return "SyncTrackingFileSystem"; }
  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override;

  // Sync/Fsync calls on WAL files so far.
  [[nodiscard]] uint64_t wal_syncs() const;
  // Copies the files of directory `from` into `to` (created), WAL files cut to their synced
  // length. `from` must be quiescent (no write in progress).
  [[nodiscard]] Status CopyDurable(const std::string& from, const std::string& to) const;
  // CopyDurable(from, to), then the copy opened as a store with `options` (path `to`, neither
  // created nor checked for ownership): what a machine crash would leave of the store.
  [[nodiscard]] StatusOr<std::unique_ptr<BucketStore>> OpenDurableCopy(const std::string& from,
                                                                       const std::string& to,
                                                                       StoreOptions options) const;

  // Called by the WAL files this file system created.
  void Appended(const std::string& file, uint64_t bytes);
  void Synced(const std::string& file);

 private:
  struct WalState {
    uint64_t appended = 0;
    uint64_t synced = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, WalState> wal_;  // by file name
  uint64_t wal_syncs_ = 0;
};

}  // namespace shoal::storage
