#include "src/storage/full_disk_fs.h"

#include <utility>

namespace shoal::storage {
namespace {

// A file that asks its file system before every write.
class FullDiskFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  FullDiskFile(std::unique_ptr<rocksdb::FSWritableFile> file, FullDiskFileSystem* fs,
               std::string path)
      : FSWritableFileOwnerWrapper(std::move(file)), fs_(fs), path_(std::move(path)) {}

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* dbg) override {
    if (rocksdb::IOStatus refused = fs_->Refusal(path_); !refused.ok()) return refused;
    return target()->Append(data, options, dbg);
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           const rocksdb::DataVerificationInfo& info,
                           rocksdb::IODebugContext* dbg) override {
    if (rocksdb::IOStatus refused = fs_->Refusal(path_); !refused.ok()) return refused;
    return target()->Append(data, options, info, dbg);
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                     const rocksdb::IOOptions& options,
                                     rocksdb::IODebugContext* dbg) override {
    if (rocksdb::IOStatus refused = fs_->Refusal(path_); !refused.ok()) return refused;
    return target()->PositionedAppend(data, offset, options, dbg);
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                     const rocksdb::IOOptions& options,
                                     const rocksdb::DataVerificationInfo& info,
                                     rocksdb::IODebugContext* dbg) override {
    if (rocksdb::IOStatus refused = fs_->Refusal(path_); !refused.ok()) return refused;
    return target()->PositionedAppend(data, offset, options, info, dbg);
  }
  // A sync writes the blocks the appends reserved only in the page cache.
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
    fs_->WaitWhileSyncsStall(path_);
    if (rocksdb::IOStatus refused = fs_->Refusal(path_); !refused.ok()) return refused;
    return target()->Sync(options, dbg);
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& options,
                          rocksdb::IODebugContext* dbg) override {
    fs_->WaitWhileSyncsStall(path_);
    if (rocksdb::IOStatus refused = fs_->Refusal(path_); !refused.ok()) return refused;
    return target()->Fsync(options, dbg);
  }

 private:
  FullDiskFileSystem* fs_;
  std::string path_;
};

}  // namespace

FullDiskFileSystem::FullDiskFileSystem(std::string prefix)
    : FileSystemWrapper(rocksdb::FileSystem::Default()), prefix_(std::move(prefix)) {}

std::unique_ptr<rocksdb::Env> FullDiskFileSystem::NewEnv(
    const std::shared_ptr<FullDiskFileSystem>& fs) {
  return rocksdb::NewCompositeEnv(fs);
}

rocksdb::IOStatus FullDiskFileSystem::Refusal(const std::string& path) {
  if (!path.starts_with(prefix_)) return rocksdb::IOStatus::OK();
  if (full_.load(std::memory_order_acquire)) {
    refused_.fetch_add(1, std::memory_order_acq_rel);
    return rocksdb::IOStatus::NoSpace("no space left on device (test)", path);
  }
  if (broken_.load(std::memory_order_acquire)) {
    refused_.fetch_add(1, std::memory_order_acq_rel);
    return rocksdb::IOStatus::IOError("input/output error (test)", path);
  }
  return rocksdb::IOStatus::OK();
}

void FullDiskFileSystem::SetSyncsStall(bool stall) {
  {
    std::lock_guard<std::mutex> lock(stall_mu_);
    syncs_stall_ = stall;
  }
  stall_cv_.notify_all();
}

void FullDiskFileSystem::WaitWhileSyncsStall(const std::string& path) {
  if (!path.starts_with(prefix_)) return;
  std::unique_lock<std::mutex> lock(stall_mu_);
  if (syncs_stall_) stalled_syncs_.fetch_add(1, std::memory_order_acq_rel);
  stall_cv_.wait(lock, [this] { return !syncs_stall_; });
}

rocksdb::IOStatus FullDiskFileSystem::Wrap(const std::string& name, rocksdb::IOStatus opened,
                                           std::unique_ptr<rocksdb::FSWritableFile>* result) {
  if (!opened.ok()) return opened;
  *result = std::make_unique<FullDiskFile>(std::move(*result), this, name);
  return opened;
}

rocksdb::IOStatus FullDiskFileSystem::NewWritableFile(
    const std::string& name, const rocksdb::FileOptions& options,
    std::unique_ptr<rocksdb::FSWritableFile>* result, rocksdb::IODebugContext* dbg) {
  if (rocksdb::IOStatus refused = Refusal(name); !refused.ok()) return refused;
  return Wrap(name, target()->NewWritableFile(name, options, result, dbg), result);
}

rocksdb::IOStatus FullDiskFileSystem::ReopenWritableFile(
    const std::string& name, const rocksdb::FileOptions& options,
    std::unique_ptr<rocksdb::FSWritableFile>* result, rocksdb::IODebugContext* dbg) {
  if (rocksdb::IOStatus refused = Refusal(name); !refused.ok()) return refused;
  return Wrap(name, target()->ReopenWritableFile(name, options, result, dbg), result);
}

rocksdb::IOStatus FullDiskFileSystem::ReuseWritableFile(
    const std::string& name, const std::string& old_name, const rocksdb::FileOptions& options,
    std::unique_ptr<rocksdb::FSWritableFile>* result, rocksdb::IODebugContext* dbg) {
  if (rocksdb::IOStatus refused = Refusal(name); !refused.ok()) return refused;
  return Wrap(name, target()->ReuseWritableFile(name, old_name, options, result, dbg), result);
}

rocksdb::IOStatus FullDiskFileSystem::LinkFile(const std::string& source,
                                               const std::string& target_name,
                                               const rocksdb::IOOptions& options,
                                               rocksdb::IODebugContext* dbg) {
  if (rocksdb::IOStatus refused = Refusal(target_name); !refused.ok()) return refused;
  return target()->LinkFile(source, target_name, options, dbg);
}

void FullDiskFileSystem::SetFreeBytes(std::optional<uint64_t> bytes) {
  std::lock_guard<std::mutex> lock(free_mu_);
  free_bytes_ = bytes;
}

rocksdb::IOStatus FullDiskFileSystem::GetFreeSpace(const std::string& path,
                                                   const rocksdb::IOOptions& options,
                                                   uint64_t* diskfree,
                                                   rocksdb::IODebugContext* dbg) {
  if (path.starts_with(prefix_)) {
    if (full_.load(std::memory_order_acquire)) {
      *diskfree = 0;
      return rocksdb::IOStatus::OK();
    }
    std::lock_guard<std::mutex> lock(free_mu_);
    if (free_bytes_.has_value()) {
      *diskfree = *free_bytes_;
      return rocksdb::IOStatus::OK();
    }
  }
  return target()->GetFreeSpace(path, options, diskfree, dbg);
}

}  // namespace shoal::storage
