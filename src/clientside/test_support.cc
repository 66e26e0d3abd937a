#include "src/clientside/test_support.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <nlohmann/json.hpp>

namespace shoal::clientside::testing {

ScopedTempDir::ScopedTempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "shoal-cs-XXXXXX").string();
  char* made = mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr);
  path_ = pattern;
}

ScopedTempDir::~ScopedTempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::unique_ptr<metadata::EmbeddedMetadataStore> OpenMetadata(const std::string& path) {
  auto store =
      metadata::EmbeddedMetadataStore::Open({.path = path, .sync = false, .now_micros = {}});
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

EmbeddedShards::EmbeddedShards(const std::string& path) {
  storage::StoreOptions options;
  options.path = path;
  options.sync = storage::SyncPolicy::kPeriodic;
  options.check_ownership = false;
  options.block_cache_bytes = 8u << 20;
  options.write_buffer_bytes = 8u << 20;
  auto store = storage::BucketStore::Open(options);
  EXPECT_TRUE(store.ok()) << store.status();
  store_ = std::shared_ptr<storage::BucketStore>(*std::move(store));
}

std::shared_ptr<ShardBackend> EmbeddedShards::NewShard() {
  const uint32_t id = next_collection_++;
  auto shard = EmbeddedShardBackend::Create(store_, CollectionId(id), "shard" + std::to_string(id));
  EXPECT_TRUE(shard.ok()) << shard.status();
  return std::shared_ptr<ShardBackend>(*std::move(shard));
}

void CheckBackendContract(ShardBackend& s) {
  auto doc = [](std::string pk, std::string body, uint64_t v, bool tomb = false) {
    return ShardDocument{.primary_key = std::move(pk),
                         .body = std::move(body),
                         .version = MapVersion(v),
                         .tombstone = tomb};
  };
  const auto code = [](const Status& st) { return st.code(); };
  // Insert / DUPLICATE, Get.
  EXPECT_TRUE(s.Insert(doc("a", R"({"n":1})", 1)).ok());
  EXPECT_EQ(code(s.Insert(doc("a", R"({"n":2})", 1))), StatusCode::kAlreadyExists);
  auto got = s.Get("a");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(SameJson(got->body, R"({"n":1})"));
  EXPECT_EQ(got->version, MapVersion(1));
  EXPECT_FALSE(got->tombstone);
  EXPECT_EQ(code(s.Get("zz").status()), StatusCode::kNotFound);
  // Update / NOT_FOUND.
  EXPECT_TRUE(s.Update(doc("a", R"({"n":3})", 2)).ok());
  EXPECT_EQ(code(s.Update(doc("b", R"({"n":3})", 2))), StatusCode::kNotFound);
  EXPECT_EQ(s.Get("a")->version, MapVersion(2));
  // Conditional update: NOT_FOUND when the condition fails or the key is absent.
  EXPECT_EQ(code(s.UpdateIf(doc("a", R"({"n":4})", 2), ShardCondition::VersionIs(MapVersion(1)))),
            StatusCode::kNotFound);
  EXPECT_TRUE(s.UpdateIf(doc("a", R"({"n":4})", 3), ShardCondition::IsLive()).ok());
  EXPECT_EQ(code(s.UpdateIf(doc("b", "{}", 3), ShardCondition{})), StatusCode::kNotFound);
  // Tombstones are documents: Insert over one is DUPLICATE; UpdateIf(tombstone) revives it.
  EXPECT_TRUE(s.Upsert(doc("t", "", 3, true)).ok());
  EXPECT_TRUE(s.Get("t")->tombstone);
  EXPECT_EQ(code(s.Insert(doc("t", "{}", 3))), StatusCode::kAlreadyExists);
  EXPECT_EQ(code(s.UpdateIf(doc("t", R"({"x":1})", 3), ShardCondition::IsLive())),
            StatusCode::kNotFound);
  // Parameterized upsert: insert when absent, replace when the condition holds, else DUPLICATE.
  EXPECT_TRUE(s.UpsertIf(doc("u", R"({"u":1})", 3), ShardCondition::IsTombstone()).ok());
  EXPECT_EQ(code(s.UpsertIf(doc("u", R"({"u":2})", 3), ShardCondition::IsTombstone())),
            StatusCode::kAlreadyExists);
  EXPECT_TRUE(s.UpsertIf(doc("t", R"({"t":1})", 3), ShardCondition::IsTombstone()).ok());
  EXPECT_FALSE(s.Get("t")->tombstone);
  EXPECT_TRUE(s.UpsertIf(doc("u", R"({"u":3})", 3), ShardCondition::IsLive()).ok());
  EXPECT_TRUE(SameJson(s.Get("u")->body, R"({"u":3})"));
  // Delete / DeleteIf: physical; NOT_FOUND when absent or the condition fails.
  EXPECT_EQ(code(s.DeleteIf("u", ShardCondition::IsTombstone())), StatusCode::kNotFound);
  EXPECT_TRUE(s.DeleteIf("u", ShardCondition::VersionIs(MapVersion(3))).ok());
  EXPECT_EQ(code(s.Get("u").status()), StatusCode::kNotFound);
  EXPECT_TRUE(s.Insert(doc("u", R"({"u":4})", 3)).ok());  // absent again: insert works
  EXPECT_TRUE(s.Delete("u").ok());
  EXPECT_EQ(code(s.Delete("u")), StatusCode::kNotFound);
  // Query: sorted by key, resumable, filters, versions, tombstones.
  for (int i = 0; i < 25; ++i) {
    char key[8];
    snprintf(key, sizeof(key), "q%02d", 24 - i);
    EXPECT_TRUE(s.Upsert(doc(key, NumberedBody(i), i % 2 == 0 ? 4 : 5, i == 7)).ok());
  }
  ShardQuery q;
  q.limit = 4;
  q.has_after_key = true;
  q.after_key = "p";
  std::vector<std::string> keys;
  for (;;) {
    auto page = s.Query(q);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const auto& d : page->documents) keys.push_back(d.primary_key);
    if (page->done) break;
    q.after_key = page->documents.back().primary_key;
  }
  ASSERT_EQ(keys.size(), 25u);  // "t" and 24 of the 25 q (one is a tombstone)
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  q = ShardQuery{};
  q.include_tombstones = true;
  q.version = MapVersion(4);
  auto v4 = s.Query(q);
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->documents.size(), 13u);
  q = ShardQuery{};
  q.include_tombstones = true;
  auto all = s.Query(q);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->documents.size(), 25u + 2u);  // a, t and the q
  q = ShardQuery{};
  q.filter.all_of.push_back({.path = "n", .op = storage::CompareOp::kGe, .value = int64_t{20}});
  auto filtered = s.Query(q);
  ASSERT_TRUE(filtered.ok()) << filtered.status();
  EXPECT_EQ(filtered->documents.size(), 5u);
  q.or_version = MapVersion(5);  // plus every version-5 document, tombstones included
  filtered = s.Query(q);
  ASSERT_TRUE(filtered.ok()) << filtered.status();
  EXPECT_EQ(filtered->documents.size(), 15u);
  // The version-5 documents the filter rejects (n < 20; q17 is a tombstone) are shadow rows;
  // the matching ones come whole.
  for (const ShardDocument& d : filtered->documents) {
    ASSERT_EQ(d.primary_key[0], 'q');
    const int n = 24 - std::stoi(d.primary_key.substr(1));
    if (n >= 20) {
      EXPECT_FALSE(d.tombstone) << d.DebugString();
      EXPECT_FALSE(d.body.empty()) << d.DebugString();
    } else {
      EXPECT_EQ(d, ShadowRow(d.primary_key, MapVersion(5))) << d.DebugString();
    }
  }
  q.limit = 3;  // the cursor moves over shadow rows too
  q.has_after_key = true;
  q.after_key = "q04";
  filtered = s.Query(q);
  ASSERT_TRUE(filtered.ok()) << filtered.status();
  ASSERT_EQ(filtered->documents.size(), 3u);
  EXPECT_EQ(filtered->documents[0], ShadowRow("q05", MapVersion(5)));
  EXPECT_EQ(filtered->documents[1], ShadowRow("q07", MapVersion(5)));
  EXPECT_FALSE(filtered->done);
  q.limit = 1000;
  q.has_after_key = false;
  q.after_key.clear();
  q.or_version.reset();
  q.filter.all_of = {{.path = "s.t", .op = storage::CompareOp::kEq, .value = std::string("x3")}};
  filtered = s.Query(q);
  ASSERT_TRUE(filtered.ok()) << filtered.status();
  ASSERT_EQ(filtered->documents.size(), 1u);
  EXPECT_EQ(filtered->documents[0].primary_key, "q21");
}

std::string NumberedBody(int i) {
  return "{\"n\":" + std::to_string(i) + ",\"s\":{\"t\":\"x" + std::to_string(i) + "\"}}";
}

}  // namespace shoal::clientside::testing
