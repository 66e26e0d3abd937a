// DiskSpaceGuard on a fake disk: when it reads free space, what it admits between readings, and
// what it answers when the reading fails.

#include "src/storage/disk_space_guard.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>

#include "src/storage/errors.h"

namespace shoal::storage {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;

// A disk whose free space the test sets, counting the guard's readings.
struct FakeDisk {
  std::atomic<uint64_t> free{0};
  std::atomic<int> readings{0};
  std::atomic<bool> broken{false};

  DiskSpaceGuard::FreeSpaceReader Reader() {
    return [this]() -> StatusOr<uint64_t> {
      readings.fetch_add(1);
      if (broken.load()) return UnavailableError("statvfs failed");
      return free.load();
    };
  }
};

TEST(DiskSpaceGuardTest, AReserveOfZeroAdmitsEverythingWithoutReading) {
  FakeDisk disk;
  DiskSpaceGuard guard(disk.Reader(), "/d", {.reserve_bytes = 0, .recheck_interval = hours(1)});
  EXPECT_TRUE(guard.Admit(uint64_t{1} << 40).ok());
  EXPECT_EQ(disk.readings.load(), 0);
}

TEST(DiskSpaceGuardTest, RefusesAWriteThatWouldEatIntoTheReserve) {
  FakeDisk disk;
  disk.free = 1000;
  DiskSpaceGuard guard(disk.Reader(), "/d", {.reserve_bytes = 500, .recheck_interval = hours(1)});
  EXPECT_TRUE(guard.Admit(200).ok());
  EXPECT_EQ(guard.last_free_bytes(), 1000u);
  disk.free = 800;                          // the write landed
  const Status refused = guard.Admit(400);  // past half the margin: read again; 800 - 400 < 500
  EXPECT_TRUE(Is(refused, ErrorReason::kNoSpace)) << refused;
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("/d"), std::string_view::npos) << refused;
  EXPECT_EQ(guard.refused(), 1u);
  // A refused write admitted nothing; what fits in the margin still goes.
  EXPECT_TRUE(guard.Admit(300).ok());
  EXPECT_EQ(guard.refused(), 1u);
}

TEST(DiskSpaceGuardTest, ReadsAgainOnceHalfTheMarginIsAdmittedWithoutWaitingForTheInterval) {
  FakeDisk disk;
  disk.free = 10'000;
  DiskSpaceGuard guard(disk.Reader(), "/d", {.reserve_bytes = 1000, .recheck_interval = hours(1)});
  // Margin 9000: up to 4500 bytes go on one reading.
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(guard.Admit(1000).ok()) << i;
  EXPECT_EQ(disk.readings.load(), 1);
  // Meanwhile the disk filled (this store's writes and another process's): the next write that
  // would pass half the margin reads again and is refused.
  disk.free = 1500;
  EXPECT_TRUE(Is(guard.Admit(1000), ErrorReason::kNoSpace));
  EXPECT_EQ(disk.readings.load(), 2);
  // Space is freed: nothing needs a restart, the next reading admits again.
  disk.free = 1'000'000;
  EXPECT_TRUE(guard.Admit(300).ok());  // past half the 500 the last reading left: read again
  EXPECT_EQ(disk.readings.load(), 3);
  EXPECT_TRUE(guard.Admit(100).ok());
  EXPECT_EQ(disk.readings.load(), 3);
}

TEST(DiskSpaceGuardTest, ReadsAgainAfterTheInterval) {
  FakeDisk disk;
  disk.free = 1'000'000;
  DiskSpaceGuard guard(disk.Reader(), "/d",
                       {.reserve_bytes = 1000, .recheck_interval = milliseconds(0)});
  EXPECT_TRUE(guard.Admit(10).ok());
  disk.free = 999;  // another process filled the disk
  EXPECT_TRUE(Is(guard.Admit(10), ErrorReason::kNoSpace));
  EXPECT_TRUE(Is(guard.Admit(0), ErrorReason::kNoSpace)) << "below the reserve, even 0 bytes";
  disk.free = 1'000'000;
  EXPECT_TRUE(guard.Admit(10).ok());
  EXPECT_EQ(disk.readings.load(), 4);
}

TEST(DiskSpaceGuardTest, AReadingForALoadReportIsFreshAndServesTheNextWrites) {
  FakeDisk disk;
  disk.free = 1000;
  DiskSpaceGuard guard(disk.Reader(), "/d", {.reserve_bytes = 500, .recheck_interval = hours(1)});
  EXPECT_EQ(guard.reserve_bytes(), 500u);
  ASSERT_TRUE(guard.Admit(100).ok());
  disk.free = 600;  // another process wrote 400 bytes
  auto free = guard.ReadFreeBytes();
  ASSERT_TRUE(free.ok()) << free.status();
  EXPECT_EQ(*free, 600u);
  EXPECT_EQ(disk.readings.load(), 2);
  // The writes decide on that reading: 600 - 200 < 500.
  EXPECT_TRUE(Is(guard.Admit(200), ErrorReason::kNoSpace));
  disk.broken = true;
  EXPECT_FALSE(guard.ReadFreeBytes().ok());
}

TEST(DiskSpaceGuardTest, AdmitsWhenTheReadingFails) {
  FakeDisk disk;
  disk.broken = true;
  DiskSpaceGuard guard(disk.Reader(), "/d", {.reserve_bytes = 1000, .recheck_interval = hours(1)});
  EXPECT_TRUE(guard.Admit(1'000'000).ok());
  EXPECT_TRUE(guard.Admit(1'000'000).ok());
  EXPECT_EQ(disk.readings.load(), 1) << "a failed reading is trusted for the interval too";
  EXPECT_EQ(guard.refused(), 0u);
}

}  // namespace
}  // namespace shoal::storage
