#pragma once

// EngineInfoLog: RocksDB's informational log (the file LOG in an engine's directory), written
// with plain write(2) calls whose failures are counted and otherwise ignored.
//
// RocksDB's own file logger goes through a WritableFileWriter, and once one of its writes has
// failed, the next one trips an assertion (Debian's librocksdb keeps assertions on): on a file
// system that went read-only, the engine's next background error is logged, and the process
// aborted with SIGABRT instead of stopping cleanly (a node's fail-stop, exit status 74). The info
// log is diagnostics: an engine learns that its disk failed from its own writes and syncs
// (storage::BucketStore::EngineFailure), never from its log.
//
// The file rolls to LOG.old once it holds kMaxBytes (at open or while written); one old file is
// kept, so a directory holds at most twice that much info log. A file that could not be opened
// is tried again at the next line.
//
// Thread-safety: Logv may be called from any thread (RocksDB logs from its background threads).

#include <rocksdb/env.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace shoal::storage {

class EngineInfoLog final : public rocksdb::Logger {
 public:
  static constexpr uint64_t kMaxBytes = uint64_t{16} << 20;

  // The log of the engine in `directory` (which must exist), at `level` and above. Never fails:
  // lines that cannot be written are dropped and counted.
  [[nodiscard]] static std::shared_ptr<EngineInfoLog> Open(
      const std::string& directory,
      rocksdb::InfoLogLevel level = rocksdb::InfoLogLevel::INFO_LEVEL);

  ~EngineInfoLog() override;

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override;
  [[nodiscard]] size_t GetLogFileSize() const override;

  // Lines that could not be written (a failing disk, a file that could not be opened).
  [[nodiscard]] uint64_t dropped_lines() const {
    return dropped_lines_.load(std::memory_order_relaxed);
  }

 protected:
  rocksdb::Status CloseImpl() override;

 private:
  EngineInfoLog(std::string directory, rocksdb::InfoLogLevel level);

  // Renames LOG to LOG.old and opens a new LOG. Best effort.
  void RollLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OpenLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const std::string old_path_;
  mutable absl::Mutex mu_;
  int fd_ ABSL_GUARDED_BY(mu_) = -1;
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool shut_ ABSL_GUARDED_BY(mu_) = false;  // closed: lines are ignored
  std::atomic<uint64_t> dropped_lines_{0};
};

}  // namespace shoal::storage
