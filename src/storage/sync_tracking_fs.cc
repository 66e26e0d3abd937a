#include "src/storage/sync_tracking_fs.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <string_view>
#include <vector>

namespace shoal::storage {
namespace {

bool IsWal(const std::string& name) {
  const std::string_view suffix = ".log";
  return name.size() > suffix.size() && name.ends_with(suffix);
}

// A WAL file that reports its appends and syncs to the file system that created it.
class TrackedWalFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  TrackedWalFile(std::unique_ptr<rocksdb::FSWritableFile> file, SyncTrackingFileSystem* fs,
                 std::string name)
      : FSWritableFileOwnerWrapper(std::move(file)), fs_(fs), name_(std::move(name)) {}

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = target()->Append(data, options, dbg);
    if (s.ok()) fs_->Appended(name_, data.size());
    return s;
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           const rocksdb::DataVerificationInfo& info,
                           rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = target()->Append(data, options, info, dbg);
    if (s.ok()) fs_->Appended(name_, data.size());
    return s;
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = target()->Sync(options, dbg);
    if (s.ok()) fs_->Synced(name_);
    return s;
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& options,
                          rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = target()->Fsync(options, dbg);
    if (s.ok()) fs_->Synced(name_);
    return s;
  }

 private:
  SyncTrackingFileSystem* fs_;
  std::string name_;
};

}  // namespace

SyncTrackingFileSystem::SyncTrackingFileSystem()
    : FileSystemWrapper(rocksdb::FileSystem::Default()) {}

std::unique_ptr<rocksdb::Env> SyncTrackingFileSystem::NewEnv(
    const std::shared_ptr<SyncTrackingFileSystem>& fs) {
  return rocksdb::NewCompositeEnv(fs);
}

rocksdb::IOStatus SyncTrackingFileSystem::NewWritableFile(
    const std::string& name, const rocksdb::FileOptions& options,
    std::unique_ptr<rocksdb::FSWritableFile>* result, rocksdb::IODebugContext* dbg) {
  rocksdb::IOStatus s = target()->NewWritableFile(name, options, result, dbg);
  if (!s.ok() || !IsWal(name)) return s;
  const std::string file = std::filesystem::path(name).filename().string();
  {
    std::lock_guard<std::mutex> lock(mu_);
    wal_[file] = WalState{};
  }
  *result = std::make_unique<TrackedWalFile>(std::move(*result), this, file);
  return s;
}

void SyncTrackingFileSystem::Appended(const std::string& file, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  wal_[file].appended += bytes;
}

void SyncTrackingFileSystem::Synced(const std::string& file) {
  std::lock_guard<std::mutex> lock(mu_);
  WalState& state = wal_[file];
  state.synced = state.appended;
  ++wal_syncs_;
}

uint64_t SyncTrackingFileSystem::wal_syncs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return wal_syncs_;
}

StatusOr<std::unique_ptr<BucketStore>> SyncTrackingFileSystem::OpenDurableCopy(
    const std::string& from, const std::string& to, StoreOptions options) const {
  SHOAL_RETURN_IF_ERROR(CopyDurable(from, to));
  options.path = to;
  options.create_if_missing = false;
  options.check_ownership = false;
  return BucketStore::Open(options);
}

Status SyncTrackingFileSystem::CopyDurable(const std::string& from, const std::string& to) const {
  std::error_code ec;
  std::filesystem::create_directories(to, ec);
  if (ec) return InternalError(fmt::format("create {}: {}", to, ec.message()));
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& entry : std::filesystem::directory_iterator(from, ec)) {
    if (!entry.is_regular_file()) continue;
    const std::string file = entry.path().filename().string();
    std::ifstream in(entry.path(), std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) return InternalError(fmt::format("read {}", file));
    if (auto it = wal_.find(file); it != wal_.end() && it->second.synced < bytes.size()) {
      bytes.resize(it->second.synced);
    }
    std::ofstream out(std::filesystem::path(to) / file, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.good()) return InternalError(fmt::format("write {}", file));
  }
  if (ec) return InternalError(fmt::format("list {}: {}", from, ec.message()));
  return OkStatus();
}

}  // namespace shoal::storage
