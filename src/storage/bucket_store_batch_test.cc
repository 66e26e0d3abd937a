#include <gtest/gtest.h>

#include "src/storage/bucket_store.h"
#include "src/storage/errors.h"
#include "src/storage/test_support.h"

namespace shoal::storage {
namespace {

constexpr CollectionId kC = kTestCollection;

class BatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = OpenTestStore(TestOptions(dir_.Sub("db")));
    ASSERT_NE(store_, nullptr);
  }
  TempDir dir_;
  std::unique_ptr<BucketStore> store_;
};

TEST_F(BatchTest, ManyDocumentsInOneBatch) {
  std::vector<std::string> keys, bodies;
  for (int i = 0; i < 200; ++i) {
    keys.push_back("k" + std::to_string(i));
    bodies.push_back(DocBody(i));
  }
  std::vector<Mutation> batch;
  for (int i = 0; i < 200; ++i) {
    batch.push_back({.kind = MutationKind::kInsert,
                     .collection = kC,
                     .primary_key = keys[i],
                     .body = bodies[i]});
  }
  SHOAL_ASSERT_OK_AND_ASSIGN(std::vector<MutationResult> results, store_->ApplyBatch(batch));
  ASSERT_EQ(results.size(), 200u);
  for (int i = 1; i < 200; ++i) EXPECT_GT(results[i].version, results[i - 1].version);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(store_->Get(kC, keys[i])->version, results[i].version);
}

TEST_F(BatchTest, AllOrNothing) {
  SHOAL_ASSERT_OK(store_->Insert(kC, "taken", DocBody(0)).status());
  const std::string a = DocBody(1);
  std::vector<Mutation> batch = {
      {.kind = MutationKind::kInsert, .collection = kC, .primary_key = "a", .body = a},
      {.kind = MutationKind::kInsert, .collection = kC, .primary_key = "taken", .body = a},
  };
  const uint64_t before = store_->LastVersion();
  auto result = store_->ApplyBatch(batch);
  EXPECT_TRUE(Is(result.status(), ErrorReason::kDuplicate));
  EXPECT_NE(std::string(MessageOf(result.status())).find("batch[1]"), std::string::npos);
  EXPECT_TRUE(Is(store_->Get(kC, "a").status(), ErrorReason::kNotFound));
  // Validation failures also leave the store untouched (and stamp nothing).
  batch[1] = {.kind = MutationKind::kUpsert, .collection = kC, .primary_key = "b", .body = "{x"};
  EXPECT_TRUE(Is(store_->ApplyBatch(batch).status(), ErrorReason::kInvalidDocument));
  EXPECT_TRUE(Is(store_->Get(kC, "a").status(), ErrorReason::kNotFound));
  EXPECT_EQ(store_->LastVersion(), before);
}

TEST_F(BatchTest, LaterMutationsSeeEarlierOnes) {
  const std::string b1 = DocBody(1), b2 = DocBody(2);
  std::vector<Mutation> batch = {
      {.kind = MutationKind::kInsert, .collection = kC, .primary_key = "k", .body = b1},
      {.kind = MutationKind::kUpdate, .collection = kC, .primary_key = "k", .body = b2},
      {.kind = MutationKind::kDelete, .collection = kC, .primary_key = "k"},
      {.kind = MutationKind::kInsert, .collection = kC, .primary_key = "k", .body = b1},
  };
  SHOAL_ASSERT_OK_AND_ASSIGN(std::vector<MutationResult> results, store_->ApplyBatch(batch));
  SHOAL_ASSERT_OK_AND_ASSIGN(Document d, store_->Get(kC, "k"));
  EXPECT_EQ(d.body, b1);
  EXPECT_EQ(d.version, results[3].version);
  batch = {
      {.kind = MutationKind::kDelete, .collection = kC, .primary_key = "k"},
      {.kind = MutationKind::kDelete, .collection = kC, .primary_key = "k"},
  };
  EXPECT_TRUE(Is(store_->ApplyBatch(batch).status(), ErrorReason::kNotFound));
  EXPECT_EQ(store_->Get(kC, "k")->body, b1);
}

TEST_F(BatchTest, BatchSizeLimit) {
  TempDir dir;
  StoreOptions options = TestOptions(dir.Sub("db"));
  options.max_batch_bytes = 100;
  auto store = OpenTestStore(options);
  ASSERT_NE(store, nullptr);
  const std::string body = "{\"pad\":\"" + std::string(100, 'x') + "\"}";
  std::vector<Mutation> batch = {
      {.kind = MutationKind::kUpsert, .collection = kC, .primary_key = "k", .body = body}};
  EXPECT_TRUE(Is(store->ApplyBatch(batch).status(), ErrorReason::kTooLarge));
  SHOAL_EXPECT_OK(store->Upsert(kC, "k", body).status());  // single writes are not batches
}

TEST_F(BatchTest, ApplyChangesIsIdempotent) {
  std::vector<Document> changes = {
      {.collection = kC, .primary_key = "a", .body = DocBody(1), .version = 100},
      {.collection = kC, .primary_key = "b", .version = 101, .tombstone = true},
      {.collection = kC, .primary_key = "a", .body = DocBody(2), .version = 102},
  };
  SHOAL_ASSERT_OK(store_->ApplyChanges(changes).status());
  SHOAL_ASSERT_OK_AND_ASSIGN(std::vector<MutationResult> again, store_->ApplyChanges(changes));
  for (const MutationResult& r : again) EXPECT_FALSE(r.applied);
  EXPECT_EQ(store_->Get(kC, "a")->body, DocBody(2));
  EXPECT_EQ(store_->Get(kC, "a")->version, 102u);
  EXPECT_TRUE(store_->Get(kC, "b", {.include_tombstones = true})->tombstone);
  EXPECT_GT(*store_->Upsert(kC, "c", DocBody(3)), 102u);
}

}  // namespace
}  // namespace shoal::storage
