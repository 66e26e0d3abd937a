#include "src/net/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace shoal::net {
namespace {

// A gate the test opens once; functions wait on it.
class Gate {
 public:
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    open_cv_.wait(lock, [this] { return open_; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    open_cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable open_cv_;
  bool open_ = false;
};

// Waits (generously: the machine may be loaded) until `done` holds.
template <typename F>
bool WaitFor(F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

TEST(WorkerPoolTest, BlockedFunctionsDoNotHoldUpOthers) {
  WorkerPool pool(8);
  Gate gate;
  std::atomic<int> started{0};
  for (int i = 0; i < 3; ++i) {
    pool.Submit([&] {
      ++started;
      gate.Wait();
    });
  }
  // Three blocked functions each got a thread of their own.
  ASSERT_TRUE(WaitFor([&] { return started.load() == 3; }));
  std::atomic<bool> ran{false};
  pool.Submit([&] { ran = true; });
  EXPECT_TRUE(WaitFor([&] { return ran.load(); }));
  gate.Open();
  pool.Shutdown();
}

TEST(WorkerPoolTest, IdleThreadsAreReused) {
  WorkerPool pool(8);
  for (int i = 0; i < 50; ++i) {
    std::atomic<bool> ran{false};
    pool.Submit([&] { ran = true; });
    ASSERT_TRUE(WaitFor([&] { return ran.load(); }));
  }
  // One function at a time never needs more than a couple of threads (a thread may still be
  // between its function and its wait when the next arrives).
  EXPECT_LE(pool.threads(), 2u);
}

TEST(WorkerPoolTest, OneFunctionPastTheThreadLimitWaitsForAFreeThread) {
  WorkerPool pool(2);
  Gate gate;
  std::atomic<int> started{0};
  for (int i = 0; i < 2; ++i) {
    pool.Submit([&] {
      ++started;
      gate.Wait();
    });
  }
  ASSERT_TRUE(WaitFor([&] { return started.load() == 2; }));
  std::atomic<bool> third{false};
  pool.Submit([&] { third = true; });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(third.load());  // both threads are blocked and no third starts
  EXPECT_EQ(pool.threads(), 2u);
  gate.Open();
  EXPECT_TRUE(WaitFor([&] { return third.load(); }));
  pool.Shutdown();
}

TEST(WorkerPoolTest, ShutdownRunsQueuedFunctionsAndLateOnesInline) {
  WorkerPool pool(1);
  Gate gate;
  std::atomic<int> ran{0};
  pool.Submit([&] {
    gate.Wait();
    ++ran;
  });
  pool.Submit([&] { ++ran; });  // queued behind the blocked one
  gate.Open();
  pool.Shutdown();
  EXPECT_EQ(ran.load(), 2);
  pool.Submit([&] { ++ran; });  // after Shutdown: on this thread
  EXPECT_EQ(ran.load(), 3);
}

}  // namespace
}  // namespace shoal::net
