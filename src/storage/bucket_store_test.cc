#include "src/storage/bucket_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "src/common/point.h"
#include "src/storage/errors.h"
#include "src/storage/test_support.h"

namespace shoal::storage {
namespace {

constexpr CollectionId kC = kTestCollection;

class BucketStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = OpenTestStore(TestOptions(dir_.Sub("db")));
    ASSERT_NE(store_, nullptr);
  }
  void Reopen() {
    SHOAL_ASSERT_OK(store_->Close());
    store_.reset();
    store_ = OpenTestStore(TestOptions(dir_.Sub("db")));
    ASSERT_NE(store_, nullptr);
  }

  TempDir dir_;
  std::unique_ptr<BucketStore> store_;
};

TEST_F(BucketStoreTest, InsertGetUpdateDelete) {
  SHOAL_ASSERT_OK_AND_ASSIGN(uint64_t v1, store_->Insert(kC, "k", DocBody(1)));
  SHOAL_ASSERT_OK_AND_ASSIGN(Document d, store_->Get(kC, "k"));
  EXPECT_EQ(d.body, DocBody(1));
  EXPECT_EQ(d.version, v1);
  EXPECT_FALSE(d.tombstone);

  EXPECT_TRUE(Is(store_->Insert(kC, "k", DocBody(2)).status(), ErrorReason::kDuplicate));
  SHOAL_ASSERT_OK_AND_ASSIGN(uint64_t v2, store_->Update(kC, "k", DocBody(2)));
  EXPECT_GT(v2, v1);
  SHOAL_ASSERT_OK_AND_ASSIGN(uint64_t v3, store_->Delete(kC, "k"));
  EXPECT_GT(v3, v2);
  EXPECT_TRUE(Is(store_->Get(kC, "k").status(), ErrorReason::kNotFound));
  SHOAL_ASSERT_OK_AND_ASSIGN(Document tomb, store_->Get(kC, "k", {.include_tombstones = true}));
  EXPECT_TRUE(tomb.tombstone);
  EXPECT_EQ(tomb.version, v3);
  EXPECT_TRUE(tomb.body.empty());

  EXPECT_TRUE(Is(store_->Delete(kC, "k").status(), ErrorReason::kNotFound));
  EXPECT_TRUE(Is(store_->Update(kC, "k", DocBody(3)).status(), ErrorReason::kNotFound));
  SHOAL_ASSERT_OK_AND_ASSIGN(uint64_t v4, store_->Insert(kC, "k", DocBody(4)));  // over a tombstone
  EXPECT_GT(v4, v3);
  EXPECT_TRUE(Is(store_->Delete(kC, "absent").status(), ErrorReason::kNotFound));
  EXPECT_TRUE(Is(store_->Get(kC, "absent").status(), ErrorReason::kNotFound));
}

TEST_F(BucketStoreTest, UpsertAndCompareAndSet) {
  SHOAL_ASSERT_OK_AND_ASSIGN(uint64_t v1, store_->Upsert(kC, "k", DocBody(1)));
  SHOAL_ASSERT_OK_AND_ASSIGN(uint64_t v2, store_->Upsert(kC, "k", DocBody(2)));
  EXPECT_GT(v2, v1);
  EXPECT_TRUE(
      Is(store_->CompareAndSet(kC, "k", v1, DocBody(3)).status(), ErrorReason::kConditionFailed));
  SHOAL_ASSERT_OK_AND_ASSIGN(uint64_t v3, store_->CompareAndSet(kC, "k", v2, DocBody(3)));
  EXPECT_EQ(store_->Get(kC, "k")->version, v3);
  EXPECT_TRUE(store_->CompareAndSet(kC, "new", 0, DocBody(1)).ok());
  EXPECT_TRUE(
      Is(store_->CompareAndSet(kC, "other", 7, DocBody(1)).status(), ErrorReason::kNotFound));
}

