#include "src/storage/engine_info_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <string>

namespace shoal::storage {
namespace {

// Writes all of `data` or reports failure (a short write on a full or failing disk).
bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// "2026/12/02-14:04:21.123456 12345 " as RocksDB's own LOG lines begin.
std::string LinePrefix() {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  tm local{};
  ::localtime_r(&now.tv_sec, &local);
  char prefix[64];
  const int n = std::snprintf(prefix, sizeof(prefix), "%04d/%02d/%02d-%02d:%02d:%02d.%06ld %ld ",
                              local.tm_year + 1900, local.tm_mon + 1, local.tm_mday, local.tm_hour,
                              local.tm_min, local.tm_sec, now.tv_nsec / 1000,
                              static_cast<long>(::syscall(SYS_gettid)));
  return std::string(prefix, n > 0 ? static_cast<size_t>(n) : 0);
}

}  // namespace

std::shared_ptr<EngineInfoLog> EngineInfoLog::Open(const std::string& directory,
                                                   rocksdb::InfoLogLevel level) {
  std::shared_ptr<EngineInfoLog> log(new EngineInfoLog(directory, level));
  absl::MutexLock lock(&log->mu_);
  log->OpenLocked();
  if (log->bytes_ >= kMaxBytes) log->RollLocked();
  return log;
}

EngineInfoLog::EngineInfoLog(std::string directory, rocksdb::InfoLogLevel level)
    : rocksdb::Logger(level), path_(directory + "/LOG"), old_path_(directory + "/LOG.old") {}

EngineInfoLog::~EngineInfoLog() {
  if (!closed_) {
    rocksdb::Status ignored = Close();
    (void)ignored;
  }
}

rocksdb::Status EngineInfoLog::CloseImpl() {
  absl::MutexLock lock(&mu_);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  shut_ = true;
  return rocksdb::Status::OK();
}

void EngineInfoLog::OpenLocked() {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  bytes_ = 0;
  struct stat st {};
  if (fd_ >= 0 && ::fstat(fd_, &st) == 0) bytes_ = static_cast<uint64_t>(st.st_size);
}

void EngineInfoLog::RollLocked() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  (void)::rename(path_.c_str(), old_path_.c_str());
  OpenLocked();
}

void EngineInfoLog::Logv(const char* format, va_list ap) {
  std::string line = LinePrefix();
  const size_t prefix = line.size();
  char buffer[1024];
  va_list copy;
  va_copy(copy, ap);
  const int n = std::vsnprintf(buffer, sizeof(buffer), format, copy);
  va_end(copy);
  if (n < 0) {
    dropped_lines_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (static_cast<size_t>(n) < sizeof(buffer)) {
    line.append(buffer, static_cast<size_t>(n));
  } else {
    line.resize(prefix + static_cast<size_t>(n) + 1);
    std::vsnprintf(line.data() + prefix, static_cast<size_t>(n) + 1, format, ap);
    line.resize(prefix + static_cast<size_t>(n));
  }
  if (line.back() != '\n') line.push_back('\n');

  absl::MutexLock lock(&mu_);
  if (shut_) return;
  if (fd_ < 0) {
    OpenLocked();
  } else if (bytes_ >= kMaxBytes) {
    RollLocked();
  }
  if (fd_ < 0 || !WriteAll(fd_, line.data(), line.size())) {
    dropped_lines_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  bytes_ += line.size();
}

size_t EngineInfoLog::GetLogFileSize() const {
  absl::MutexLock lock(&mu_);
  return static_cast<size_t>(bytes_);
}

}  // namespace shoal::storage
