// The ShardBackend contract (shard_backend.h) on the in-memory, the embedded and the remote
// (a Shoal cluster on loopback, over gRPC) backends, and the embedded encoding. The PostgreSQL
// backend runs the same contract in postgres_test.cc.

#include <gtest/gtest.h>

#include <functional>

#include "src/clientside/embedded_shard_backend.h"
#include "src/clientside/memory_shard_backend.h"
#include "src/clientside/remote_shard_backend.h"
#include "src/clientside/remote_test_cluster.h"
#include "src/clientside/test_support.h"

namespace shoal::clientside {
namespace {

enum class BackendKind : uint8_t { kMemory, kEmbedded, kRemote };

std::string KindName(const ::testing::TestParamInfo<BackendKind>& info) {
  switch (info.param) {
    case BackendKind::kMemory:
      return "Memory";
    case BackendKind::kEmbedded:
      return "Embedded";
    case BackendKind::kRemote:
      return "Remote";
  }
  return "?";
}

// A factory of empty shards of one backend; shards of one test share one store or cluster.
class ShardBackendTest : public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override {
    switch (GetParam()) {
      case BackendKind::kMemory:
        make_ = [this] {
          return std::make_shared<MemoryShardBackend>(std::to_string(next_memory_++));
        };
        return;
      case BackendKind::kEmbedded:
        embedded_ = std::make_unique<testing::EmbeddedShards>(dir_.path());
        make_ = [this] { return embedded_->NewShard(); };
        return;
      case BackendKind::kRemote: {
        auto cluster = testing::RemoteTestCluster::Start(dir_.path(), /*nodes=*/2, "shard");
        ASSERT_TRUE(cluster.ok()) << cluster.status();
        remote_ = *std::move(cluster);
        make_ = [this]() -> std::shared_ptr<ShardBackend> {
          auto shard = remote_->NewShard();
          EXPECT_TRUE(shard.ok()) << shard.status();
          return shard.ok() ? *std::move(shard) : nullptr;
        };
        return;
      }
    }
  }
  void TearDown() override {
    remote_.reset();
    embedded_.reset();
  }

  testing::ScopedTempDir dir_;
  int next_memory_ = 0;
  std::unique_ptr<testing::EmbeddedShards> embedded_;
  std::unique_ptr<testing::RemoteTestCluster> remote_;
  std::function<std::shared_ptr<ShardBackend>()> make_;
};

TEST_P(ShardBackendTest, Contract) {
  auto shard = make_();
  ASSERT_NE(shard, nullptr);
  testing::CheckBackendContract(*shard);
}

TEST_P(ShardBackendTest, ShardsInOneStoreAreIndependent) {
  auto a = make_();
  auto b = make_();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const ShardDocument d{
      .primary_key = "k", .body = "{}", .version = MapVersion(1), .tombstone = false};
  ASSERT_TRUE(a->Insert(d).ok());
  EXPECT_TRUE(b->Insert(d).ok());
  EXPECT_TRUE(a->Delete("k").ok());
  EXPECT_TRUE(b->Get("k").ok());
}

INSTANTIATE_TEST_SUITE_P(Backends, ShardBackendTest,
                         ::testing::Values(BackendKind::kMemory, BackendKind::kEmbedded,
                                           BackendKind::kRemote),
                         KindName);

TEST(EmbeddedEncodingTest, RoundTrips) {
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