TEST_F(BucketStoreTest, ConditionalFormsOfPaper000) {
  SHOAL_ASSERT_OK(store_->Insert(kC, "k", DocBody(1)).status());
  SHOAL_ASSERT_OK(store_->Delete(kC, "k").status());
  // Add over a tombstone (Alg. 1): update only if the stored document is a tombstone.
  SHOAL_ASSERT_OK(store_->UpdateIf(kC, "k", DocBody(2), Condition::IsTombstone()).status());
  EXPECT_TRUE(Is(store_->UpdateIf(kC, "k", DocBody(3), Condition::IsTombstone()).status(),
                 ErrorReason::kConditionFailed));
  // Parameterized upsert with q = live (Alg. 2) fails on a tombstone, inserts when absent.
  SHOAL_ASSERT_OK(store_->UpsertIf(kC, "k", DocBody(4), Condition::IsLive()).status());
  SHOAL_ASSERT_OK(store_->UpsertIf(kC, "fresh", DocBody(4), Condition::IsLive()).status());
  SHOAL_ASSERT_OK(store_->Delete(kC, "fresh").status());
  EXPECT_TRUE(Is(store_->UpsertIf(kC, "fresh", DocBody(5), Condition::IsLive()).status(),
                 ErrorReason::kDuplicate));
  // Delete by conditional update to a tombstone (Alg. 3).
  SHOAL_ASSERT_OK(store_
                      ->Apply({.kind = MutationKind::kUpdateIf,
                               .collection = kC,
                               .primary_key = "k",
                               .tombstone = true,
                               .condition = Condition::IsLive()})
                      .status());
  EXPECT_TRUE(Is(store_->Get(kC, "k").status(), ErrorReason::kNotFound));
  // Condition on a body field.
  SHOAL_ASSERT_OK(store_->Upsert(kC, "f", DocBody(7)).status());
  Condition n_is_7{.fields = {{{"n", CompareOp::kEq, int64_t{7}}}}};
  SHOAL_ASSERT_OK(store_->UpdateIf(kC, "f", DocBody(8), n_is_7).status());
  EXPECT_TRUE(
      Is(store_->UpdateIf(kC, "f", DocBody(9), n_is_7).status(), ErrorReason::kConditionFailed));
}

TEST_F(BucketStoreTest, BadInputChangesNothing) {
  SHOAL_ASSERT_OK(store_->Insert(kC, "k", DocBody(1)).status());
  const uint64_t before = store_->LastVersion();
  EXPECT_TRUE(Is(store_->Update(kC, "k", "{bad"), ErrorReason::kInvalidDocument));
  EXPECT_TRUE(Is(store_->Update(kC, "k", "[1]"), ErrorReason::kInvalidDocument));
  EXPECT_TRUE(Is(store_->Insert(kC, "", DocBody(1)), ErrorReason::kInvalidDocument));
  EXPECT_TRUE(Is(store_->Insert(kC, std::string(8193, 'k'), DocBody(1)), ErrorReason::kTooLarge));
  EXPECT_TRUE(
      Is(store_->Insert(CollectionId(99), "k", DocBody(1)), ErrorReason::kUnknownCollection));
  EXPECT_TRUE(Is(store_->Get(CollectionId(99), "k").status(), ErrorReason::kUnknownCollection));
  EXPECT_TRUE(Is(store_
                     ->Apply({.kind = MutationKind::kApplyIfNewer,
                              .collection = kC,
                              .primary_key = "k",
                              .body = DocBody(1)})
                     .status(),
                 ErrorReason::kInvalidArgument));
  EXPECT_EQ(store_->Get(kC, "k")->body, DocBody(1));
  EXPECT_EQ(store_->LastVersion(), before);
}

TEST_F(BucketStoreTest, ApplyIfNewerKeepsNewerLocalVersions) {
  SHOAL_ASSERT_OK_AND_ASSIGN(uint64_t local, store_->Upsert(kC, "k", DocBody(1)));
  SHOAL_ASSERT_OK_AND_ASSIGN(MutationResult older,
                             store_->Apply({.kind = MutationKind::kApplyIfNewer,
                                            .collection = kC,
                                            .primary_key = "k",
                                            .body = DocBody(2),
                                            .version = local}));
  EXPECT_FALSE(older.applied);
  EXPECT_EQ(store_->Get(kC, "k")->body, DocBody(1));
  const uint64_t remote = local + 1000000;
  SHOAL_ASSERT_OK_AND_ASSIGN(MutationResult newer,
                             store_->Apply({.kind = MutationKind::kApplyIfNewer,
                                            .collection = kC,
                                            .primary_key = "k",
                                            .body = DocBody(3),
                                            .version = remote}));
  EXPECT_TRUE(newer.applied);
  EXPECT_EQ(store_->Get(kC, "k")->version, remote);
  // The clock moved past the applied version, also across a restart.
  Reopen();
  SHOAL_ASSERT_OK_AND_ASSIGN(uint64_t after, store_->Upsert(kC, "k", DocBody(4)));
  EXPECT_GT(after, remote);
}

