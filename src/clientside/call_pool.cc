#include "src/clientside/call_pool.h"

#include <thread>

namespace shoal::clientside {

CallPool& CallPool::Shared() {
  static CallPool* pool = new CallPool();  // never destroyed: its threads never stop
  return *pool;
}

void CallPool::Submit(std::function<void()> work) {
  std::lock_guard lock(mu_);
  queue_.push_back(std::move(work));
  if (idle_ < static_cast<int>(queue_.size()) && threads_ < kMaxThreads) {
    ++threads_;
    std::thread([this] { Work(); }).detach();
  } else {
    cv_.notify_one();
  }
}

void CallPool::Work() {
  std::unique_lock lock(mu_);
  for (;;) {
    ++idle_;
    cv_.wait(lock, [&] { return !queue_.empty(); });
    --idle_;
    std::function<void()> work = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    work();
    lock.lock();
  }
}

}  // namespace shoal::clientside
