// RemoteShardBackend on Shoal clusters on loopback (real gRPC): the removal marker, atomic
// conditional writes under concurrent clients, and a sharded collection growing 2 -> 3 -> 2
// over remote shards (two shards in one cluster, the third in another) with the rebalancer
// killed and resumed, ending in the stress harness's full consistency check. The contract
// itself runs in shard_backend_test.cc.

#include "src/clientside/remote_shard_backend.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "src/clientside/embedded_shard_backend.h"
#include "src/clientside/remote_test_cluster.h"
#include "src/clientside/stress_harness.h"
#include "src/clientside/test_support.h"

namespace shoal::clientside {
namespace {

ShardDocument Doc(std::string pk, std::string body, uint64_t version, bool tombstone = false) {
  return ShardDocument{.primary_key = std::move(pk),
                       .body = std::move(body),
                       .version = MapVersion(version),
                       .tombstone = tombstone};
}

class RemoteShardBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cluster = testing::RemoteTestCluster::Start(dir_.path(), /*nodes=*/2, "s");
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
  }
  void TearDown() override { cluster_.reset(); }

  testing::ScopedTempDir dir_;
  std::unique_ptr<testing::RemoteTestCluster> cluster_;
};

TEST_F(RemoteShardBackendTest, RemovalLeavesAnInvisibleMarkerThatAnInsertReuses) {
  auto shard = RemoteShardBackend::Create(cluster_->db(), "marker");
  ASSERT_TRUE(shard.ok()) << shard.status();
  auto raw = cluster_->db().GetCollection("marker");
  ASSERT_TRUE(raw.ok()) << raw.status();
  ASSERT_TRUE((*shard)->Insert(Doc("k", R"({"a":1})", 1)).ok());
  ASSERT_TRUE((*shard)->Delete("k").ok());
  // The cluster still holds the key, as the marker; the shard does not show it.
  auto stored = raw->Get("k");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->json, kRemovedMarker);
  EXPECT_EQ((*shard)->Get("k").status().code(), StatusCode::kNotFound);
  EXPECT_EQ((*shard)->Delete("k").code(), StatusCode::kNotFound);
  EXPECT_EQ((*shard)->Update(Doc("k", "{}", 1)).code(), StatusCode::kNotFound);
  ShardQuery all;
  all.include_tombstones = true;
  auto page = (*shard)->Query(all);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_TRUE(page->documents.empty());
  // An insert (and a parameterized upsert) treat the marker as absent.
  ASSERT_TRUE((*shard)->Insert(Doc("k", R"({"a":2})", 2)).ok());
  EXPECT_EQ((*shard)->Get("k")->version, MapVersion(2));
  ASSERT_TRUE((*shard)->DeleteIf("k", ShardCondition::VersionIs(MapVersion(2))).ok());
  ASSERT_TRUE((*shard)->UpsertIf(Doc("k", "{}", 3), ShardCondition::IsTombstone()).ok());
  EXPECT_EQ((*shard)->Get("k")->version, MapVersion(3));
  // A stored body that is neither a shard document nor the marker is reported, not guessed.
  ASSERT_TRUE(raw->Upsert("foreign", R"({"x":1})").ok());
  EXPECT_EQ((*shard)->Get("foreign").status().code(), StatusCode::kDataLoss);
}

