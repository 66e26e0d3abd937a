#pragma once

// The contract of Database::GetCollection (include/shoal/shoal.h) for names and for collections
// that do not exist, checked the same way on an embedded Database (database_test.cc) and over the
// network (src/process/net_cluster_test.cc): a name outside the rule is refused; every operation
// that does not create a collection fails on a missing one with UNKNOWN_COLLECTION naming it and
// creates nothing; Insert, Upsert, CompareAndSet with version 0 and a Batch holding one of those
// create it. Test-only; gtest assertions.

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "include/shoal/shoal.h"
#include "src/storage/errors.h"

namespace shoal::collection_test {

// `status` is the refusal of an operation on the missing collection `name`.
inline void ExpectUnknownCollection(const Status& status, std::string_view name,
                                    std::string_view operation) {
  EXPECT_EQ(status.code(), StatusCode::kNotFound) << operation << ": " << status;
  EXPECT_TRUE(storage::Is(status, storage::ErrorReason::kUnknownCollection))
      << operation << ": " << status;
  EXPECT_NE(MessageOf(status).find("no collection named \"" + std::string(name) + "\""),
            std::string_view::npos)
      << operation << ": " << status;
}

// `status` names the collection `name` and the key `key` as the caller typed them, and no
// internal collection id ("c4") or key encoding ("pk=").
inline void ExpectUserWords(const Status& status, std::string_view name, std::string_view key,
                            std::string_view operation) {
  ASSERT_FALSE(status.ok()) << operation;
  const std::string_view message = MessageOf(status);
  EXPECT_NE(message.find("collection \"" + std::string(name) + "\""), std::string_view::npos)
      << operation << ": " << status;
  EXPECT_NE(message.find("key \"" + std::string(key) + "\""), std::string_view::npos)
      << operation << ": " << status;
  EXPECT_EQ(message.find("pk="), std::string_view::npos) << operation << ": " << status;
  for (size_t i = 0; i + 1 < message.size(); ++i) {
    const bool id_like = message[i] == 'c' && (i == 0 || message[i - 1] == ' ') &&
                         message[i + 1] >= '0' && message[i + 1] <= '9';
    EXPECT_FALSE(id_like) << operation << ": " << status;
  }
}

// The errors of an existing collection `name` (unused by the caller) speak of it by its name and
// of keys as typed, whatever path they take (blocking, batch, asynchronous, query).
inline void ExpectErrorsInUserWords(Database& db, const std::string& name) {
  auto c = db.GetCollection(name);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->Insert("here", R"({"n":1})").ok());
  // A key that looks like a collection id stays as typed.
  for (const std::string key : {"x", "c4"}) {
    const Status got = c->Get(key).status();
    EXPECT_EQ(got.code(), StatusCode::kNotFound) << got;
    ExpectUserWords(got, name, key, "Get");
    ExpectUserWords(c->Update(key, "{}").status(), name, key, "Update");
    ExpectUserWords(c->CompareAndSet(key, 9, "{}").status(), name, key, "CompareAndSet");
  }
  ExpectUserWords(c->Insert("here", "{}").status(), name, "here", "Insert of a present key");
  auto batch = c->Batch(std::vector<BatchWrite>{
      {.op = BatchOp::kInsert, .key = "here", .json = "{}", .expected_version = 0}});
  ASSERT_TRUE(batch.ok()) << batch.status();
  ExpectUserWords((*batch)[0].status(), name, "here", "Batch");
  Status got_async;
  Status updated_async;
  c->GetAsync("x", [&](StatusOr<Document> d) { got_async = d.status(); });
  c->UpdateAsync("x", "{}", [&](StatusOr<uint64_t> v) { updated_async = v.status(); });
  db.WaitAsync();
  ExpectUserWords(got_async, name, "x", "GetAsync");
  ExpectUserWords(updated_async, name, "x", "UpdateAsync");
}

inline void ExpectNameRuleIsEnforced(Database& db) {
  for (const std::string& name : {std::string("bad\nname"), std::string("a\0b", 3), std::string(),
                                  std::string(257, 'x'), std::string("a b"), std::string("-rf")}) {
    auto refused = db.GetCollection(name);
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << refused.status();
  }
  EXPECT_TRUE(db.GetCollection(std::string(256, 'x')).ok());
  EXPECT_TRUE(db.GetCollection("split-move.v2_A").ok());
}

