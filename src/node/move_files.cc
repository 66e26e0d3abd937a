#include "src/node/move_files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>

#include "src/common/crc32c.h"
#include "src/transport/classify.h"

namespace shoal::node {
namespace {

constexpr std::string_view kStagingPrefix = "fetch-";
constexpr size_t kReadBlock = 1u << 20;

// Closes a file descriptor on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  [[nodiscard]] int get() const { return fd_; }
  // Closes now, reporting the error a deferred write may surface only here.
  [[nodiscard]] bool Close() {
    const int fd = std::exchange(fd_, -1);
    return ::close(fd) == 0;
  }

 private:
  int fd_;
};

Status Errno(std::string_view what, const std::string& path) {
  return IoError(fmt::format("{} {}: {}", std::string(what), path, std::strerror(errno)));
}

// Reads up to `size` bytes at `offset` (fewer only at the end of the file).
StatusOr<std::string> ReadAt(int fd, const std::string& path, uint64_t offset, size_t size) {
  std::string data(size, '\0');
  size_t done = 0;
  while (done < size) {
    const ssize_t n =
        ::pread(fd, data.data() + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("read", path);
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  data.resize(done);
  return data;
}

Status WriteAll(int fd, const std::string& path, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("write", path);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return OkStatus();
}

// A chunk fetch is idempotent: a call that failed in transit is fetched again (Classify).
bool Transient(const Status& status) {
  return transport::Classify(status, transport::StatusOrigin::kCall, /*idempotent=*/true) ==
         transport::RetryAction::kResend;
}

Status ChecksumError(std::string_view message) {
  return MakeStatus(StatusCode::kDataLoss, message);
}

}  // namespace

Status MoveExports::Register(BucketId bucket, MoveId move, const storage::ExportedRange& exported) {
  Export record{.move = move, .sequence = exported.sequence, .files = {}};
  for (const std::string& path : exported.files) {
    std::error_code ec;
    const uintmax_t bytes = std::filesystem::file_size(path, ec);
    if (ec) return IoError(fmt::format("size of {}: {}", path, ec.message()));
    record.files.push_back(File{.path = path, .bytes = bytes, .crc32c = std::nullopt});
  }
  absl::MutexLock lock(&mu_);
  std::vector<Export>& exports = exports_[bucket];
  std::erase_if(exports,
                [&](const Export& e) { return e.move != move || e.sequence == record.sequence; });
  exports.push_back(std::move(record));
  return OkStatus();
}

void MoveExports::Forget(BucketId bucket) {
  absl::MutexLock lock(&mu_);
  exports_.erase(bucket);
}

void MoveExports::Retain(const std::function<bool(BucketId, MoveId)>& live) {
  absl::MutexLock lock(&mu_);
  for (auto it = exports_.begin(); it != exports_.end();) {
    if (!it->second.empty() && live(it->first, it->second.front().move)) {
      ++it;
    } else {
      exports_.erase(it++);
    }
  }
}

StatusOr<uint32_t> MoveExports::FileChecksum(const File& file) {
  Fd fd(::open(file.path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return Errno("open", file.path);
  uint32_t crc = 0;
  uint64_t offset = 0;
  while (true) {
    SHOAL_ASSIGN_OR_RETURN(std::string block, ReadAt(fd.get(), file.path, offset, kReadBlock));
    if (block.empty()) break;
    crc = Crc32cExtend(crc, block);
    offset += block.size();
  }
  if (offset != file.bytes) {
    return IoError(fmt::format("{} has {} bytes, exported {}", file.path, offset, file.bytes));
  }
  return crc;
}

MoveExports::Export* MoveExports::FindLocked(const transport::FetchMoveFileRequest& request) {
  auto it = exports_.find(request.bucket);
  if (it == exports_.end()) return nullptr;
  for (Export& e : it->second) {
    if (e.move == request.move && e.sequence == request.sequence) return &e;
  }
  return nullptr;
}

StatusOr<transport::FetchMoveFileResponse> MoveExports::Read(
    const transport::FetchMoveFileRequest& request) {
  if (request.max_bytes == 0 || request.max_bytes > transport::kMaxMoveFileChunkBytes) {
    return InvalidArgumentError(fmt::format("max_bytes {} outside [1, {}]", request.max_bytes,
                                            transport::kMaxMoveFileChunkBytes));
  }
  File file;
  uint32_t file_count = 0;
  {
    absl::MutexLock lock(&mu_);
    const Export* found = FindLocked(request);
    if (found == nullptr) {
      return transport::MakeClusterError(
          transport::ClusterError::kStaleMove,
          fmt::format("no export of {} {} at sequence {}", request.move.DebugString(),
                      request.bucket.DebugString(), request.sequence));
    }
    if (request.file_index >= found->files.size()) {
      return NotFoundError(fmt::format("{} {} exported {} files, not file {}",
                                       request.move.DebugString(), request.bucket.DebugString(),
                                       found->files.size(), request.file_index));
    }
    file = found->files[request.file_index];
    file_count = static_cast<uint32_t>(found->files.size());
  }
  if (!file.crc32c.has_value()) {
    // Two first reads at once both compute it: the same value, from an immutable file.
    SHOAL_ASSIGN_OR_RETURN(file.crc32c, FileChecksum(file));
    absl::MutexLock lock(&mu_);
    if (Export* kept = FindLocked(request); kept != nullptr) {
      kept->files[request.file_index].crc32c = file.crc32c;
    }
  }
  if (request.offset > file.bytes) {
    return NotFoundError(
        fmt::format("offset {} past the end of a {}-byte file", request.offset, file.bytes));
  }
  const size_t size =
      static_cast<size_t>(std::min<uint64_t>(request.max_bytes, file.bytes - request.offset));
  Fd fd(::open(file.path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return Errno("open", file.path);
  SHOAL_ASSIGN_OR_RETURN(std::string data, ReadAt(fd.get(), file.path, request.offset, size));
  if (data.size() != size) {
    return IoError(fmt::format("{} is shorter than exported ({} bytes)", file.path, file.bytes));
  }
  const uint32_t chunk_crc32c = Crc32c(data);
  return transport::FetchMoveFileResponse{.data = std::move(data),
                                          .chunk_crc32c = chunk_crc32c,
                                          .file_bytes = file.bytes,
                                          .file_crc32c = *file.crc32c,
                                          .file_count = file_count};
}

std::string StagingDirectory(const std::string& data_dir, MoveId move, BucketId bucket) {
  return fmt::format("{}/moves/{}{}-{}", data_dir, kStagingPrefix, move.DebugString(),
                     bucket.DebugString());
}

Status RemoveStagingDirectories(const std::string& data_dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(data_dir + "/moves", ec);
  if (ec) return IoError(fmt::format("list {}/moves: {}", data_dir, ec.message()));
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (it->path().filename().string().rfind(kStagingPrefix, 0) != 0) continue;
    std::filesystem::remove_all(it->path(), ec);
    if (ec) return IoError(fmt::format("remove {}: {}", it->path().string(), ec.message()));
  }
  if (ec) return IoError(fmt::format("list {}/moves: {}", data_dir, ec.message()));
  return OkStatus();
}

StatusOr<storage::ExportedRange> LinkExportedFiles(const storage::ExportedRange& exported,
                                                   const std::string& directory) {
  std::error_code ec;
  std::filesystem::remove_all(directory, ec);
  if (!ec) std::filesystem::create_directories(directory, ec);
  if (ec) return IoError(fmt::format("create {}: {}", directory, ec.message()));
  storage::ExportedRange linked = exported;
  for (size_t i = 0; i < exported.files.size(); ++i) {
    linked.files[i] = fmt::format("{}/{}-{}", directory, i,
                                  std::filesystem::path(exported.files[i]).filename().string());
    std::filesystem::create_hard_link(exported.files[i], linked.files[i], ec);
    if (ec) {
      const std::string why = ec.message();
      std::filesystem::remove_all(directory, ec);
      return IoError(fmt::format("link {}: {}", exported.files[i], why));
    }
  }
  return linked;
}

namespace {

// One chunk, retried on transient errors; counts the retries.
StatusOr<transport::FetchMoveFileResponse> FetchChunk(
    transport::Runtime& runtime, NodeId source, const transport::FetchMoveFileRequest& request,
    const FetchOptions& options, FetchStats* stats) {
  Status last;
  for (int attempt = 1; attempt <= options.attempts; ++attempt) {
    if (attempt > 1) {
      ++stats->retries;
      SHOAL_RETURN_IF_ERROR(runtime.Sleep(options.retry_pause * (attempt - 1)));
    }
    auto response = runtime.Call(transport::Address::Node(source), request, options.call_timeout);
    if (response.ok()) {
      auto chunk = transport::BodyAs<transport::FetchMoveFileResponse>(std::move(*response));
      if (chunk.ok()) return chunk;
      last = chunk.status();
    } else {
      last = response.status();
    }
    if (!Transient(last)) break;
  }
  return Prefixed(last, fmt::format("fetch file {} of {} from {}", request.file_index,
                                    request.move.DebugString(), source.DebugString()));
}

// Copies file `index` into `path`, checking every chunk and the whole file.
Status FetchFile(transport::Runtime& runtime, NodeId source, MoveId move, BucketId bucket,
                 const storage::ExportedRange& exported, uint32_t index, const std::string& path,
                 const FetchOptions& options, FetchStats* stats) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) return Errno("create", path);
  transport::FetchMoveFileRequest request{.move = move,
                                          .bucket = bucket,
                                          .sequence = exported.sequence,
                                          .file_index = index,
                                          .offset = 0,
                                          .max_bytes = options.chunk_bytes};
  std::optional<std::pair<uint64_t, uint32_t>> whole;  // (bytes, crc32c) the source reported
  uint32_t crc = 0;
  while (true) {
    SHOAL_ASSIGN_OR_RETURN(auto chunk, FetchChunk(runtime, source, request, options, stats));
    if (chunk.file_count != exported.files.size()) {
      return FailedPreconditionError(fmt::format("the source exported {} files, the move has {}",
                                                 chunk.file_count, exported.files.size()));
    }
    if (!whole.has_value()) whole.emplace(chunk.file_bytes, chunk.file_crc32c);
    if (*whole != std::make_pair(chunk.file_bytes, chunk.file_crc32c)) {
      return ChecksumError(fmt::format("file {} changed at the source during the transfer", index));
    }
    if (Crc32c(chunk.data) != chunk.chunk_crc32c) {
      return ChecksumError(
          fmt::format("checksum mismatch in file {} at offset {}", index, request.offset));
    }
    const uint64_t expected =
        std::min<uint64_t>(options.chunk_bytes, whole->first - request.offset);
    if (chunk.data.size() != expected) {
      return ChecksumError(fmt::format("file {} at offset {}: {} bytes, expected {}", index,
                                       request.offset, chunk.data.size(), expected));
    }
    SHOAL_RETURN_IF_ERROR(WriteAll(fd.get(), path, chunk.data));
    crc = Crc32cExtend(crc, chunk.data);
    request.offset += chunk.data.size();
    stats->bytes += chunk.data.size();
    SHOAL_RETURN_IF_ERROR(runtime.Failpoint("destination.after_fetch_chunk"));
    if (request.offset == whole->first) break;
  }
  if (crc != whole->second) {
    return ChecksumError(
        fmt::format("file {}: checksum of the copy differs from the source's", index));
  }
  if (::fsync(fd.get()) != 0) return Errno("sync", path);
  if (!fd.Close()) return Errno("close", path);
  ++stats->files;
  return OkStatus();
}

}  // namespace

StatusOr<storage::ExportedRange> FetchExportedFiles(transport::Runtime& runtime, NodeId source,
                                                    MoveId move, BucketId bucket,
                                                    const storage::ExportedRange& exported,
                                                    const std::string& directory,
                                                    const FetchOptions& options,
                                                    FetchStats* stats) {
  if (options.chunk_bytes == 0 || options.chunk_bytes > transport::kMaxMoveFileChunkBytes ||
      options.attempts < 1) {
    return InvalidArgumentError("fetch options out of range");
  }
  std::error_code ec;
  std::filesystem::remove_all(directory, ec);
  if (!ec) std::filesystem::create_directories(directory, ec);
  if (ec) return IoError(fmt::format("staging directory {}: {}", directory, ec.message()));
  storage::ExportedRange local = exported;
  local.files.clear();
  Status status = OkStatus();
  for (uint32_t i = 0; i < exported.files.size() && status.ok(); ++i) {
    const std::string path = fmt::format("{}/export-{}.sst", directory, i);
    status = FetchFile(runtime, source, move, bucket, exported, i, path, options, stats);
    local.files.push_back(path);
  }
  if (status.ok()) return local;
  // A stopped process leaves the directory to its next incarnation's Open.
  if (status.code() != StatusCode::kCancelled) std::filesystem::remove_all(directory, ec);
  return status;
}

}  // namespace shoal::node
