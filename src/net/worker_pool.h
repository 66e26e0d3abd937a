#pragma once

// WorkerPool: runs submitted functions on its own threads, for the gRPC callback server
// (grpc_runtime.h), whose callback threads must never block while a Shoal handler may (a node
// waiting for RocksDB or for a newer map, a coordinator waiting for a move).
//
// Contract:
//   - Submit never runs the function on the caller's thread and never waits for it. When no
//     thread is idle it starts a new one, up to max_threads; beyond that the function waits in
//     a FIFO queue until a thread is free (a limit, not an error: the sync server's equivalent
//     is gRPC's own thread quota).
//   - Threads, once started, stay until Shutdown (no thread creation per call: that churn is
//     what the profile of the sync server showed, docs/results/network.md).
//   - Shutdown runs every function already submitted, then joins the threads. Functions
//     submitted after Shutdown are run on the caller's thread, so a late request is still
//     answered. Idempotent; the destructor calls it.
//
// Thread-safety: Submit is thread-safe; Shutdown must not be called from a pool thread.

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace shoal::net {

class WorkerPool {
 public:
  // max_threads >= 1.
  explicit WorkerPool(size_t max_threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Submit(std::function<void()> fn);
  void Shutdown();

  // Threads started so far (for tests).
  [[nodiscard]] size_t threads() const;

 private:
  void Work();

  const size_t max_threads_;
  mutable absl::Mutex mu_;
  absl::CondVar ready_;  // queue_ gained a function, or stopping_ was set
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  size_t idle_ ABSL_GUARDED_BY(mu_) = 0;  // threads waiting for work
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace shoal::net
