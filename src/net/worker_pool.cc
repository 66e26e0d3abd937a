#include "src/net/worker_pool.h"

#include <algorithm>

namespace shoal::net {

WorkerPool::WorkerPool(size_t max_threads) : max_threads_(std::max<size_t>(max_threads, 1)) {}

WorkerPool::~WorkerPool() { Shutdown(); }

void WorkerPool::Submit(std::function<void()> fn) {
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      queue_.push_back(std::move(fn));
      // Every queued function needs a thread of its own unless enough are idle: a function
      // that blocks must not hold up the ones queued behind it.
      if (queue_.size() > idle_ && threads_.size() < max_threads_) {
        threads_.emplace_back([this] { Work(); });
      } else {
        ready_.Signal();
      }
      return;
    }
  }
  fn();
}

void WorkerPool::Shutdown() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  ready_.SignalAll();
  for (auto& thread : threads) thread.join();
}

size_t WorkerPool::threads() const {
  absl::MutexLock lock(&mu_);
  return threads_.size();
}

void WorkerPool::Work() {
  absl::MutexLock lock(&mu_);
  while (true) {
    ++idle_;
    while (!stopping_ && queue_.empty()) ready_.Wait(&mu_);
    --idle_;
    if (queue_.empty()) return;  // stopping, and nothing left to run
    std::function<void()> fn = std::move(queue_.front());
    queue_.pop_front();
    mu_.Unlock();
    fn();
    mu_.Lock();
  }
}

}  // namespace shoal::net
