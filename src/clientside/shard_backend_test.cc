// The ShardBackend contract (shard_backend.h) on the in-memory and the embedded backends, and
// the embedded backend's encoding. The PostgreSQL backend runs the same contract in
// postgres_test.cc.

#include <gtest/gtest.h>

#include "src/clientside/embedded_shard_backend.h"
#include "src/clientside/memory_shard_backend.h"
#include "src/clientside/test_support.h"

namespace shoal::clientside {
namespace {

TEST(ShardBackendTest, MemoryContract) {
  MemoryShardBackend shard("contract");
  testing::CheckBackendContract(shard);
}

TEST(ShardBackendTest, EmbeddedContract) {
  testing::ScopedTempDir dir;
  testing::EmbeddedShards shards(dir.path());
  auto shard = shards.NewShard();
  testing::CheckBackendContract(*shard);
}

TEST(ShardBackendTest, EmbeddedShardsInOneStoreAreIndependent) {
  testing::ScopedTempDir dir;
  testing::EmbeddedShards shards(dir.path());
  auto a = shards.NewShard();
  auto b = shards.NewShard();
  const ShardDocument d{
      .primary_key = "k", .body = "{}", .version = MapVersion(1), .tombstone = false};
  ASSERT_TRUE(a->Insert(d).ok());
  EXPECT_TRUE(b->Insert(d).ok());
  EXPECT_TRUE(a->Delete("k").ok());
  EXPECT_TRUE(b->Get("k").ok());
}

TEST(ShardBackendTest, EmbeddedEncodingRoundTrips) {
  for (const ShardDocument& d :
       {ShardDocument{.primary_key = "a",
       .body = R"({"x":[1,2,{"y":"}"}]})",
       .version = MapVersion(7),
       .tombstone = false},
        ShardDocument{
            .primary_key = "b", .body = "", .version = MapVersion(1u << 31), .tombstone = true}}) {
    const std::string encoded = EncodeShardBody(d);
    auto decoded = DecodeShardBody(d.primary_key, encoded);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(*decoded, d);
    EXPECT_EQ(EncodeShardBody(*decoded), encoded);
  }
  EXPECT_FALSE(DecodeShardBody("c", R"({"v":x,"t":false,"b":{}})").ok());
  EXPECT_FALSE(DecodeShardBody("c", R"({"x":1})").ok());
}

}  // namespace
}  // namespace shoal::clientside
