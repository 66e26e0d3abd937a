#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>

#include "src/storage/bucket_store.h"
#include "src/storage/codec.h"
#include "src/storage/errors.h"
#include "src/storage/test_support.h"

namespace shoal::storage {
namespace {

constexpr CollectionId kC = kTestCollection;
constexpr CollectionId kOther{2};
constexpr int kDocs = 300;

class ScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = OpenTestStore(TestOptions(dir_.Sub("db")));
    ASSERT_NE(store_, nullptr);
    SHOAL_ASSERT_OK(store_->CreateCollection({.id = kOther, .name = "other"}));
    for (int i = 0; i < kDocs; ++i) {
      const std::string body =
          fmt::format(R"({{"n":{},"g":{{"k":"{}"}},"even":{}}})", i, static_cast<char>('a' + i % 5),
                      i % 2 == 0 ? "true" : "false");
      SHOAL_ASSERT_OK(store_->Insert(kC, Key(i), body).status());
      SHOAL_ASSERT_OK(store_->Insert(kOther, Key(i), body).status());
    }
  }
  static std::string Key(int i) { return "key" + std::to_string(i); }

  std::vector<Document> All(ScanOptions options) {
    std::vector<Document> out;
    SHOAL_EXPECT_OK(store_->ForEach(options, [&](const Document& d) {
      out.push_back(d);
      return true;
    }));
    return out;
  }

  TempDir dir_;
  std::unique_ptr<BucketStore> store_;
};

TEST_F(ScanTest, EverythingInPointOrder) {
  std::vector<Document> docs = All({});
  ASSERT_EQ(docs.size(), 2u * kDocs);
  for (size_t i = 1; i < docs.size(); ++i) {
    EXPECT_LT(EncodeStoredKey(docs[i - 1].collection, docs[i - 1].primary_key),
              EncodeStoredKey(docs[i].collection, docs[i].primary_key));
  }
  EXPECT_EQ(All({.collection = kC}).size(), static_cast<size_t>(kDocs));
}

TEST_F(ScanTest, RangeScanReturnsExactlyTheRange) {
  const PointRange range = *PointRange::Make(1ull << 62, 3ull << 62);
  std::vector<Document> docs = All({.range = range, .collection = kC});
  size_t expected = 0;
  for (int i = 0; i < kDocs; ++i) expected += range.Contains(PointOf(kC, Key(i)));
  EXPECT_EQ(docs.size(), expected);
  for (const Document& d : docs) EXPECT_TRUE(range.Contains(PointOf(kC, d.primary_key)));
}

TEST_F(ScanTest, FieldPredicates) {
  EXPECT_EQ(All({.collection = kC, .filter = {{{"n", CompareOp::kLt, int64_t{10}}}}}).size(), 10u);
  EXPECT_EQ(All({.collection = kC, .filter = {{{"g.k", CompareOp::kEq, std::string("c")}}}}).size(),
            static_cast<size_t>(kDocs / 5));
  EXPECT_EQ(All({.collection = kC,
                 .filter = {{{"even", CompareOp::kEq, true}, {"n", CompareOp::kGe, int64_t{100}}}}})
                .size(),
            100u);
  EXPECT_TRUE(Is(store_->Scan({.filter = {{{"", CompareOp::kEq, int64_t{1}}}}}).status(),
                 ErrorReason::kInvalidArgument));
}

TEST_F(ScanTest, TombstonesOnlyWhenAsked) {
  for (int i = 0; i < 10; ++i) SHOAL_ASSERT_OK(store_->Delete(kC, Key(i)).status());
  EXPECT_EQ(All({.collection = kC}).size(), static_cast<size_t>(kDocs - 10));
  std::vector<Document> with = All({.collection = kC, .include_tombstones = true});
  EXPECT_EQ(with.size(), static_cast<size_t>(kDocs));
  EXPECT_EQ(std::count_if(with.begin(), with.end(), [](const Document& d) { return d.tombstone; }),
            10);
  // A field predicate never matches a tombstone.
  EXPECT_EQ(All({.collection = kC,
                 .filter = {{{"n", CompareOp::kLt, int64_t{10}}}},
                 .include_tombstones = true})
                .size(),
            0u);
}

TEST_F(ScanTest, SnapshotScanIgnoresLaterWrites) {
  std::unique_ptr<Snapshot> snap = store_->GetSnapshot();
  SHOAL_ASSERT_OK(store_->Delete(kC, Key(1)).status());
  SHOAL_ASSERT_OK(store_->Insert(kC, "late", "{\"n\":-1}").status());
  EXPECT_EQ(All({.collection = kC, .snapshot = snap.get()}).size(), static_cast<size_t>(kDocs));
  EXPECT_EQ(All({.collection = kC}).size(), static_cast<size_t>(kDocs));  // -1 +1
}

