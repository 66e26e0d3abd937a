#include "src/net/worker_pool.h"

#include <algorithm>

namespace shoal::net {

WorkerPool::WorkerPool(size_t max_threads) : max_threads_(std::max<size_t>(max_threads, 1)) {}

WorkerPool::~WorkerPool() { Shutdown(); }

void WorkerPool::Submit(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      queue_.push_back(std::move(fn));
      // Every queued function needs a thread of its own unless enough are idle: a function
      // that blocks must not hold up the ones queued behind it.
      if (queue_.size() > idle_ && threads_.size() < max_threads_) {
        threads_.emplace_back([this] { Work(); });
      } else {
        ready_.notify_one();
      }
      return;
    }
  }
  fn();
}

void WorkerPool::Shutdown() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  ready_.notify_all();
  for (auto& thread : threads) thread.join();
}

size_t WorkerPool::threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return threads_.size();
}

void WorkerPool::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    ++idle_;
    ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) return;  // stopping, and nothing left to run
    std::function<void()> fn = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    fn();
    lock.lock();
  }
}

}  // namespace shoal::net