// Operations on the missing collection `name` (unused by the caller) that may not create it.
inline void ExpectReadsOfAMissingCollectionCreateNothing(Database& db, const std::string& name) {
  auto missing = db.GetCollection(name);
  ASSERT_TRUE(missing.ok()) << missing.status();
  ExpectUnknownCollection(missing->Get("k").status(), name, "Get");
  ExpectUnknownCollection(missing->Get("k", {.mode = ReadMode::kSnapshot}).status(), name,
                          "Get (snapshot)");
  ExpectUnknownCollection(missing->Query({}).status(), name, "Query");
  ExpectUnknownCollection(missing->QueryStream({}, [](const Document&) { return OkStatus(); }),
                          name, "QueryStream");
  ExpectUnknownCollection(missing->Update("k", "{}").status(), name, "Update");
  ExpectUnknownCollection(missing->Delete("k").status(), name, "Delete");
  ExpectUnknownCollection(missing->CompareAndSet("k", 7, "{}").status(), name,
                          "CompareAndSet with a version");
  ExpectUnknownCollection(missing->Schema().status(), name, "Schema");
  ExpectUnknownCollection(missing->Apply("k", "votes", "1").status(), name, "Apply");
  ExpectUnknownCollection(missing->Sharding("k", "votes").status(), name, "Sharding");
  auto batch = missing->Batch(std::vector<BatchWrite>{
      {.op = BatchOp::kDelete, .key = "k", .json = {}, .expected_version = 0},
      {.op = BatchOp::kUpdate, .key = "k", .json = "{}", .expected_version = 0}});
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ(batch->size(), 2u);
  for (const auto& result : *batch) ExpectUnknownCollection(result.status(), name, "Batch");
  Status got_async;
  Status deleted_async;
  missing->GetAsync("k", [&](StatusOr<Document> d) { got_async = d.status(); });
  missing->DeleteAsync("k", [&](StatusOr<uint64_t> v) { deleted_async = v.status(); });
  db.WaitAsync();
  ExpectUnknownCollection(got_async, name, "GetAsync");
  ExpectUnknownCollection(deleted_async, name, "DeleteAsync");

  // Nothing was created: a new handle finds no collection either.
  auto again = db.GetCollection(name);
  ASSERT_TRUE(again.ok()) << again.status();
  ExpectUnknownCollection(again->Get("k").status(), name, "Get through a new handle");

  // The first insert creates it; the handle opened before sees it from then on.
  auto inserted = missing->Insert("k", R"({"n":1})");
  ASSERT_TRUE(inserted.ok()) << inserted.status();
  auto got = again->Get("k");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->json, R"({"n":1})");
  auto page = again->Query({});
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->documents.size(), 1u);
}

// Each write that may store a document where none is creates the missing collection it names.
inline void ExpectCreatingWritesCreateAMissingCollection(Database& db, const std::string& prefix) {
  const auto expect_created = [&](const std::string& name, const auto& write) {
    auto collection = db.GetCollection(name);
    ASSERT_TRUE(collection.ok()) << collection.status();
    ASSERT_TRUE(write(*collection)) << name;
    auto reopened = db.GetCollection(name);
    ASSERT_TRUE(reopened.ok()) << reopened.status();
    auto got = reopened->Get("k");
    EXPECT_TRUE(got.ok()) << name << ": " << got.status();
  };
  expect_created(prefix + "-upsert", [](Collection& c) { return c.Upsert("k", "{}").ok(); });
  expect_created(prefix + "-cas", [](Collection& c) { return c.CompareAndSet("k", 0, "{}").ok(); });
  expect_created(prefix + "-batch", [](Collection& c) {
    auto results = c.Batch(std::vector<BatchWrite>{
        {.op = BatchOp::kDelete, .key = "gone", .json = {}, .expected_version = 0},
        {.op = BatchOp::kInsert, .key = "k", .json = "{}", .expected_version = 0}});
    return results.ok() && (*results)[1].ok();
  });
  expect_created(prefix + "-async", [&db](Collection& c) {
    Status inserted = InternalError("not called");
    c.InsertAsync("k", "{}", [&](StatusOr<uint64_t> v) { inserted = v.status(); });
    db.WaitAsync();
    return inserted.ok();
  });
}

}  // namespace shoal::collection_test
