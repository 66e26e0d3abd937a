// A node's disk fails in the kernel, between real processes (docs/design/storage.md, "A failing
// disk"; docs/design/replication.md §4.9). K = 3 on three nodes with writers on every bucket; n3
// keeps its data on an ext4 file system of its own (LoopDisk), and that file system fails:
//   - it records an error and goes read-only (errors=remount-ro, Debian's default): n3's next
//     write fails with EROFS, and n3 stops itself (exit status 74); its buckets fail over, writes
//     go on, and with the disk replaced (an empty directory) n3 is rebuilt and serves again;
//   - it freezes (fsfreeze: every write blocks, as on a disk that stops answering): n3 stops
//     itself once a write has waited past --max-sync-stall-ms; its threads blocked in the kernel
//     keep the process from ending until the thaw, and its buckets fail over meanwhile. Thawed,
//     n3 exits; restarted on its intact disk it resumes its copies.
// Each case ends with three copies of every bucket and every key read back with its last
// acknowledged value (or a later write's). Times are printed, never asserted. The cases need root
// (to mount a loop device) and skip, saying so, without it.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>

#include "tests/cluster/loop_disk.h"
#include "tests/cluster/replication_fixture.h"

namespace shoal::cluster_test {
namespace {

constexpr uint32_t kVictim = 3;
constexpr int kStallBoundMs = 2'000;

class DiskFailureTest : public ReplicationTest {
 protected:
  void TearDown() override {
    reader_.reset();  // stops reading before the cluster stops
    disk_.reset();    // thaws a frozen disk, so that the node blocked on it can end
    ReplicationTest::TearDown();
  }

  // n3's data directory on a LoopDisk of its own (a symlink from where the cluster keeps it).
  void PutVictimOnItsOwnDisk() {
    auto disk = LoopDisk::Create(cluster_->dir() + "/disk-3", 512);
    if (!disk.ok()) GTEST_SKIP() << "no loop-mounted file system here: " << disk.status();
    disk_ = std::move(*disk);
    std::error_code ec;
    std::filesystem::create_directories(disk_->mount_point() + "/node-3", ec);
    ASSERT_FALSE(ec) << ec.message();
    std::filesystem::create_directory_symlink(disk_->mount_point() + "/node-3", VictimDir(), ec);
    ASSERT_FALSE(ec) << ec.message();
  }

  [[nodiscard]] std::string VictimDir() const {
    return fmt::format("{}/node-{}", cluster_->dir(), kVictim);
  }