TEST_F(BucketStoreTest, VersionsAndDataSurviveReopen) {
  uint64_t last = 0;
  for (int i = 0; i < 50; ++i) {
    SHOAL_ASSERT_OK_AND_ASSIGN(last, store_->Upsert(kC, "k" + std::to_string(i), DocBody(i)));
  }
  SHOAL_ASSERT_OK(store_->Delete(kC, "k3").status());
  Reopen();
  for (int i = 0; i < 50; ++i) {
    auto d = store_->Get(kC, "k" + std::to_string(i));
    if (i == 3) {
      EXPECT_TRUE(Is(d.status(), ErrorReason::kNotFound));
    } else {
      ASSERT_TRUE(d.ok()) << d.status();
      EXPECT_EQ(d->body, DocBody(i));
    }
  }
  SHOAL_ASSERT_OK_AND_ASSIGN(uint64_t next, store_->Upsert(kC, "k0", DocBody(0)));
  EXPECT_GT(next, last);
}

// The store id is drawn at creation and kept: the same after reopening, another in another
// directory, and another once the directory is wiped and created again.
TEST_F(BucketStoreTest, StoreIdIsKeptUntilTheDirectoryIsWiped) {
  const uint64_t id = store_->store_id();
  EXPECT_NE(id, 0u);
  Reopen();
  EXPECT_EQ(store_->store_id(), id);

  auto other = OpenTestStore(TestOptions(dir_.Sub("other")));
  ASSERT_NE(other, nullptr);
  EXPECT_NE(other->store_id(), 0u);
  EXPECT_NE(other->store_id(), id);
  SHOAL_ASSERT_OK(other->Close());

  SHOAL_ASSERT_OK(store_->Close());
  store_.reset();
  std::filesystem::remove_all(dir_.Sub("db"));
  store_ = OpenTestStore(TestOptions(dir_.Sub("db")));
  ASSERT_NE(store_, nullptr);
  EXPECT_NE(store_->store_id(), 0u);
  EXPECT_NE(store_->store_id(), id);
}

TEST_F(BucketStoreTest, CollectionRegistry) {
  SHOAL_EXPECT_OK(store_->CreateCollection({.id = kC, .name = "docs"}));  // idempotent
  EXPECT_TRUE(
      Is(store_->CreateCollection({.id = kC, .name = "other"}), ErrorReason::kCollectionExists));
  EXPECT_TRUE(Is(store_->CreateCollection({.id = CollectionId(2), .name = "docs"}),
                 ErrorReason::kCollectionExists));
  EXPECT_TRUE(Is(store_->CreateCollection({.id = CollectionId(0), .name = "zero"}),
                 ErrorReason::kInvalidArgument));
  SHOAL_ASSERT_OK(store_->CreateCollection({.id = CollectionId(2), .name = "users"}));
  Reopen();
  EXPECT_EQ(store_->FindCollection("users")->id, CollectionId(2));
  EXPECT_EQ(store_->GetCollection(kC)->name, "docs");
  EXPECT_EQ(store_->ListCollections().size(), 2u);
  EXPECT_TRUE(Is(store_->FindCollection("nope").status(), ErrorReason::kUnknownCollection));
}

TEST_F(BucketStoreTest, SameKeyInTwoCollectionsIsTwoDocuments) {
  SHOAL_ASSERT_OK(store_->CreateCollection({.id = CollectionId(2), .name = "users"}));
  SHOAL_ASSERT_OK(store_->Insert(kC, "k", DocBody(1)).status());
  SHOAL_ASSERT_OK(store_->Insert(CollectionId(2), "k", DocBody(2)).status());
  EXPECT_EQ(store_->Get(kC, "k")->body, DocBody(1));
  EXPECT_EQ(store_->Get(CollectionId(2), "k")->body, DocBody(2));
}

TEST_F(BucketStoreTest, SnapshotReadsAreStable) {
  SHOAL_ASSERT_OK(store_->Upsert(kC, "k", DocBody(1)).status());
  std::unique_ptr<Snapshot> snap = store_->GetSnapshot();
  SHOAL_ASSERT_OK(store_->Upsert(kC, "k", DocBody(2)).status());
  EXPECT_EQ(store_->Get(kC, "k", {.snapshot = snap.get()})->body, DocBody(1));
  EXPECT_EQ(store_->Get(kC, "k")->body, DocBody(2));
}

