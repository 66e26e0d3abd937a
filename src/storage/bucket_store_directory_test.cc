#include <gtest/gtest.h>

#include "src/storage/bucket_store.h"
#include "src/storage/errors.h"
#include "src/storage/test_support.h"

namespace shoal::storage {
namespace {

constexpr CollectionId kC = kTestCollection;
constexpr uint64_t kHalf = 1ull << 63;

// A key of kC whose point lies in the lower (or upper) half of the hash space.
std::string KeyIn(bool upper, int salt) {
  for (int i = 0;; ++i) {
    std::string key = "k" + std::to_string(salt) + "-" + std::to_string(i);
    if ((PointOf(kC, key).value() >= kHalf) == upper) return key;
  }
}

class DirectoryStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void Open() {
    auto store = BucketStore::Open(TestOptions(dir_.Sub("db")));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(store).value();
    SHOAL_ASSERT_OK(store_->CreateCollection({.id = kC, .name = "docs"}));
  }
  void Reopen() {
    SHOAL_ASSERT_OK(store_->Close());
    store_.reset();
    Open();
  }
  TempDir dir_;
  std::unique_ptr<BucketStore> store_;
};

TEST_F(DirectoryStoreTest, OperationsNeedAServedBucket) {
  const std::string low = KeyIn(false, 1);
  EXPECT_TRUE(Is(store_->Insert(kC, low, DocBody(1)), ErrorReason::kBucketState));
  EXPECT_TRUE(Is(store_->Get(kC, low), ErrorReason::kBucketState));
  SHOAL_ASSERT_OK(store_->AddBucket(
      {.id = BucketId(1), .range = *PointRange::Make(0, kHalf), .state = BucketState::kAdding}));
  // Adding: not served, but catch-up may apply.
  EXPECT_TRUE(Is(store_->Insert(kC, low, DocBody(1)), ErrorReason::kBucketState));
  SHOAL_ASSERT_OK(store_
                      ->Apply({.kind = MutationKind::kApplyIfNewer,
                               .collection = kC,
                               .primary_key = low,
                               .body = DocBody(1),
                               .version = 5})
                      .status());
  SHOAL_ASSERT_OK(store_->SetBucketState(BucketId(1), BucketState::kReadWrite));
  SHOAL_ASSERT_OK(store_->Update(kC, low, DocBody(2)).status());
  SHOAL_ASSERT_OK(store_->SetBucketState(BucketId(1), BucketState::kLeaving));
  SHOAL_ASSERT_OK(store_->Update(kC, low, DocBody(3)).status());  // still served while leaving
  EXPECT_TRUE(Is(store_->Apply({.kind = MutationKind::kApplyIfNewer,
                                .collection = kC,
                                .primary_key = low,
                                .body = DocBody(1),
                                .version = 1u << 30}),
                 ErrorReason::kBucketState));
  EXPECT_TRUE(Is(store_->Insert(kC, KeyIn(true, 1), DocBody(1)), ErrorReason::kBucketState));
}

TEST_F(DirectoryStoreTest, DirectoryIsRecoveredOnOpen) {
  SHOAL_ASSERT_OK(store_->AddBucket({.id = BucketId(1), .range = PointRange::All()}));
  SHOAL_ASSERT_OK(store_->SplitBucket(BucketId(1), kHalf, BucketId(2)).status());
  SHOAL_ASSERT_OK(store_->SetBucketState(BucketId(2), BucketState::kLeaving));
  EXPECT_TRUE(
      Is(store_->AddBucket(
             {.id = BucketId(3), .range = *PointRange::Make(5, 6), .state = BucketState::kAdding}),
         ErrorReason::kBucketState));  // overlaps bucket 1
  const std::vector<BucketEntry> before = store_->ListBuckets();
  Reopen();
  EXPECT_EQ(store_->ListBuckets(), before);
  ASSERT_EQ(before.size(), 2u);
  EXPECT_EQ(before[1].state, BucketState::kLeaving);
}

TEST_F(DirectoryStoreTest, SplitIsMetadataOnly) {
  SHOAL_ASSERT_OK(store_->AddBucket({.id = BucketId(1), .range = PointRange::All()}));
  for (int i = 0; i < 200; ++i) {
    SHOAL_ASSERT_OK(store_->Insert(kC, "k" + std::to_string(i), DocBody(i)).status());
  }
  const uint64_t sequence = store_->LatestSequence();
  SHOAL_ASSERT_OK_AND_ASSIGN(auto halves, store_->SplitBucket(BucketId(1), kHalf, BucketId(2)));
  // One small meta write, no data rewritten.
  EXPECT_EQ(store_->LatestSequence(), sequence + 2);
  SHOAL_ASSERT_OK_AND_ASSIGN(BucketStats low, store_->ComputeStats(halves.first.range));
  SHOAL_ASSERT_OK_AND_ASSIGN(BucketStats high, store_->ComputeStats(halves.second.range));
  EXPECT_EQ(low.documents + high.documents, 200u);
  for (int i = 0; i < 200; ++i) EXPECT_TRUE(store_->Get(kC, "k" + std::to_string(i)).ok());
}

TEST_F(DirectoryStoreTest, RemoveBucketDropsItsDataAtomically) {
  SHOAL_ASSERT_OK(store_->AddBucket({.id = BucketId(1), .range = *PointRange::Make(0, kHalf)}));
  SHOAL_ASSERT_OK(store_->AddBucket({.id = BucketId(2), .range = PointRange::From(kHalf)}));
  std::vector<std::string> low, high;
  for (int i = 0; i < 50; ++i) {
    low.push_back(KeyIn(false, i));
    high.push_back(KeyIn(true, i));
    SHOAL_ASSERT_OK(store_->Insert(kC, low.back(), DocBody(i)).status());
    SHOAL_ASSERT_OK(store_->Insert(kC, high.back(), DocBody(i)).status());
  }
  SHOAL_ASSERT_OK(store_->Flush());
  EXPECT_TRUE(Is(store_->RemoveBucket(BucketId(1)), ErrorReason::kBucketState));  // served
  EXPECT_TRUE(Is(store_->DropRange(*PointRange::Make(0, kHalf)), ErrorReason::kBucketState));
  SHOAL_ASSERT_OK(store_->SetBucketState(BucketId(1), BucketState::kLeaving));
  EXPECT_TRUE(Is(store_->DropRange(*PointRange::Make(0, kHalf)), ErrorReason::kBucketState));
  SHOAL_ASSERT_OK(store_->RemoveBucket(BucketId(1)));
  Reopen();
  EXPECT_EQ(store_->ListBuckets().size(), 1u);
  SHOAL_ASSERT_OK_AND_ASSIGN(BucketStats dropped,
                             store_->ComputeStats(*PointRange::Make(0, kHalf)));
  EXPECT_EQ(dropped.documents + dropped.tombstones, 0u);
  for (const std::string& k : high) EXPECT_TRUE(store_->Get(kC, k).ok());
}

}  // namespace
}  // namespace shoal::storage
