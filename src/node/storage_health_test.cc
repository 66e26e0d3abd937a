// StorageHealth (node/storage_health.h): when a node's store can no longer be trusted and the
// node's process must stop. The disk is a test file system over the store's directory that can
// fill, fail writes with EIO, or hold every sync (a stalled disk).

#include "src/node/storage_health.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "src/common/steady_clock.h"
#include "src/storage/errors.h"
#include "src/storage/full_disk_fs.h"
#include "src/storage/test_support.h"

namespace shoal::node {
namespace {

using storage::ErrorReason;
using storage::kTestCollection;

constexpr int64_t kSecondNanos = 1'000'000'000;

class StorageHealthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    storage::StoreOptions options = storage::TestOptions(path_);
    options.env = env_.get();
    options.sync = storage::SyncPolicy::kEveryWrite;
    options.min_free_disk_bytes = 1u << 20;
    // The guard trusts its reading for an hour, so the engine itself meets the full disk.
    options.disk_check_interval = std::chrono::hours(1);
    store_ = storage::OpenTestStore(options);
    ASSERT_NE(store_, nullptr);
  }
  void TearDown() override {
    disk_->SetFull(false);
    disk_->SetBroken(false);
    disk_->SetSyncsStall(false);
  }

  [[nodiscard]] std::optional<Status> Failure(int64_t now = SteadyNanos()) const {
    return StorageFailure(*store_, now, options_);
  }

  storage::TempDir dir_;
  const std::string path_ = dir_.Sub("db");
  std::shared_ptr<storage::FullDiskFileSystem> disk_ =
      std::make_shared<storage::FullDiskFileSystem>(dir_.path());
  std::unique_ptr<rocksdb::Env> env_ = storage::FullDiskFileSystem::NewEnv(disk_);
  std::unique_ptr<storage::BucketStore> store_;
  StorageHealthOptions options_{.max_sync_duration = std::chrono::seconds(20)};
};

TEST_F(StorageHealthTest, AHealthyStoreIsTrusted) {
  SHOAL_ASSERT_OK(store_->Upsert(kTestCollection, "a", storage::DocBody(1)).status());
  EXPECT_FALSE(Failure().has_value());
  EXPECT_FALSE(StorageDirectoryFailure(*store_).has_value());
}

// A disk that fails a write with EIO is not written again: the failure stays after the disk
// answers again, and names the directory and the error.
TEST_F(StorageHealthTest, AWriteTheDiskFailedIsAFailureForGood) {
  disk_->SetBroken(true);
  const Status refused = store_->Upsert(kTestCollection, "a", storage::DocBody(1)).status();
  EXPECT_FALSE(refused.ok());
  EXPECT_FALSE(storage::Is(refused, ErrorReason::kNoSpace)) << refused;
  disk_->SetBroken(false);
  const std::optional<Status> failure = Failure();
  ASSERT_TRUE(failure.has_value());
  EXPECT_TRUE(storage::Is(*failure, ErrorReason::kIo)) << *failure;
  EXPECT_NE(failure->ToString().find(path_), std::string::npos) << *failure;
  EXPECT_NE(failure->ToString().find("input/output error"), std::string::npos) << *failure;
  EXPECT_TRUE(Failure().has_value()) << "asked again";
}

