#pragma once

// Options of a BucketStore and the one function that turns them into engine options, so that the
// benchmarks run raw RocksDB with exactly the options the store uses. docs/design/storage.md
// explains each choice.

#include <rocksdb/options.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "src/common/status.h"
#include "src/storage/document.h"

namespace shoal::storage {

inline constexpr char kDocumentsColumnFamily[] = "documents";
inline constexpr char kMetaColumnFamily[] = "meta";

// When an acknowledged write is durable (docs/design/storage.md, "Durability"):
//   kEveryWrite: the WAL is fsynced before a write returns. Survives process and machine crashes.
//                Concurrent writers share one fsync (RocksDB's write group = group commit).
//   kPeriodic:   a write returns once it is in the WAL in the OS page cache. Survives a process
//                crash; a machine crash loses at most the writes of the last sync_interval (a
//                background thread fsyncs the WAL that often; 0 leaves it to the OS).
enum class SyncPolicy : uint8_t { kEveryWrite, kPeriodic };

// Per write call. kAsConfigured follows StoreOptions::sync. kDeferred returns once the write is
// in the WAL in the OS page cache (and readable by everyone), whatever the policy: the caller
// must call BucketStore::SyncWal before it acknowledges the write, so that many writes share one
// sync (a storage node's batch, docs/design/cluster.md "Batch writes"). Until then a process
// crash keeps the write and a machine crash may lose it.
enum class WalSync : uint8_t { kAsConfigured, kDeferred };

struct StoreOptions {
  std::string path{};
  bool create_if_missing = true;
  SyncPolicy sync = SyncPolicy::kEveryWrite;
  std::chrono::milliseconds sync_interval{100};
  DocumentLimits limits{};
  // Refuse client operations on points outside a ReadWrite/Leaving bucket of the local directory,
  // and ApplyIfNewer outside a ReadWrite/Adding one (see BucketStore).
  bool check_ownership = true;
  size_t block_cache_bytes = 64u << 20;
  size_t write_buffer_bytes = 64u << 20;
  int background_jobs = 2;
  // Archived WAL kept for catch-up reads (ReadChangesSince): by age and by total size.
  uint64_t wal_ttl_seconds = 3600;
  uint64_t wal_size_limit_mb = 4096;
  // Striped locks that serialize read-modify-write per key.
  size_t lock_stripes = 1024;
  // Versions reserved durably at a time (VersionClock).
  uint64_t version_block = 1u << 20;
  // ApplyBatch/ApplyChanges refuse batches whose keys and bodies exceed this (kTooLarge).
  size_t max_batch_bytes = 64u << 20;
  // Writes of documents (client writes, a move's catch-up) and exports are refused with kNoSpace
  // while they would leave less than this much free disk under `path` (DiskSpaceGuard); 0 turns
  // the check off. The reserve must hold what the engine writes on its own: a memtable flush
  // (write_buffer_bytes) and the compaction it may start.
  uint64_t min_free_disk_bytes = 128u << 20;
  // How old a reading of free disk space may be when a write trusts it.
  std::chrono::milliseconds disk_check_interval{100};
  // The engine's environment; null = the default one. Tests pass one that observes WAL syncs
  // (sync_tracking_fs.h). Must outlive the store.
  rocksdb::Env* env = nullptr;
};

// Engine options derived from StoreOptions.
struct EngineOptions {
  rocksdb::DBOptions db{};
  rocksdb::ColumnFamilyOptions documents{};
  rocksdb::ColumnFamilyOptions meta{};
  rocksdb::WriteOptions write{};
};

// InvalidArgument for an empty path, zero stripes or zero version block.
[[nodiscard]] StatusOr<EngineOptions> BuildEngineOptions(const StoreOptions& options);

}  // namespace shoal::storage
