#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

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

TEST_F(BatchTest, ApplyEachFailsSlotBySlot) {
  SHOAL_ASSERT_OK(store_->Insert(kC, "taken", DocBody(0)).status());
  const std::string a = DocBody(1), b = DocBody(2);
  const Status alone = store_->Insert(kC, "taken", a).status();  // DUPLICATE, takes no version
  ASSERT_TRUE(Is(alone, ErrorReason::kDuplicate));
  const std::vector<Mutation> batch = {
      {.kind = MutationKind::kInsert, .collection = kC, .primary_key = "a", .body = a},
      {.kind = MutationKind::kInsert, .collection = kC, .primary_key = "taken", .body = a},
      {.kind = MutationKind::kUpdate, .collection = kC, .primary_key = "missing", .body = a},
      {.kind = MutationKind::kUpsert, .collection = kC, .primary_key = "bad", .body = "{x"},
      {.kind = MutationKind::kUpsert,
       .collection = CollectionId(77),
       .primary_key = "c",
       .body = a},
      {.kind = MutationKind::kUpdate, .collection = kC, .primary_key = "a", .body = b},
      {.kind = MutationKind::kDelete, .collection = kC, .primary_key = "taken"},
  };
  SHOAL_ASSERT_OK_AND_ASSIGN(auto results, store_->ApplyEach(batch));
  ASSERT_EQ(results.size(), batch.size());
  SHOAL_EXPECT_OK(results[0].status());
  EXPECT_TRUE(Is(results[1].status(), ErrorReason::kDuplicate));
  // The same message as the insert's alone (no batch index: a node's batch is not the client's).
  EXPECT_EQ(std::string(MessageOf(results[1].status())), std::string(MessageOf(alone)));
  EXPECT_TRUE(Is(results[2].status(), ErrorReason::kNotFound));
  EXPECT_TRUE(Is(results[3].status(), ErrorReason::kInvalidDocument));
  EXPECT_TRUE(Is(results[4].status(), ErrorReason::kUnknownCollection));
  SHOAL_EXPECT_OK(results[5].status());
  SHOAL_EXPECT_OK(results[6].status());
  EXPECT_GT(results[5]->version, results[0]->version);
  EXPECT_GT(results[6]->version, results[5]->version);
  SHOAL_ASSERT_OK_AND_ASSIGN(Document stored, store_->Get(kC, "a"));
  EXPECT_EQ(stored.body, b);
  EXPECT_EQ(stored.version, results[5]->version);
  EXPECT_TRUE(Is(store_->Get(kC, "taken").status(), ErrorReason::kNotFound));
  EXPECT_TRUE(Is(store_->Get(kC, "missing").status(), ErrorReason::kNotFound));
  EXPECT_TRUE(Is(store_->Get(kC, "bad").status(), ErrorReason::kNotFound));
  // Only the three writes took versions.
  EXPECT_EQ(store_->LastVersion(), results[6]->version);
}

TEST_F(BatchTest, ApplyEachOfOnlyFailuresWritesNothing) {
  const uint64_t before = store_->LastVersion();
  const std::string body = DocBody(1);
  const std::vector<Mutation> batch = {
      {.kind = MutationKind::kDelete, .collection = kC, .primary_key = "x"},
      {.kind = MutationKind::kUpdate, .collection = kC, .primary_key = "y", .body = body},
  };
  SHOAL_ASSERT_OK_AND_ASSIGN(auto results, store_->ApplyEach(batch));
  EXPECT_TRUE(Is(results[0].status(), ErrorReason::kNotFound));
  EXPECT_TRUE(Is(results[1].status(), ErrorReason::kNotFound));
  EXPECT_EQ(store_->LastVersion(), before);
  SHOAL_ASSERT_OK_AND_ASSIGN(auto empty, store_->ApplyEach({}));
  EXPECT_TRUE(empty.empty());
}

