#pragma once

// CallPool: runs a shard call on another thread, so that an operation can issue two independent
// shard calls at once and wait for the slower (consistent_ops.cc). Threads are created on demand,
// when none is idle, up to kMaxThreads, and then kept; beyond that, calls queue. One process-wide
// pool (Shared) is never destroyed, so a call may still finish during static destruction.
//
// Thread-safe.

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>

namespace shoal::clientside {

class CallPool {
 public:
  static constexpr int kMaxThreads = 64;

  [[nodiscard]] static CallPool& Shared();

  // Runs `f` on a pool thread; the future holds its result.
  template <typename F>
  [[nodiscard]] auto Run(F f) -> std::future<decltype(f())> {
    auto task = std::make_shared<std::packaged_task<decltype(f())()>>(std::move(f));
    auto result = task->get_future();
    Submit([task] { (*task)(); });
    return result;
  }

 private:
  CallPool() = default;
  void Submit(std::function<void()> work);
  void Work();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  int threads_ = 0;
  int idle_ = 0;
};

}  // namespace shoal::clientside
