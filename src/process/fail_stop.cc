#include "src/process/fail_stop.h"

#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "src/common/log.h"

namespace shoal::process {
namespace {

// Seconds the exit may take to write its log line before SIGALRM ends the process anyway.
constexpr unsigned kExitAlarmSeconds = 5;

}  // namespace

void ShutDownSockets() {
  DIR* fds = ::opendir("/proc/self/fd");
  if (fds == nullptr) return;
  const int listing = ::dirfd(fds);
  while (const dirent* entry = ::readdir(fds)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd <= STDERR_FILENO || fd == listing) continue;
    struct stat st {};
    if (::fstat(static_cast<int>(fd), &st) == 0 && S_ISSOCK(st.st_mode)) {
      ::shutdown(static_cast<int>(fd), SHUT_RDWR);
    }
  }
  ::closedir(fds);
}

FailStop::FailStop(std::string event, std::string then, std::vector<Probe> probes,
                   std::chrono::milliseconds interval, OnFailure on_failure)
    : event_(std::move(event)),
      then_(std::move(then)),
      interval_(interval),
      on_failure_(std::move(on_failure)),
      probes_(std::move(probes)) {
  threads_.reserve(probes_.size());
  for (const Probe& probe : probes_) threads_.emplace_back([this, &probe] { Run(probe); });
}

FailStop::~FailStop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void FailStop::Run(const Probe& probe) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    lock.unlock();
    if (std::optional<Status> failure = probe(); failure.has_value()) Fail(*failure);
    lock.lock();
    cv_.wait_for(lock, interval_, [this] { return stopping_; });
  }
}

void FailStop::Fail(const Status& failure) {
  if (failed_.exchange(true)) return;
  if (on_failure_) {
    on_failure_(failure);
    return;
  }
  ::alarm(kExitAlarmSeconds);
  ShutDownSockets();
  log::Error(event_, {{"error", failure.ToString()},
                      {"exit_status", int64_t{kExitStorageFailed}},
                      {"then", then_}});
  std::_Exit(kExitStorageFailed);
}

}  // namespace shoal::process
