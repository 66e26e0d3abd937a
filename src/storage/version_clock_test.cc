#include "src/storage/version_clock.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace shoal::storage {
namespace {

TEST(VersionClockTest, ReservesBeforeHandingOut) {
  std::vector<uint64_t> persisted;
  VersionClock clock(0, 10, [&](uint64_t r) {
    persisted.push_back(r);
    return OkStatus();
  });
  EXPECT_EQ(clock.Last(), 0u);
  EXPECT_EQ(*clock.Allocate(), 1u);
  ASSERT_EQ(persisted.size(), 1u);
  EXPECT_GE(persisted.back(), 1u);
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(clock.Allocate().ok());
  EXPECT_EQ(clock.Last(), 31u);
  EXPECT_GE(persisted.back(), 31u);
  EXPECT_LE(persisted.size(), 4u);
}

TEST(VersionClockTest, RestartsAboveTheReservation) {
  uint64_t reserved = 0;
  auto persist = [&](uint64_t r) {
    reserved = r;
    return OkStatus();
  };
  {
    VersionClock clock(0, 100, persist);
    ASSERT_TRUE(clock.Allocate(5).ok());
  }
  const uint64_t recovered = reserved;
  VersionClock reopened(recovered, 100, persist);
  EXPECT_GT(*reopened.Allocate(), recovered);
}

TEST(VersionClockTest, ObserveLiftsTheClockDurably) {
  uint64_t reserved = 0;
  VersionClock clock(0, 10, [&](uint64_t r) {
    reserved = r;
    return OkStatus();
  });
  ASSERT_TRUE(clock.Observe(1000).ok());
  EXPECT_GE(reserved, 1000u);
  EXPECT_EQ(*clock.Allocate(), 1001u);
  ASSERT_TRUE(clock.Observe(5).ok());  // older: no effect
  EXPECT_EQ(*clock.Allocate(), 1002u);
}

TEST(VersionClockTest, FailedReservationIsReported) {
  VersionClock clock(0, 10, [](uint64_t) { return InternalError("disk full"); });
  EXPECT_FALSE(clock.Allocate().ok());
}

TEST(VersionClockTest, ConcurrentAllocationsAreUnique) {
  VersionClock clock(0, 64, [](uint64_t) { return OkStatus(); });
  std::vector<std::vector<uint64_t>> got(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5000; ++i) got[t].push_back(*clock.Allocate());
    });
  }
  for (auto& th : threads) th.join();
  std::vector<uint64_t> all = got[0];
  all.insert(all.end(), got[1].begin(), got[1].end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::unique(all.begin(), all.end()), all.end());
  EXPECT_EQ(clock.Last(), 10000u);
}

}  // namespace
}  // namespace shoal::storage
