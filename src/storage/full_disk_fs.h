#pragma once

// FullDiskFileSystem (test only): a RocksDB file system over the default one that, while it is
// switched to full, answers every write under a directory prefix with NoSpace, as a disk with
// no free block would: creating, reopening or linking a file, and appending to or syncing a
// file it created earlier (a WAL, a MANIFEST). Reads, renames, deletes and directories are
// left alone (they need no data block). Paths outside the prefix are never refused, so one
// instance can stand for one node's disk while other stores share it. Its free space, as a
// store's DiskSpaceGuard reads it under the prefix, is 0 while full, or a set number of bytes
// (a disk near its end that still takes writes), or the real disk's. It can also stand for a
// failing disk: while broken, the same writes fail with an I/O error (EIO) instead; while
// syncs stall, every sync of a file under the prefix waits until they no longer do.
//
// Thread-safe; must outlive every store opened on it.

#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace shoal::storage {

class FullDiskFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  // Refuses writes under `prefix` (a directory path, compared as a string prefix) while full.
  explicit FullDiskFileSystem(std::string prefix);

  // An Env over this file system, for StoreOptions::env; must outlive the store.
  [[nodiscard]] static std::unique_ptr<rocksdb::Env> NewEnv(
      const std::shared_ptr<FullDiskFileSystem>& fs);

  void SetFull(bool full) { full_.store(full, std::memory_order_release); }
  // The free space reported under the prefix while not full; nullopt = the real disk's.
  void SetFreeBytes(std::optional<uint64_t> bytes);
  // While broken, writes under the prefix fail with IOError (a full disk's NoSpace wins).
  void SetBroken(bool broken) { broken_.store(broken, std::memory_order_release); }
  // While set, syncs of files under the prefix wait (a stalled disk); clearing it releases them.
  void SetSyncsStall(bool stall);
  // Writes refused so far.
  [[nodiscard]] uint64_t refused() const { return refused_.load(std::memory_order_acquire); }
  // Syncs that began waiting in a stall so far.
  [[nodiscard]] uint64_t stalled_syncs() const {
    return stalled_syncs_.load(std::memory_order_acquire);
  }

  // OK, or the error a write to `path` gets now (counted). Called by the files it created.
  [[nodiscard]] rocksdb::IOStatus Refusal(const std::string& path);
  // Returns once syncs under the prefix no longer stall. Called by the files it created.
  void WaitWhileSyncsStall(const std::string& path);

  const char* Name() const override { return "FullDiskFileSystem"; }
  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReopenWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                       std::unique_ptr<rocksdb::FSWritableFile>* result,
                                       rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReuseWritableFile(const std::string& name, const std::string& old_name,
                                      const rocksdb::FileOptions& options,
                                      std::unique_ptr<rocksdb::FSWritableFile>* result,
                                      rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus LinkFile(const std::string& source, const std::string& target,
                             const rocksdb::IOOptions& options,
                             rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus GetFreeSpace(const std::string& path, const rocksdb::IOOptions& options,
                                 uint64_t* diskfree, rocksdb::IODebugContext* dbg) override;

 private:
  rocksdb::IOStatus Wrap(const std::string& name, rocksdb::IOStatus opened,
                         std::unique_ptr<rocksdb::FSWritableFile>* result);

  const std::string prefix_;
  std::atomic<bool> full_{false};
  std::atomic<bool> broken_{false};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> stalled_syncs_{0};
  std::mutex stall_mu_;
  std::condition_variable stall_cv_;
  bool syncs_stall_ = false;  // guarded by stall_mu_
  std::mutex free_mu_;
  std::optional<uint64_t> free_bytes_;  // guarded by free_mu_
};

}  // namespace shoal::storage
