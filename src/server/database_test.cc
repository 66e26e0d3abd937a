#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "include/shoal/shoal.h"
#include "tests/support/batch_contract_test_util.h"
#include "tests/support/collection_contract_test_util.h"

namespace shoal {
namespace {

std::string TempDir(const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp == nullptr ? "/tmp" : tmp) + "/shoal-db-test-" +
                    std::to_string(::getpid()) + "-" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(DatabaseTest, DocumentsQueriesAndReopen) {
  const std::string dir = TempDir("basic");
  {
    auto db = Database::OpenEmbedded({.data_dir = dir, .nodes = 2, .buckets = 8, .sync = false});
    ASSERT_TRUE(db.ok()) << db.status();
    auto users = (*db)->GetCollection("users");
    ASSERT_TRUE(users.ok()) << users.status();
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(users
                      ->Insert("u" + std::to_string(i),
                               R"({"age": )" + std::to_string(i) + R"(, "city": "Paris"})")
                      .ok());
    }
    EXPECT_EQ(users->Insert("u1", "{}").status().code(), StatusCode::kAlreadyExists);
    EXPECT_EQ(users->Update("nobody", "{}").status().code(), StatusCode::kNotFound);
    EXPECT_EQ(users->Insert("bad", "{not json").status().code(), StatusCode::kInvalidArgument);
    auto got = users->Get("u7");
    ASSERT_TRUE(got.ok());
    EXPECT_NE(got->json.find("\"age\": 7"), std::string::npos);
    EXPECT_EQ(users->CompareAndSet("u7", got->version + 1000, "{}").status().code(),
              StatusCode::kFailedPrecondition);
    ASSERT_TRUE(users->CompareAndSet("u7", got->version, R"({"age": 70})").ok());
    ASSERT_TRUE(users->Delete("u8").ok());

    // Filtered query, paged: every match exactly once.
    QueryOptions query{.filter = {{"age", Op::kGe, "40"}}, .limit = 3, .cursor = ""};
    std::set<std::string> seen;
    for (int page = 0; page < 100; ++page) {
      auto result = users->Query(query);
      ASSERT_TRUE(result.ok()) << result.status();
      for (const auto& d : result->documents) EXPECT_TRUE(seen.insert(d.key).second) << d.key;
      if (result->next_cursor.empty()) break;
      query.cursor = result->next_cursor;
    }
    EXPECT_EQ(seen.size(), 11u);  // 40..49 and u7 (70)
    EXPECT_EQ(
        users->Query({.filter = {{"age", Op::kGe, "{"}}, .limit = 3, .cursor = ""}).status().code(),
        StatusCode::kInvalidArgument);

    // A third node: buckets move to it in the background while the data stays readable.
    auto added = (*db)->AddNode();
    ASSERT_TRUE(added.ok()) << added.status();
    for (int i = 0; i < 50; ++i) {
      if (i == 8) continue;
      ASSERT_TRUE(users->Get("u" + std::to_string(i)).ok()) << i;
    }
    ASSERT_TRUE((*db)->Close().ok());
  }
  {
    auto db = Database::OpenEmbedded({.data_dir = dir, .nodes = 2, .buckets = 8, .sync = false});
    ASSERT_TRUE(db.ok()) << db.status();
    auto users = (*db)->GetCollection("users");
    ASSERT_TRUE(users.ok());
    auto got = users->Get("u7");
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->json, R"({"age": 70})");
    EXPECT_EQ(users->Get("u8").status().code(), StatusCode::kNotFound);
    EXPECT_TRUE(users->Get("u49").ok());
  }
  std::filesystem::remove_all(dir);
}

TEST(DatabaseTest, BatchOnAnEmbeddedCluster) {
  const std::string dir = TempDir("batch");
  auto db = Database::OpenEmbedded({.data_dir = dir, .nodes = 3, .buckets = 8, .sync = false});
  ASSERT_TRUE(db.ok()) << db.status();
  auto docs = (*db)->GetCollection("docs");
  ASSERT_TRUE(docs.ok()) << docs.status();
  batch_test::ExpectBatchContract(*docs);

  // A declared sharded field is refused in its own slot, as by a single write; the rest apply.
  auto votes = (*db)->GetCollection("votes");
  ASSERT_TRUE(votes.ok()) << votes.status();
  ASSERT_TRUE(votes->Declare(R"({"count": {"fold": "sum", "neutral": 0, "shards": 4}})").ok());
  std::vector<BatchWrite> writes = {batch_test::Write(BatchOp::kUpsert, "p1", R"({"title":"x"})"),
                                    batch_test::Write(BatchOp::kUpsert, "p2", R"({"count":3})"),
                                    batch_test::Write(BatchOp::kUpsert, "p3", R"({"title":"z"})")};
  auto results = votes->Batch(writes);
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_TRUE((*results)[0].ok()) << (*results)[0].status();
  EXPECT_EQ((*results)[1].status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*results)[1].status().code(), votes->Upsert("p2", R"({"count":3})").status().code());
  EXPECT_TRUE((*results)[2].ok()) << (*results)[2].status();
  EXPECT_EQ(votes->Get("p2").status().code(), StatusCode::kNotFound);
  ASSERT_TRUE((*db)->Close().ok());
  std::filesystem::remove_all(dir);
}