  // Until n3 exits (within `seconds`); fails if any other process does.
  std::optional<Exit> AwaitVictimExit(int seconds) {
    const auto until = Clock::now() + std::chrono::seconds(seconds);
    while (Clock::now() < until) {
      for (const Exit& exit : cluster_->Reap()) {
        EXPECT_EQ(exit.id, kVictim) << "process " << exit.id << " exited: " << exit.status;
        if (exit.id == kVictim) return exit;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return std::nullopt;
  }

  static bool ExitedForItsDisk(const Exit& exit) {
    return WIFEXITED(exit.status) && WEXITSTATUS(exit.status) == 74;
  }

  // The cluster with writers on every bucket and a reader checking for stale reads; n3's store
  // and the buckets it leads as they are now.
  void StartWithWriters() {
    ASSERT_NO_FATAL_FAILURE(StartCluster(3));
    ASSERT_NO_FATAL_FAILURE(StartWriters());
    const cluster::ShardMapPtr before = Map();
    ASSERT_NE(before, nullptr);
    old_store_ = before->FindNode(NodeId(kVictim))->store_id;
    led_ = PrimariesOf(*before, NodeId(kVictim));
    ASSERT_FALSE(led_.empty());
    reader_ = StartStaleReader(*before);
  }

  std::unique_ptr<LoopDisk> disk_;
  uint64_t old_store_ = 0;
  std::vector<BucketId> led_;
  std::unique_ptr<StaleReads> reader_;
};

TEST_F(DiskFailureTest, FileSystemGoneReadOnlyStopsTheNodeWhichIsRebuiltOnANewDisk) {
  ASSERT_NO_FATAL_FAILURE(PutVictimOnItsOwnDisk());
  if (disk_ == nullptr) return;  // skipped
  ASSERT_NO_FATAL_FAILURE(StartWithWriters());

  ASSERT_TRUE(disk_->TriggerError().ok());
  const Clock::time_point failed = Clock::now();
  const std::optional<Exit> stopped = AwaitVictimExit(30);
  ASSERT_TRUE(stopped.has_value()) << "n3 still runs 30 s after its file system went read-only";
  fmt::print("[ measure ] file system read-only -> the node stopped itself: {} ms\n",
             MillisSince(failed));
  EXPECT_TRUE(ExitedForItsDisk(*stopped)) << "wait status " << stopped->status;
  EXPECT_TRUE(cluster_->LogShows(kVictim, "node.storage_failed"));
  EXPECT_TRUE(cluster_->LogShows(kVictim, "Read-only file system"));
  MeasureWritesBack("file system read-only", led_, failed);

  // The disk is replaced: n3 starts on an empty directory and is rebuilt from the other copies.
  ASSERT_TRUE(disk_->Unmount().ok());
  std::error_code ec;
  std::filesystem::remove(VictimDir(), ec);
  ASSERT_FALSE(ec) << ec.message();
  std::filesystem::create_directory(VictimDir(), ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_NO_FATAL_FAILURE(RestartAndAwaitRebuilt(NodeId(kVictim), old_store_));
  reader_->ExpectNoneStale();
  ExpectNothingLost();
}

TEST_F(DiskFailureTest, FrozenFileSystemStopsTheNodeWhichResumesItsCopiesAfterTheThaw) {
  ASSERT_NO_FATAL_FAILURE(PutVictimOnItsOwnDisk());
  if (disk_ == nullptr) return;  // skipped
  cluster_->SetNodeArgs(kVictim, {"--max-sync-stall-ms", std::to_string(kStallBoundMs)});
  ASSERT_NO_FATAL_FAILURE(StartWithWriters());

  ASSERT_TRUE(disk_->Freeze().ok());
  const Clock::time_point frozen = Clock::now();
  bool logged = false;
  for (const auto until = frozen + std::chrono::seconds(30); !logged && Clock::now() < until;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    logged = cluster_->LogShows(kVictim, "node.storage_failed");
  }
  ASSERT_TRUE(logged) << "n3 did not stop itself within 30 s of its disk freezing";
  fmt::print("[ measure ] disk frozen -> the node stopped itself: {} ms (bound {} ms)\n",
             MillisSince(frozen), kStallBoundMs);
  // Writes to the buckets n3 led go on elsewhere while its threads stay blocked on the disk.
  MeasureWritesBack("disk frozen", led_, frozen);
  ASSERT_NO_FATAL_FAILURE(AwaitWrites(AllBuckets(), 50, 60));

  ASSERT_TRUE(disk_->Thaw().ok());
  const std::optional<Exit> stopped = AwaitVictimExit(30);
  ASSERT_TRUE(stopped.has_value()) << "n3 still runs 30 s after the thaw";
  EXPECT_TRUE(ExitedForItsDisk(*stopped)) << "wait status " << stopped->status;

  // The disk is intact: n3 comes back with its store and resumes its copies.
  ASSERT_TRUE(cluster_->Restart(kVictim).ok());
  ASSERT_NO_FATAL_FAILURE(AwaitFullyReplicated(90));
  const cluster::ShardMapPtr after = Map();
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(after->FindNode(NodeId(kVictim))->store_id, old_store_)
      << "n3's intact store was replaced";
  ASSERT_NO_FATAL_FAILURE(AwaitWrites(AllBuckets(), 50, 60));
  reader_->ExpectNoneStale();
  ExpectNothingLost();
}

}  // namespace
}  // namespace shoal::cluster_test
