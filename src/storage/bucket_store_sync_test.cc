// WalSync::kDeferred: a deferred write is in the WAL but not durable until SyncWal, which makes
// every deferred write before it durable with one sync. A "machine crash" is a copy of the
// store's directory with each WAL file cut to its synced length (sync_tracking_fs.h).

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "src/storage/bucket_store.h"
#include "src/storage/errors.h"
#include "src/storage/sync_tracking_fs.h"
#include "src/storage/test_support.h"

namespace shoal::storage {
namespace {

constexpr CollectionId kC = kTestCollection;
constexpr int kWrites = 64;

// Opens what a machine crash would have left of `store`'s directory, as a new store.
std::unique_ptr<BucketStore> OpenCrashCopy(const SyncTrackingFileSystem& fs, const TempDir& dir,
                                           const std::string& name) {
  const Status copied = fs.CopyDurable(dir.Sub("db"), dir.Sub(name));
  EXPECT_TRUE(copied.ok()) << copied;
  StoreOptions options = TestOptions(dir.Sub(name));
  options.create_if_missing = false;
  return OpenTestStore(options);
}

// A store that syncs every configured write, on a file system that counts WAL syncs, after one
// warm-up write (the first write also reserves a block of versions: a synced write of its own).
class WalSyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions options = TestOptions(dir_.Sub("db"));
    options.sync = SyncPolicy::kEveryWrite;
    options.env = env_.get();
    store_ = OpenTestStore(options);
    ASSERT_NE(store_, nullptr);
    SHOAL_ASSERT_OK(store_->Upsert(kC, "warm-up", DocBody(0)).status());
  }

  // Destroyed in reverse order: the store closes before its Env goes.
  TempDir dir_;
  std::shared_ptr<SyncTrackingFileSystem> fs_ = std::make_shared<SyncTrackingFileSystem>();
  std::unique_ptr<rocksdb::Env> env_ = SyncTrackingFileSystem::NewEnv(fs_);
  std::unique_ptr<BucketStore> store_;
};

TEST_F(WalSyncTest, DeferredWritesAreDurableAfterOneSyncWal) {
  const uint64_t before_single = fs_->wal_syncs();
  SHOAL_ASSERT_OK(store_->Upsert(kC, "single", DocBody(1)).status());
  EXPECT_EQ(fs_->wal_syncs(), before_single + 1) << "a configured write syncs on its own";

  const uint64_t before_deferred = fs_->wal_syncs();
  for (int i = 0; i < kWrites; ++i) {
    SHOAL_ASSERT_OK(
        store_->Upsert(kC, "d" + std::to_string(i), DocBody(i), WalSync::kDeferred).status());
  }
  EXPECT_EQ(fs_->wal_syncs(), before_deferred) << "deferred writes do not sync";
  // Readable at once, before they are durable.
  SHOAL_EXPECT_OK(store_->Get(kC, "d0").status());
  {
    std::unique_ptr<BucketStore> crashed = OpenCrashCopy(*fs_, dir_, "crash-before-sync");
    ASSERT_NE(crashed, nullptr);
    SHOAL_EXPECT_OK(crashed->Get(kC, "single").status());
    EXPECT_TRUE(Is(crashed->Get(kC, "d0").status(), ErrorReason::kNotFound))
        << "an unsynced write survived a machine crash: the crash copy does not model one";
    SHOAL_EXPECT_OK(crashed->Close());
  }

  SHOAL_ASSERT_OK(store_->SyncWal());
  EXPECT_EQ(fs_->wal_syncs(), before_deferred + 1);
  {
    std::unique_ptr<BucketStore> crashed = OpenCrashCopy(*fs_, dir_, "crash-after-sync");
    ASSERT_NE(crashed, nullptr);
    for (int i = 0; i < kWrites; ++i) {
      auto document = crashed->Get(kC, "d" + std::to_string(i));
      ASSERT_TRUE(document.ok()) << i << ": " << document.status();
      EXPECT_EQ(document->body, DocBody(i));
    }
    SHOAL_EXPECT_OK(crashed->Close());
  }
  SHOAL_EXPECT_OK(store_->Close());
}

TEST_F(WalSyncTest, DeferredApplyBatchAndApplyChangesDoNotSync) {
  const uint64_t before = fs_->wal_syncs();
  const std::string body = DocBody(1);
  const Mutation upsert{.kind = MutationKind::kUpsert,
                        .collection = kC,
                        .primary_key = "b",
                        .body = body,
                        .tombstone = false,
                        .condition = {},
                        .version = 0};
  SHOAL_ASSERT_OK(store_->ApplyBatch({&upsert, 1}, WalSync::kDeferred).status());
  const Document change{.collection = kC,
                        .primary_key = "c",
                        .body = DocBody(2),
                        .version = store_->LastVersion() + 1,
                        .tombstone = false};
  SHOAL_ASSERT_OK(store_->ApplyChanges({&change, 1}, WalSync::kDeferred).status());
  EXPECT_EQ(fs_->wal_syncs(), before);
  SHOAL_ASSERT_OK(store_->ApplyBatch({&upsert, 1}).status());
  EXPECT_EQ(fs_->wal_syncs(), before + 1) << "the configured policy still syncs every write";
  SHOAL_EXPECT_OK(store_->Close());
}

}  // namespace
}  // namespace shoal::storage