// With periodic syncs (`shoal node --no-sync`) a WAL sync the disk failed is a failure too,
// with no write after it: retried at the next tick it could "succeed" once the kernel has
// dropped the pages it could not write (PostgreSQL's fsync lesson).
TEST(StorageHealthPeriodicTest, ABackgroundSyncTheDiskFailedIsAFailureForGood) {
  storage::TempDir dir;
  auto disk = std::make_shared<storage::FullDiskFileSystem>(dir.path());
  std::unique_ptr<rocksdb::Env> env = storage::FullDiskFileSystem::NewEnv(disk);
  storage::StoreOptions options = storage::TestOptions(dir.Sub("db"));
  options.env = env.get();
  options.sync = storage::SyncPolicy::kPeriodic;
  options.sync_interval = std::chrono::milliseconds(10);
  std::unique_ptr<storage::BucketStore> store = storage::OpenTestStore(options);
  ASSERT_NE(store, nullptr);
  SHOAL_ASSERT_OK(store->Upsert(kTestCollection, "a", storage::DocBody(1)).status());
  disk->SetBroken(true);
  std::optional<Status> failure;
  for (int i = 0; i < 500 && !failure.has_value(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    failure = store->EngineFailure();
  }
  disk->SetBroken(false);
  ASSERT_TRUE(failure.has_value()) << "no failure 5 s after the disk broke";
  EXPECT_TRUE(storage::Is(*failure, ErrorReason::kIo)) << *failure;
  EXPECT_NE(failure->ToString().find("sync"), std::string::npos) << *failure;
  EXPECT_TRUE(store->engine_stopped());
  EXPECT_FALSE(store->Close().ok()) << "closed as if the WAL were synced";
}

// A full disk is not a failure: the store refuses writes and resumes in place once space is
// back (docs/design/storage.md, "A full disk").
TEST_F(StorageHealthTest, AFullDiskIsNotAFailure) {
  // The guard reads the disk once here and trusts it for an hour: the engine meets the full
  // disk itself and stops.
  SHOAL_ASSERT_OK(store_->Upsert(kTestCollection, "a", storage::DocBody(1)).status());
  disk_->SetFull(true);
  const Status refused = store_->Upsert(kTestCollection, "a", storage::DocBody(1)).status();
  EXPECT_TRUE(storage::Is(refused, ErrorReason::kNoSpace)) << refused;
  EXPECT_TRUE(store_->engine_stopped());
  EXPECT_FALSE(Failure().has_value());
}

// A WAL sync, or an engine write, that has not returned within max_sync_duration is a stalled
// disk; one that is merely running is not, nor is one that returned. `stalled_since` reads the
// store's clock of the kind under test; `call` is the store call that the disk holds.
void ExpectAStallPastTheLimitIsAFailure(storage::BucketStore& store,
                                        storage::FullDiskFileSystem& disk,
                                        const std::function<int64_t()>& stalled_since,
                                        const std::function<void()>& call,
                                        const std::string& what) {
  const StorageHealthOptions options{.max_sync_duration = std::chrono::seconds(20)};
  EXPECT_EQ(stalled_since(), 0);
  disk.SetSyncsStall(true);
  const int64_t before = SteadyNanos();
  const uint64_t stalled_before = disk.stalled_syncs();
  std::thread held(call);
  while (disk.stalled_syncs() == stalled_before) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const int64_t since = stalled_since();
  ASSERT_GE(since, before);
  EXPECT_FALSE(StorageFailure(store, since + 19 * kSecondNanos, options).has_value());
  const std::optional<Status> stalled = StorageFailure(store, since + 21 * kSecondNanos, options);
  EXPECT_TRUE(stalled.has_value());
  if (stalled.has_value()) {
    EXPECT_NE(stalled->ToString().find(what + " under"), std::string::npos) << *stalled;
    EXPECT_NE(stalled->ToString().find("has not returned for 21000 ms"), std::string::npos)
        << *stalled;
  }
  EXPECT_FALSE(StorageFailure(store, since + 21 * kSecondNanos,
                              StorageHealthOptions{.max_sync_duration = {}})
                   .has_value())
      << "0 turns the limit off";
  disk.SetSyncsStall(false);
  held.join();
  EXPECT_EQ(stalled_since(), 0);
  EXPECT_FALSE(StorageFailure(store, since + 21 * kSecondNanos, options).has_value());
}

// A synced write (the engine's own group commit, SyncPolicy::kEveryWrite) held by the disk.
TEST_F(StorageHealthTest, AWriteStalledPastTheLimitIsAFailure) {
  ExpectAStallPastTheLimitIsAFailure(
      *store_, *disk_, [&] { return store_->write_waiting_since_nanos(); },
      [&] { (void)store_->Upsert(kTestCollection, "a", storage::DocBody(1)).status(); }, "a write");
}

// A shared WAL sync (GroupSync, after deferred writes) held by the disk.
TEST_F(StorageHealthTest, ASyncStalledPastTheLimitIsAFailure) {
  SHOAL_ASSERT_OK(store_->Upsert(kTestCollection, "a", storage::DocBody(1)).status());
  ExpectAStallPastTheLimitIsAFailure(
      *store_, *disk_, [&] { return store_->sync_running_since_nanos(); },
      [&] { (void)store_->SyncWal(); }, "a WAL sync");
}

// The store's directory removed (its files stay open) or replaced by another one.
TEST_F(StorageHealthTest, ADirectoryRemovedOrReplacedIsAFailure) {
  const std::string aside = dir_.Sub("aside");
  std::filesystem::rename(path_, aside);
  std::optional<Status> removed = StorageDirectoryFailure(*store_);
  ASSERT_TRUE(removed.has_value());
  EXPECT_NE(removed->ToString().find("was removed"), std::string::npos) << *removed;
  EXPECT_NE(removed->ToString().find(path_), std::string::npos) << *removed;

  std::filesystem::create_directory(path_);
  std::optional<Status> replaced = StorageDirectoryFailure(*store_);
  ASSERT_TRUE(replaced.has_value());
  EXPECT_NE(replaced->ToString().find("was replaced"), std::string::npos) << *replaced;

  std::filesystem::remove(path_);
  std::filesystem::rename(aside, path_);
  EXPECT_FALSE(StorageDirectoryFailure(*store_).has_value()) << "the same directory again";
}

}  // namespace
}  // namespace shoal::node
