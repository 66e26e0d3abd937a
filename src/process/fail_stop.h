#pragma once

// FailStop: a server process that stops itself once its disk can no longer be trusted (a node's
// store, node/storage_health.h; a coordinator's embedded metadata directory), so that the rest
// of the cluster takes over its work and whatever supervises it (`shoal local`, systemd)
// restarts it on what the disk still holds. It exits at once, as a crash would: no clean close,
// which would sync and flush through the failed disk and could hang on a stalled one.
//
// Each probe runs on a thread of its own, every `interval`: a probe that blocks (a stat on a
// hung disk) holds up only itself. The first failure any probe reports is logged (the event,
// at error level, with the error) and the process exits with kExitStorageFailed; an alarm of a
// few seconds first ends the process even if writing the log line blocks on the same disk.
// Before either, every socket of the process is shut down (ShutDownSockets): a process whose
// threads are blocked on a stalled disk cannot finish exiting, and until it does its
// connections stay open and its peers would learn of the stop only by their timeouts.
//
// Thread-safety: constructed and destroyed by one thread; the probes must be thread-safe.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "src/common/status.h"

namespace shoal::process {

// The exit status of a process stopped by its FailStop (sysexits.h's EX_IOERR).
inline constexpr int kExitStorageFailed = 74;

// Shuts down (both directions) every socket the process holds except descriptors 0-2, which
// may be a log's socket (a journal), so that each peer sees the connection end now.
void ShutDownSockets();

class FailStop {
 public:
  using Probe = std::function<std::optional<Status>()>;
  // What is done with the first failure found; by default, log `event` and exit.
  using OnFailure = std::function<void(const Status&)>;

  // `event` names the log line and `then` says in it what follows for the cluster.
  FailStop(std::string event, std::string then, std::vector<Probe> probes,
           std::chrono::milliseconds interval, OnFailure on_failure = {});
  ~FailStop();  // stops the probes' threads and waits for them

  FailStop(const FailStop&) = delete;
  FailStop& operator=(const FailStop&) = delete;

 private:
  void Run(const Probe& probe);
  void Fail(const Status& failure);

  const std::string event_;
  const std::string then_;
  const std::chrono::milliseconds interval_;
  const OnFailure on_failure_;
  const std::vector<Probe> probes_;
  std::atomic<bool> failed_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace shoal::process
