// GroupSync: every caller returns after a sync that started after its call (its writes are
// durable), and concurrent callers share syncs.

#include "src/storage/group_sync.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace shoal::storage {
namespace {

// A WAL whose "writes" are a counter: a sync makes durable what was written when it started.
struct FakeWal {
  std::atomic<uint64_t> written{0};
  std::atomic<uint64_t> durable{0};
  std::atomic<int> concurrent{0};
  std::atomic<int> most_concurrent{0};
  Status Sync() {
    const int now = ++concurrent;
    int seen = most_concurrent.load();
    while (now > seen && !most_concurrent.compare_exchange_weak(seen, now)) {
    }
    const uint64_t snapshot = written.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    uint64_t old = durable.load();
    while (snapshot > old && !durable.compare_exchange_weak(old, snapshot)) {
    }
    --concurrent;
    return OkStatus();
  }
};

TEST(GroupSyncTest, EveryCallerReturnsAfterASyncThatCoversItsWrites) {
  FakeWal wal;
  GroupSync group([&] { return wal.Sync(); });
  constexpr int kThreads = 16;
  constexpr int kCalls = 20;
  std::atomic<int> uncovered{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kCalls; ++i) {
        const uint64_t mine = ++wal.written;
        EXPECT_TRUE(group.Sync().ok());
        if (wal.durable.load() < mine) ++uncovered;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(uncovered.load(), 0);
  EXPECT_EQ(wal.most_concurrent.load(), 1) << "syncs run one at a time";
  // Shared: far fewer syncs than calls (each sync serves the callers that queued meanwhile).
  EXPECT_LT(group.syncs(), static_cast<uint64_t>(kThreads * kCalls));
  EXPECT_GE(group.syncs(), static_cast<uint64_t>(kCalls));
}

TEST(GroupSyncTest, AFailedSyncIsReturnedToTheCallersItServed) {
  bool fail = true;
  GroupSync group([&] { return fail ? UnavailableError("disk gone") : OkStatus(); });
  EXPECT_EQ(group.Sync().code(), StatusCode::kUnavailable);
  fail = false;
  EXPECT_TRUE(group.Sync().ok()) << "a later call runs a sync of its own";
  EXPECT_EQ(group.syncs(), 2u);
}

}  // namespace
}  // namespace shoal::storage