TEST(BucketStoreOpenTest, RejectsForeignDatabasesAndBadOptions) {
  TempDir dir;
  EXPECT_TRUE(Is(BucketStore::Open(StoreOptions{}).status(), ErrorReason::kInvalidArgument));
  StoreOptions missing = TestOptions(dir.Sub("nothing"));
  missing.create_if_missing = false;
  EXPECT_FALSE(BucketStore::Open(missing).ok());
}

TEST(BucketStoreOpenTest, EverySyncPolicyOpensAndWrites) {
  for (SyncPolicy policy : {SyncPolicy::kEveryWrite, SyncPolicy::kPeriodic}) {
    TempDir dir;
    StoreOptions options = TestOptions(dir.Sub("db"));
    options.sync = policy;
    options.sync_interval = std::chrono::milliseconds(5);
    auto store = OpenTestStore(options);
    ASSERT_NE(store, nullptr);
    SHOAL_ASSERT_OK(store->Insert(kC, "k", DocBody(1)).status());
    SHOAL_ASSERT_OK(store->SyncWal());
    SHOAL_ASSERT_OK(store->Close());
  }
}

// The storage node rescans a bucket's size only once writes changed it (LiveBytesChurn): inserts,
// deletes and size changes count, same-size overwrites and refused writes do not, and only the
// range that holds the key sees them.
TEST_F(BucketStoreTest, LiveBytesChurnCountsSizeChangesOfTheRangeOnly) {
  const PointRange all = PointRange::All();
  EXPECT_EQ(store_->LiveBytesChurn(all), 0u);
  const std::string small = R"({"v":"aaaa"})";
  const std::string same = R"({"v":"bbbb"})";
  const std::string large = R"({"v":"cccccccccc"})";
  SHOAL_ASSERT_OK(store_->Insert(kC, "k", small).status());
  const uint64_t inserted = store_->LiveBytesChurn(all);
  EXPECT_GT(inserted, small.size());  // the key's bytes count too
  const uint64_t key_bytes = inserted - small.size();

  SHOAL_ASSERT_OK(store_->Upsert(kC, "k", same).status());
  EXPECT_EQ(store_->LiveBytesChurn(all), inserted);
  EXPECT_FALSE(store_->Insert(kC, "k", large).ok());  // refused: changes nothing
  EXPECT_EQ(store_->LiveBytesChurn(all), inserted);
  SHOAL_ASSERT_OK(store_->Update(kC, "k", large).status());
  EXPECT_EQ(store_->LiveBytesChurn(all), inserted + (large.size() - same.size()));
  SHOAL_ASSERT_OK(store_->Delete(kC, "k").status());
  const uint64_t deleted = inserted + (large.size() - same.size()) + key_bytes + large.size();
  EXPECT_EQ(store_->LiveBytesChurn(all), deleted);

  // A batch counts each of its writes, an insert over a tombstone like a fresh one.
  std::vector<Mutation> batch = {
      {.kind = MutationKind::kInsert, .collection = kC, .primary_key = "k", .body = small},
      {.kind = MutationKind::kUpsert, .collection = kC, .primary_key = "k", .body = same}};
  SHOAL_ASSERT_OK(store_->ApplyBatch(batch).status());
  EXPECT_EQ(store_->LiveBytesChurn(all), deleted + key_bytes + small.size());

  // Only ranges that hold the key's point see its churn.
  const uint64_t point = PointOf(kC, "k").value();
  SHOAL_ASSERT_OK_AND_ASSIGN(PointRange with, PointRange::Make(point, point + 1));
  EXPECT_EQ(store_->LiveBytesChurn(with), store_->LiveBytesChurn(all));
  const uint64_t far = point ^ (uint64_t{1} << 63);
  SHOAL_ASSERT_OK_AND_ASSIGN(PointRange without, PointRange::Make(far, far + 1));
  EXPECT_EQ(store_->LiveBytesChurn(without), 0u);
}

TEST_F(BucketStoreTest, BackgroundWorkEndsAfterACompaction) {
  for (int i = 0; i < 100; ++i) {
    SHOAL_ASSERT_OK(store_->Upsert(kC, "k" + std::to_string(i), DocBody(i)).status());
  }
  SHOAL_ASSERT_OK(store_->Flush());
  SHOAL_ASSERT_OK(store_->CompactRange(PointRange::All()));
  // Both calls wait for their own work, but the engine may schedule a compaction of its own
  // right after; with no more writes, that ends too.
  bool pending = true;
  for (int wait = 0; pending && wait < 600; ++wait) {
    pending = store_->BackgroundWorkPending();
    if (pending) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(pending);
}

}  // namespace
}  // namespace shoal::storage
