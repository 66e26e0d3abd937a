// A bucket whose every copy is down makes only its own keys unavailable (one copy per bucket,
// two nodes, node 2 killed). A client that connects after the crash writes and reads the keys of
// node 1's buckets even when node 2 held the bucket of the collection's schema document
// (hotspot::HotCollection::CurrentSchema), and a collection that declares sharded fields, whose
// writes must wait for that schema, says so.

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "include/shoal/shoal.h"
#include "src/cluster/shard_map.h"
#include "src/common/point.h"
#include "src/hotspot/hot_collection.h"
#include "tests/cluster/process_cluster.h"

namespace shoal::cluster_test {
namespace {

constexpr uint32_t kLive = 1;
constexpr uint32_t kDead = 2;

class DownBucketTest : public testing::Test {
 protected:
  void SetUp() override { cluster_ = std::make_unique<ProcessCluster>(ShoalBinary()); }
  void TearDown() override {
    if (HasFailure()) std::fprintf(stderr, "%s\n", cluster_->LogTails(15).c_str());
    cluster_.reset();
  }

  // The node that owns `key` of collection `name` in the coordinator's map (0 if unknown).
  uint32_t OwnerOf(std::string_view name, std::string_view key) {
    auto state = cluster_->State();
    if (!state.ok()) return 0;
    for (const storage::CollectionSpec& spec : state->collections) {
      if (spec.name == name) {
        return cluster::OwnerOf(state->map->Lookup(PointOf(spec.id, key))).value();
      }
    }
    return 0;
  }
  // The first of prefix0, prefix1, ... whose schema document lives on node `node`.
  std::string NameWithSchemaOn(const std::string& prefix, uint32_t node) {
    for (int i = 0; i < 1000; ++i) {
      std::string name = prefix + std::to_string(i);
      if (OwnerOf(hotspot::kSchemaCollection, name) == node) return name;
    }
    return {};
  }
  // The first of k0, k1, ... of collection `name` that node `node` owns.
  std::string KeyOn(const std::string& name, uint32_t node) {
    for (int i = 0; i < 1000; ++i) {
      std::string key = "k" + std::to_string(i);
      if (OwnerOf(name, key) == node) return key;
    }
    return {};
  }

  std::unique_ptr<ProcessCluster> cluster_;
};

TEST_F(DownBucketTest, ANewClientWritesTheLiveKeysOfACollectionWhoseSchemaBucketIsDown) {
  ASSERT_TRUE(cluster_->StartCoordinator(2, 8).ok());
  for (uint32_t id : {kLive, kDead}) ASSERT_TRUE(cluster_->StartNode(id).ok());
  const Status serving = cluster_->WaitServing(30);
  ASSERT_TRUE(serving.ok()) << serving;

  std::string plain;
  std::string declared;
  std::string plain_key;     // on node 1
  std::string declared_key;  // on node 1
  {
    auto db = Database::Connect(cluster_->uri(), cluster_->connect_options());
    ASSERT_TRUE(db.ok()) << db.status();
    // A first write creates the schema collection, whose buckets then place every name.
    auto warm = (*db)->GetCollection("warm");
    ASSERT_TRUE(warm.ok()) << warm.status();
    ASSERT_TRUE(warm->Upsert("k", R"({"a":1})").ok());
    plain = NameWithSchemaOn("plain", kDead);
    declared = NameWithSchemaOn("declared", kDead);
    ASSERT_FALSE(plain.empty());
    ASSERT_FALSE(declared.empty());
    for (const std::string& name : {plain, declared}) {
      auto c = (*db)->GetCollection(name);
      ASSERT_TRUE(c.ok()) << c.status();
      ASSERT_TRUE(c->Upsert("first", R"({"a":1})").ok());
    }
    auto c = (*db)->GetCollection(declared);
    ASSERT_TRUE(c.ok()) << c.status();
    const Status declared_fields =
        c->Declare(R"({"votes": {"fold": "sum", "neutral": 0, "shards": 2}})");
    ASSERT_TRUE(declared_fields.ok()) << declared_fields;
    plain_key = KeyOn(plain, kLive);
    declared_key = KeyOn(declared, kLive);
    ASSERT_FALSE(plain_key.empty());
    ASSERT_FALSE(declared_key.empty());
    ASSERT_TRUE(c->Upsert(declared_key, R"({"a":1})").ok());
    ASSERT_TRUE((*db)->Close().ok());
  }

  cluster_->Kill(kDead);
  auto db = Database::Connect(cluster_->uri(), cluster_->connect_options());
  ASSERT_TRUE(db.ok()) << db.status();

  // A plain collection: node 1's keys are written and read back.
  auto c = (*db)->GetCollection(plain);
  ASSERT_TRUE(c.ok()) << c.status();
  auto written = c->Upsert(plain_key, R"({"b":2})");
  ASSERT_TRUE(written.ok()) << written.status();
  auto read = c->Get(plain_key);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->json, R"({"b":2})");

  // A collection with sharded fields cannot tell a plain write from one that sets a field
  // without its schema: the write fails, naming why, and changes nothing.
  auto d = (*db)->GetCollection(declared);
  ASSERT_TRUE(d.ok()) << d.status();
  auto refused = d->Upsert(declared_key, R"({"votes":5})");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable) << refused.status();
  EXPECT_NE(refused.status().message().find("declares sharded fields"), std::string::npos)
      << refused.status();
  EXPECT_EQ(d->Get(declared_key).status().code(), StatusCode::kUnavailable);

  // Node 2 back: the refused write left nothing, and the document folds its field again.
  ASSERT_TRUE(cluster_->Restart(kDead).ok());
  const Status back = cluster_->WaitServing(30);
  ASSERT_TRUE(back.ok()) << back;
  auto after = d->Get(declared_key);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->json, R"({"a":1,"votes":0})");
  ASSERT_TRUE((*db)->Close().ok());
}

}  // namespace
}  // namespace shoal::cluster_test
