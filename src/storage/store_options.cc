#include "src/storage/store_options.h"

#include <linux/magic.h>
#include <rocksdb/cache.h>
#include <rocksdb/convenience.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <sys/vfs.h>

#include <algorithm>
#include <filesystem>

#include "src/storage/errors.h"

namespace shoal::storage {
namespace {

rocksdb::CompressionType PickCompression() {
  const std::vector<rocksdb::CompressionType> supported = rocksdb::GetSupportedCompressions();
  for (rocksdb::CompressionType c : {rocksdb::kLZ4Compression, rocksdb::kSnappyCompression}) {
    if (std::find(supported.begin(), supported.end(), c) != supported.end()) return c;
  }
  return rocksdb::kNoCompression;
}

// Whether `path`, or its nearest existing ancestor, is on a memory file system. There the engine's
// file preallocation (4 MiB per MANIFEST, a memtable's worth per WAL) buys nothing, since
// nothing is fragmented or synced, and costs: tmpfs zeroes and holds every preallocated page,
// and truncates them again when the file closes.
bool OnMemoryFileSystem(const std::string& path) {
  std::error_code error;
  std::filesystem::path at = std::filesystem::absolute(path, error);
  if (error) return false;
  while (!std::filesystem::exists(at, error) && at.has_parent_path() && at != at.parent_path()) {
    at = at.parent_path();
  }
  struct statfs fs {};
  return ::statfs(at.c_str(), &fs) == 0 && fs.f_type == TMPFS_MAGIC;
}

}  // namespace

StatusOr<EngineOptions> BuildEngineOptions(const StoreOptions& options) {
  if (options.path.empty()) return StorageError(ErrorReason::kInvalidArgument, "empty path");
  if (options.lock_stripes == 0 || options.version_block == 0) {
    return StorageError(ErrorReason::kInvalidArgument, "lock_stripes and version_block must be >0");
  }
  EngineOptions e;
  e.db.create_if_missing = options.create_if_missing;
  e.db.create_missing_column_families = options.create_if_missing;
  e.db.max_background_jobs = options.background_jobs;
  e.db.bytes_per_sync = 1u << 20;
  // A torn WAL tail (machine crash without sync) recovers to the last consistent prefix.
  e.db.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
  e.db.WAL_ttl_seconds = options.wal_ttl_seconds;
  e.db.WAL_size_limit_MB = options.wal_size_limit_mb;
  e.db.recycle_log_file_num = 0;  // recycled WAL files cannot be tailed
  e.db.max_total_wal_size = 4 * options.write_buffer_bytes;
  e.db.avoid_flush_during_shutdown = false;
  e.db.allow_fallocate = !OnMemoryFileSystem(options.path);
  if (options.env != nullptr) e.db.env = options.env;

  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  table.whole_key_filtering = true;
  table.cache_index_and_filter_blocks = true;
  table.pin_l0_filter_and_index_blocks_in_cache = true;
  table.block_size = size_t{16} << 10;
  table.format_version = 5;

  e.documents.write_buffer_size = options.write_buffer_bytes;
  e.documents.max_write_buffer_number = 3;
  e.documents.compression = PickCompression();
  e.documents.level_compaction_dynamic_level_bytes = true;
  e.documents.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  // A whole-key bloom filter in the memtable makes the "is there a document?" read of
  // Insert cheap for new keys.
  e.documents.memtable_prefix_bloom_size_ratio = 0.05;
  e.documents.memtable_whole_key_filtering = true;

  e.meta.write_buffer_size = 4u << 20;
  e.meta.compression = rocksdb::kNoCompression;

  e.write.sync = options.sync == SyncPolicy::kEveryWrite;
  e.write.disableWAL = false;
  return e;
}

}  // namespace shoal::storage