// QueryStream embedded (ThreadRuntime: the paged default of Runtime::StreamScan): Query's
// documents in Query's order, with sharded fields folded and filtered after folding.
TEST(DatabaseTest, QueryStreamMatchesQueryAndFoldsShardedFields) {
  const std::string dir = TempDir("stream");
  auto db = Database::OpenEmbedded({.data_dir = dir, .nodes = 2, .buckets = 8, .sync = false});
  ASSERT_TRUE(db.ok()) << db.status();
  auto posts = (*db)->GetCollection("posts");
  ASSERT_TRUE(posts.ok()) << posts.status();
  ASSERT_TRUE(posts->Declare(R"({"votes": {"fold": "sum", "neutral": 0, "shards": 4}})").ok());
  for (int i = 0; i < 40; ++i) {
    const std::string key = "p" + std::to_string(i);
    ASSERT_TRUE(posts->Insert(key, R"({"n": )" + std::to_string(i) + "}").ok());
    for (int v = 0; v < i % 3; ++v) ASSERT_TRUE(posts->Apply(key, "votes", "1").ok());
  }
  // `n` is filtered by the nodes, `votes` after folding.
  const QueryOptions query{
      .filter = {{"n", Op::kGe, "10"}, {"votes", Op::kGe, "1"}}, .limit = 4, .cursor = ""};
  std::vector<Document> paged;
  QueryOptions next = query;
  for (int page = 0; page < 100; ++page) {
    auto result = posts->Query(next);
    ASSERT_TRUE(result.ok()) << result.status();
    paged.insert(paged.end(), result->documents.begin(), result->documents.end());
    if (result->next_cursor.empty()) break;
    next.cursor = result->next_cursor;
  }
  std::vector<Document> streamed;
  Status status = posts->QueryStream(query, [&](const Document& d) {
    streamed.push_back(d);
    return OkStatus();
  });
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(paged.size(), 20u);  // n in 10..39 with n % 3 != 0
  ASSERT_EQ(streamed.size(), paged.size());
  for (size_t i = 0; i < paged.size(); ++i) {
    EXPECT_EQ(streamed[i].key, paged[i].key);
    EXPECT_EQ(streamed[i].json, paged[i].json);
    EXPECT_NE(streamed[i].json.find("\"votes\""), std::string::npos) << streamed[i].json;
  }
  // Bad filters are refused.
  EXPECT_EQ(posts
                ->QueryStream({.filter = {{"n", Op::kGe, "{"}}, .limit = 4, .cursor = ""},
                              [](const Document&) { return OkStatus(); })
                .code(),
            StatusCode::kInvalidArgument);
  ASSERT_TRUE((*db)->Close().ok());
  std::filesystem::remove_all(dir);
}

TEST(DatabaseTest, ReadOfAnUnknownCollectionDoesNotCreateIt) {
  const std::string dir = TempDir("unknown");
  {
    auto db = Database::OpenEmbedded({.data_dir = dir, .nodes = 2, .buckets = 8, .sync = false});
    ASSERT_TRUE(db.ok()) << db.status();
    collection_test::ExpectReadsOfAMissingCollectionCreateNothing(**db, "nocoll");
    collection_test::ExpectErrorsInUserWords(**db, "words");
    collection_test::ExpectCreatingWritesCreateAMissingCollection(**db, "fresh");
    ASSERT_TRUE((*db)->Close().ok());
  }
  // Reopened: still only the collections a write created.
  auto reopened =
      Database::OpenEmbedded({.data_dir = dir, .nodes = 2, .buckets = 8, .sync = false});
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  auto never = (*reopened)->GetCollection("never");
  ASSERT_TRUE(never.ok()) << never.status();
  collection_test::ExpectUnknownCollection(never->Get("k").status(), "never", "Get");
  auto created = (*reopened)->GetCollection("nocoll");
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_TRUE(created->Get("k").ok());
  ASSERT_TRUE((*reopened)->Close().ok());
  std::filesystem::remove_all(dir);
}

TEST(DatabaseTest, ACollectionNameOutsideTheRuleIsRefused) {
  const std::string dir = TempDir("names");
  auto db = Database::OpenEmbedded({.data_dir = dir, .nodes = 1, .buckets = 4, .sync = false});
  ASSERT_TRUE(db.ok()) << db.status();
  collection_test::ExpectNameRuleIsEnforced(**db);
  ASSERT_TRUE((*db)->Close().ok());
  std::filesystem::remove_all(dir);
}

TEST(DatabaseTest, BadOptionsAreRejected) {
  EXPECT_EQ(Database::OpenEmbedded({.data_dir = ""}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Database::OpenEmbedded({.data_dir = TempDir("bad"), .nodes = 0}).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shoal
