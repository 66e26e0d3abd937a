// A store whose disk fills (docs/design/storage.md, "A full disk"): the DiskSpaceGuard refuses
// document writes and exports with NO_SPACE before the engine sees them, so the engine never
// meets a refused WAL write (which would stop it: bucket_store_engine_stop_test.cc), reads go on,
// and writes resume by themselves once space is back. The disk is a test file system that reports
// the free space the test sets and, while full, refuses every write under the store's directory.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "src/storage/bucket_store.h"
#include "src/storage/errors.h"
#include "src/storage/full_disk_fs.h"
#include "src/storage/test_support.h"

namespace shoal::storage {
namespace {

constexpr CollectionId kC = kTestCollection;
constexpr uint64_t kReserve = 1u << 20;

class StoreFullDiskTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }

  void Open() {
    StoreOptions options = TestOptions(dir_.Sub("db"));
    options.env = env_.get();
    options.min_free_disk_bytes = kReserve;
    // Every write reads the free space: the test flips the disk between two writes.
    options.disk_check_interval = std::chrono::milliseconds(0);
    store_ = OpenTestStore(options);
    ASSERT_NE(store_, nullptr);
  }

  static void ExpectNoSpace(const Status& status) {
    EXPECT_TRUE(Is(status, ErrorReason::kNoSpace)) << status;
    EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status;
  }

  // Destroyed in reverse order: the store closes before its Env goes.
  TempDir dir_;
  std::shared_ptr<FullDiskFileSystem> disk_ = std::make_shared<FullDiskFileSystem>(dir_.path());
  std::unique_ptr<rocksdb::Env> env_ = FullDiskFileSystem::NewEnv(disk_);
  std::unique_ptr<BucketStore> store_;
};

TEST_F(StoreFullDiskTest, WritesAreRefusedBeforeTheEngineAndResumeWithoutARestart) {
  SHOAL_ASSERT_OK(store_->Upsert(kC, "a", DocBody(1)).status());
  EXPECT_GT(store_->disk_space().last_free_bytes(), kReserve) << "the guard read the disk";

  disk_->SetFull(true);
  ExpectNoSpace(store_->Upsert(kC, "b", DocBody(2)).status());
  ExpectNoSpace(store_->Insert(kC, "c", DocBody(3)).status());
  ExpectNoSpace(store_->Update(kC, "a", DocBody(4)).status());
  ExpectNoSpace(store_->Delete(kC, "a").status());
  const std::string body5 = DocBody(5);
  const std::string body6 = DocBody(6);
  const std::vector<Mutation> batch = {
      {.kind = MutationKind::kUpsert, .collection = kC, .primary_key = "d", .body = body5},
      {.kind = MutationKind::kInsert, .collection = kC, .primary_key = "a", .body = body6},
  };
  ExpectNoSpace(store_->ApplyBatch(std::vector<Mutation>{batch[0]}).status());
  // All or nothing: the batch's DUPLICATE is decided before the disk is asked.
  EXPECT_TRUE(Is(store_->ApplyBatch(batch).status(), ErrorReason::kDuplicate));
  SHOAL_ASSERT_OK_AND_ASSIGN(auto each, store_->ApplyEach(batch));
  ASSERT_EQ(each.size(), 2u);
  ExpectNoSpace(each[0].status());
  // A write that would change nothing keeps its own answer.
  EXPECT_TRUE(Is(each[1].status(), ErrorReason::kDuplicate)) << each[1].status();
  EXPECT_TRUE(Is(store_->Insert(kC, "a", DocBody(7)).status(), ErrorReason::kDuplicate));
  // Reads need no disk space.
  SHOAL_ASSERT_OK_AND_ASSIGN(Document a, store_->Get(kC, "a"));
  EXPECT_EQ(a.body, DocBody(1));
  EXPECT_TRUE(Is(store_->Get(kC, "b").status(), ErrorReason::kNotFound));
  ExportOptions export_options{.directory = dir_.Sub("export")};
  ExpectNoSpace(store_->ExportRange(PointRange::From(0), export_options).status());
  EXPECT_EQ(disk_->refused(), 0u) << "the engine met a refused write";
  EXPECT_GE(store_->disk_space().refused(), 7u);

  // Space is back: the same store takes writes again, with no restart.
  disk_->SetFull(false);
  SHOAL_ASSERT_OK(store_->Upsert(kC, "b", DocBody(2)).status());
  SHOAL_ASSERT_OK(store_->Update(kC, "a", DocBody(4)).status());
  SHOAL_ASSERT_OK(store_->ApplyBatch(std::vector<Mutation>{batch[0]}).status());
  SHOAL_ASSERT_OK(store_->ExportRange(PointRange::From(0), export_options).status());

  // Every acknowledged write, and no refused one, survives a close and a reopen.
  SHOAL_ASSERT_OK(store_->Close());
  store_.reset();
  Open();
  SHOAL_ASSERT_OK_AND_ASSIGN(Document a2, store_->Get(kC, "a"));
  EXPECT_EQ(a2.body, DocBody(4));
  SHOAL_ASSERT_OK_AND_ASSIGN(Document b, store_->Get(kC, "b"));
  EXPECT_EQ(b.body, DocBody(2));
  SHOAL_ASSERT_OK_AND_ASSIGN(Document d, store_->Get(kC, "d"));
  EXPECT_EQ(d.body, DocBody(5));
  EXPECT_TRUE(Is(store_->Get(kC, "c").status(), ErrorReason::kNotFound));
}

TEST_F(StoreFullDiskTest, ADiskAtItsReserveRefusesDocumentsButNotTheDirectory) {
  SHOAL_ASSERT_OK(store_->Upsert(kC, "a", DocBody(1)).status());
  // Near its end: the disk still takes writes, but fewer free bytes than the reserve remain.
  disk_->SetFreeBytes(kReserve - 1);
  ExpectNoSpace(store_->Upsert(kC, "b", DocBody(2)).status());
  // A write that fits in the margin above the reserve goes; one that does not is refused.
  disk_->SetFreeBytes(kReserve + 4096);
  SHOAL_ASSERT_OK(store_->Upsert(kC, "b", DocBody(2)).status());
  ExpectNoSpace(store_->Upsert(kC, "big", std::string(8192, ' ') + DocBody(3)).status());
  // The directory's records (a move's states, its abort) are a few bytes each and take the
  // reserve: a move can always finish or be undone.
  disk_->SetFreeBytes(0);
  SHOAL_ASSERT_OK(store_->SetBucketState(kTestBucket, BucketState::kLeaving));
  SHOAL_ASSERT_OK(store_->SetBucketState(kTestBucket, BucketState::kReadWrite));
  disk_->SetFreeBytes(std::nullopt);
  SHOAL_ASSERT_OK(store_->Upsert(kC, "c", DocBody(3)).status());
  EXPECT_EQ(disk_->refused(), 0u);
}

}  // namespace
}  // namespace shoal::storage