// The cluster's document limits apply to the stored encoding: the wrapper costs one level of
// nesting and its prefix and suffix bytes (remote_shard_backend.h). A body one unit over fails
// with a clear error and stores nothing.
TEST_F(RemoteShardBackendTest, BodyLimitsAreTheClustersMinusTheWrapper) {
  auto shard = RemoteShardBackend::Create(cluster_->db(), "limits");
  ASSERT_TRUE(shard.ok()) << shard.status();
  auto nested = [](size_t depth) {  // {"a":{"a":…1…}}: `depth` nested objects
    std::string body;
    for (size_t i = 0; i < depth; ++i) body += R"({"a":)";
    body += "1";
    body.append(depth, '}');
    return body;
  };
  EXPECT_TRUE((*shard)->Insert(Doc("deep", nested(kRemoteMaxBodyDepth), 1)).ok());
  const Status too_deep = (*shard)->Insert(Doc("deeper", nested(kRemoteMaxBodyDepth + 1), 1));
  EXPECT_FALSE(too_deep.ok());
  EXPECT_EQ((*shard)->Get("deeper").status().code(), StatusCode::kNotFound);
  // Version 1, live: the wrapper is {"v":1,"t":false,"b": ... }.
  const ShardDocument probe = Doc("x", "{}", 1);
  const size_t wrapper = EncodeShardBody(probe).size() - probe.body.size();
  const size_t max_body = kRemoteMaxStoredBytes - wrapper;
  auto sized = [](size_t bytes) {  // {"p":"xxx…"} of exactly `bytes` bytes
    return R"({"p":")" + std::string(bytes - 8, 'x') + R"("})";
  };
  EXPECT_TRUE((*shard)->Insert(Doc("big", sized(max_body), 1)).ok());
  const Status too_big = (*shard)->Insert(Doc("bigger", sized(max_body + 1), 1));
  EXPECT_EQ(too_big.code(), StatusCode::kResourceExhausted) << too_big;
  EXPECT_EQ((*shard)->Get("bigger").status().code(), StatusCode::kNotFound);
}

// Concurrent clients race on one key: each round, exactly one insert wins and exactly one
// conditional delete wins, so the compare-and-set loops check each condition atomically.
TEST_F(RemoteShardBackendTest, ConcurrentConditionalWritesHaveOneWinner) {
  auto made = cluster_->NewShard();
  ASSERT_TRUE(made.ok()) << made.status();
  std::shared_ptr<ShardBackend> shard = *made;
  constexpr int kThreads = 4;
  constexpr int kRounds = 15;
  for (int round = 0; round < kRounds; ++round) {
    std::atomic<int> inserted{0}, deleted{0}, failed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        Status s = shard->Insert(Doc("hot", fmt::format(R"({{"t":{}}})", t), round + 1));
        if (s.ok()) {
          ++inserted;
        } else if (s.code() != StatusCode::kAlreadyExists) {
          ++failed;
        }
      });
    }
    for (auto& t : threads) t.join();
    threads.clear();
    EXPECT_EQ(inserted.load(), 1) << "round " << round;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        Status s = shard->DeleteIf("hot", ShardCondition::VersionIs(MapVersion(round + 1)));
        if (s.ok()) {
          ++deleted;
        } else if (s.code() != StatusCode::kNotFound) {
          ++failed;
        }
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(deleted.load(), 1) << "round " << round;
    EXPECT_EQ(failed.load(), 0) << "round " << round;
  }
}

TEST_F(RemoteShardBackendTest, GrowAndShrinkOverRemoteShardsStaysConsistent) {
  // Shards 0 and 1 are two collections of the fixture's cluster; shard 2 is its own cluster.
  testing::ScopedTempDir other_dir;
  auto other = testing::RemoteTestCluster::Start(other_dir.path(), /*nodes=*/1, "t");
  ASSERT_TRUE(other.ok()) << other.status();
  auto catalog = std::make_shared<ShardCatalog>();
  for (uint32_t i = 0; i < 3; ++i) {
    auto shard = i < 2 ? cluster_->NewShard() : (*other)->NewShard();
    ASSERT_TRUE(shard.ok()) << shard.status();
    catalog->Set(ShardIndex(i), *std::move(shard));
  }
  auto store = testing::OpenMetadata(dir_.path() + "/meta");
  ASSERT_NE(store, nullptr);
  testing::StressConfig config;
  config.collection = "remote";
  config.writers = 3;
  config.keys_per_writer = 30;
  config.stable_documents = 60;
  config.shard_counts = {2, 3, 2};
  config.writer_ops_per_phase = 60;
  config.seed = std::random_device{}();
  std::printf("seed %llu\n", static_cast<unsigned long long>(config.seed));
  const testing::StressReport report = testing::RunStress(config, *store, catalog);
  std::printf("operations %llu, queries %llu, moved %llu, rebalancer kills %llu\n",
              static_cast<unsigned long long>(report.operations),
              static_cast<unsigned long long>(report.queries),
              static_cast<unsigned long long>(report.moved),
              static_cast<unsigned long long>(report.rebalancer_kills));
  for (const auto& e : report.errors) ADD_FAILURE() << e;
  EXPECT_GT(report.moved, 0u);
  catalog.reset();
}

}  // namespace
}  // namespace shoal::clientside
