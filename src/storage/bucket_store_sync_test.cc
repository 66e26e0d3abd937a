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

TEST(WalSyncTest, DeferredWritesAreDurableAfterOneSyncWal) {
  TempDir dir;
  auto fs = std::make_shared<SyncTrackingFileSystem>();
  std::unique_ptr<rocksdb::Env> env = SyncTrackingFileSystem::NewEnv(fs);
  StoreOptions options = TestOptions(dir.Sub("db"));
  options.sync = SyncPolicy::kEveryWrite;
  options.env = env.get();
  std::unique_ptr<BucketStore> store = OpenTestStore(options);
  ASSERT_NE(store, nullptr);
  // The first write also reserves a block of versions (a synced write of its own).
  SHOAL_ASSERT_OK(store->Upsert(kC, "warm-up", DocBody(0)).status());

  const uint64_t before_single = fs->wal_syncs();
  SHOAL_ASSERT_OK(store->Upsert(kC, "single", DocBody(1)).status());
  EXPECT_EQ(fs->wal_syncs(), before_single + 1) << "a configured write syncs on its own";

  const uint64_t before_deferred = fs->wal_syncs();
  for (int i = 0; i < kWrites; ++i) {
    SHOAL_ASSERT_OK(
        store->Upsert(kC, "d" + std::to_string(i), DocBody(i), WalSync::kDeferred).status());
  }
  EXPECT_EQ(fs->wal_syncs(), before_deferred) << "deferred writes do not sync";
  // Readable at once, before they are durable.
  SHOAL_EXPECT_OK(store->Get(kC, "d0").status());
  {
    std::unique_ptr<BucketStore> crashed = OpenCrashCopy(*fs, dir, "crash-before-sync");
    ASSERT_NE(crashed, nullptr);
    SHOAL_EXPECT_OK(crashed->Get(kC, "single").status());
    EXPECT_TRUE(Is(crashed->Get(kC, "d0").status(), ErrorReason::kNotFound))
        << "an unsynced write survived a machine crash: the crash copy does not model one";
    SHOAL_EXPECT_OK(crashed->Close());
  }

  SHOAL_ASSERT_OK(store->SyncWal());
  EXPECT_EQ(fs->wal_syncs(), before_deferred + 1);
  {
    std::unique_ptr<BucketStore> crashed = OpenCrashCopy(*fs, dir, "crash-after-sync");
    ASSERT_NE(crashed, nullptr);
    for (int i = 0; i < kWrites; ++i) {
      auto document = crashed->Get(kC, "d" + std::to_string(i));
      ASSERT_TRUE(document.ok()) << i << ": " << document.status();
      EXPECT_EQ(document->body, DocBody(i));
    }
    SHOAL_EXPECT_OK(crashed->Close());
  }
  SHOAL_EXPECT_OK(store->Close());
}

TEST(WalSyncTest, DeferredApplyBatchAndApplyChangesDoNotSync) {
  TempDir dir;
  auto fs = std::make_shared<SyncTrackingFileSystem>();
  std::unique_ptr<rocksdb::Env> env = SyncTrackingFileSystem::NewEnv(fs);
  StoreOptions options = TestOptions(dir.Sub("db"));
  options.sync = SyncPolicy::kEveryWrite;
  options.env = env.get();
  std::unique_ptr<BucketStore> store = OpenTestStore(options);
  ASSERT_NE(store, nullptr);
  SHOAL_ASSERT_OK(store->Upsert(kC, "warm-up", DocBody(0)).status());

  const uint64_t before = fs->wal_syncs();
  const std::string body = DocBody(1);
  const Mutation upsert{.kind = MutationKind::kUpsert,
                        .collection = kC,
                        .primary_key = "b",
                        .body = body,
                        .tombstone = false,
                        .condition = {},
                        .version = 0};
  SHOAL_ASSERT_OK(store->ApplyBatch({&upsert, 1}, WalSync::kDeferred).status());
  const Document change{.collection = kC,
                        .primary_key = "c",
                        .body = DocBody(2),
                        .version = store->LastVersion() + 1,
                        .tombstone = false};
  SHOAL_ASSERT_OK(store->ApplyChanges({&change, 1}, WalSync::kDeferred).status());
  EXPECT_EQ(fs->wal_syncs(), before);
  SHOAL_ASSERT_OK(store->ApplyBatch({&upsert, 1}).status());
  EXPECT_EQ(fs->wal_syncs(), before + 1) << "the configured policy still syncs every write";
  SHOAL_EXPECT_OK(store->Close());
}

}  // namespace
}  // namespace shoal::storage