// ApplyEach gives every slot the outcome and version that applying the same mutations one by
// one would, and leaves the same documents: random runs over a few keys, against a second store
// that applies them singly.
TEST_F(BatchTest, ApplyEachEqualsOneByOne) {
  TempDir dir;
  auto single = OpenTestStore(TestOptions(dir.Sub("single")));
  ASSERT_NE(single, nullptr);
  ASSERT_EQ(store_->LastVersion(), single->LastVersion());
  std::mt19937_64 random(20261123);
  const std::vector<std::string> keys = {"a", "b", "c"};
  std::vector<std::string> bodies;
  for (int i = 0; i < 8; ++i) bodies.push_back(DocBody(i));
  std::vector<uint64_t> seen_versions = {0};
  auto reason_of = [](const Status& s) { return s.ok() ? std::string("ok") : s.ToString(); };
  for (int round = 0; round < 300; ++round) {
    std::vector<Mutation> batch;
    const size_t n = 1 + random() % 6;
    for (size_t i = 0; i < n; ++i) {
      Mutation m{.collection = kC,
                 .primary_key = keys[random() % keys.size()],
                 .body = bodies[random() % bodies.size()]};
      switch (random() % 5) {
        case 0:
          m.kind = MutationKind::kInsert;
          break;
        case 1:
          m.kind = MutationKind::kUpdate;
          break;
        case 2:
          m.kind = MutationKind::kUpsert;
          break;
        case 3:
          m.kind = MutationKind::kDelete;
          break;
        default:
          m.kind = MutationKind::kCompareAndSet;
          m.version = seen_versions[random() % seen_versions.size()];
          break;
      }
      batch.push_back(m);
    }
    SHOAL_ASSERT_OK_AND_ASSIGN(auto each, store_->ApplyEach(batch));
    ASSERT_EQ(each.size(), n);
    for (size_t i = 0; i < n; ++i) {
      StatusOr<MutationResult> one = single->Apply(batch[i]);
      ASSERT_EQ(each[i].ok(), one.ok())
          << "round " << round << " slot " << i << ": " << reason_of(each[i].status()) << " vs "
          << reason_of(one.status());
      if (one.ok()) {
        EXPECT_EQ(each[i]->version, one->version) << "round " << round << " slot " << i;
        seen_versions.push_back(one->version);
      } else {
        EXPECT_EQ(ReasonOf(each[i].status()), ReasonOf(one.status()));
      }
    }
  }
  for (const std::string& key : keys) {
    auto a = store_->Get(kC, key, {.include_tombstones = true});
    auto b = single->Get(kC, key, {.include_tombstones = true});
    ASSERT_EQ(a.ok(), b.ok()) << key;
    if (!a.ok()) continue;
    EXPECT_EQ(a->body, b->body) << key;
    EXPECT_EQ(a->version, b->version) << key;
    EXPECT_EQ(a->tombstone, b->tombstone) << key;
  }
}

TEST_F(BatchTest, GetManyReadsEachKeyAsGetWould) {
  SHOAL_ASSERT_OK(store_->Upsert(kC, "a", DocBody(1)).status());
  SHOAL_ASSERT_OK(store_->Upsert(kC, "gone", DocBody(2)).status());
  SHOAL_ASSERT_OK(store_->Delete(kC, "gone").status());
  const std::vector<DocumentKey> keys = {
      {kC, "a"}, {kC, "missing"}, {kC, "gone"}, {CollectionId(77), "a"}, {kC, ""}, {kC, "a"}};
  const std::vector<StatusOr<Document>> many = store_->GetMany(keys);
  ASSERT_EQ(many.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    const StatusOr<Document> one = store_->Get(keys[i].collection, keys[i].primary_key);
    ASSERT_EQ(many[i].ok(), one.ok()) << i;
    if (one.ok()) {
      EXPECT_EQ(many[i]->body, one->body);
      EXPECT_EQ(many[i]->version, one->version);
      EXPECT_EQ(many[i]->primary_key, keys[i].primary_key);
    } else {
      EXPECT_EQ(ReasonOf(many[i].status()), ReasonOf(one.status()))
          << i << ": " << many[i].status();
    }
  }
  EXPECT_TRUE(Is(many[2].status(), ErrorReason::kNotFound));
  SHOAL_ASSERT_OK_AND_ASSIGN(Document tombstone,
                             std::move(store_->GetMany(std::vector<DocumentKey>{{kC, "gone"}},
                                                       {.include_tombstones = true})[0]));
  EXPECT_TRUE(tombstone.tombstone);
  EXPECT_TRUE(store_->GetMany({}).empty());
}

}  // namespace
}  // namespace shoal::storage