TEST_F(ScanTest, CursorResumesWithoutSkipsOrRepeats) {
  std::set<std::string> seen;
  ScanOptions options{.collection = kC, .max_documents = 7};
  int pages = 0;
  while (true) {
    SHOAL_ASSERT_OK_AND_ASSIGN(ScanPage page, store_->Scan(options));
    EXPECT_LE(page.documents.size(), 7u);
    for (const Document& d : page.documents) EXPECT_TRUE(seen.insert(d.primary_key).second);
    ++pages;
    // Writes between pages: keys present throughout are still returned exactly once.
    if (pages == 3) SHOAL_ASSERT_OK(store_->Upsert(kC, Key(kDocs - 1), "{\"n\":0}").status());
    if (page.next_cursor.empty()) break;
    options.cursor = page.next_cursor;
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kDocs));
  EXPECT_GE(pages, kDocs / 7);
}

TEST_F(ScanTest, CursorPagesBySnapshotAndExaminedLimit) {
  std::unique_ptr<Snapshot> snap = store_->GetSnapshot();
  ScanOptions options{.collection = kC,
                      .filter = {{{"n", CompareOp::kEq, int64_t{5}}}},
                      .snapshot = snap.get(),
                      .max_examined = 50};
  size_t found = 0;
  int pages = 0;
  do {
    SHOAL_ASSERT_OK_AND_ASSIGN(ScanPage page, store_->Scan(options));
    EXPECT_LE(page.examined, 50u);
    found += page.documents.size();
    options.cursor = page.next_cursor;
    ++pages;
  } while (!options.cursor.empty());
  EXPECT_EQ(found, 1u);
  EXPECT_GE(pages, 2 * kDocs / 50);
}

// max_page_bytes (a streamed message's bound): a page holds what fits, the next page starts at
// the first document that did not, and a document larger than the bound goes alone.
TEST_F(ScanTest, PageByteBoundIsHardAndResumesAtTheFirstDocumentLeftOut) {
  SHOAL_ASSERT_OK_AND_ASSIGN(ScanPage first, store_->Scan({.collection = kC, .max_documents = 3}));
  ASSERT_EQ(first.documents.size(), 3u);
  size_t three = 0;
  for (const Document& d : first.documents) three += d.primary_key.size() + d.body.size();

  // At the bound: all three fit.
  SHOAL_ASSERT_OK_AND_ASSIGN(
      ScanPage at, store_->Scan({.collection = kC, .max_documents = 10, .max_page_bytes = three}));
  ASSERT_EQ(at.documents.size(), 3u);
  // One byte less: the third waits for the next page, which starts with it.
  SHOAL_ASSERT_OK_AND_ASSIGN(
      ScanPage under,
      store_->Scan({.collection = kC, .max_documents = 10, .max_page_bytes = three - 1}));
  ASSERT_EQ(under.documents.size(), 2u);
  ASSERT_FALSE(under.next_cursor.empty());
  SHOAL_ASSERT_OK_AND_ASSIGN(
      ScanPage next,
      store_->Scan({.collection = kC, .cursor = under.next_cursor, .max_documents = 1}));
  ASSERT_EQ(next.documents.size(), 1u);
  EXPECT_EQ(next.documents[0].primary_key, first.documents[2].primary_key);

  // A bound below every document: one document per page, each exactly once.
  ScanOptions options{.collection = kC, .max_documents = 10, .max_page_bytes = 1};
  std::set<std::string> seen;
  while (true) {
    SHOAL_ASSERT_OK_AND_ASSIGN(ScanPage page, store_->Scan(options));
    ASSERT_EQ(page.documents.size(), 1u);
    EXPECT_TRUE(seen.insert(page.documents[0].primary_key).second);
    if (page.next_cursor.empty()) break;
    options.cursor = page.next_cursor;
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kDocs));
}

TEST_F(ScanTest, BadCursorsAreRejected) {
  EXPECT_TRUE(Is(store_->Scan({.cursor = "junk"}).status(), ErrorReason::kInvalidArgument));
  SHOAL_ASSERT_OK_AND_ASSIGN(ScanPage page, store_->Scan({.max_documents = 1}));
  ASSERT_FALSE(page.next_cursor.empty());
  const PointRange elsewhere = *PointRange::Make(0, 1);
  EXPECT_TRUE(Is(store_->Scan({.range = elsewhere, .cursor = page.next_cursor}).status(),
                 ErrorReason::kInvalidArgument));
}

}  // namespace
}  // namespace shoal::storage
