// StorageNode batch writes and the WAL (docs/design/cluster.md, "Batch writes"): with the store
// syncing every write, a batch syncs the WAL once, after its writes and before its answer, so
// every write it acknowledges survives a machine crash right after the answer. One node on a
// SimRuntime, a fake coordinator, requests sent from a client task.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <variant>

#include "src/cluster/shard_map.h"
#include "src/node/sim_test_options.h"
#include "src/node/storage_node.h"
#include "src/storage/sync_tracking_fs.h"
#include "src/transport/messages.h"
#include "src/transport/sim_runtime.h"

namespace shoal::node {
namespace {

using transport::Address;
using transport::Request;
using transport::Response;

constexpr transport::Micros kSecond = 1'000'000;
constexpr CollectionId kDocs{1};
constexpr NodeId kN1{1};
constexpr int kBatchWrites = 64;

// Answers GetMap and Heartbeat with one fixed state.
class FixedCoordinator final : public transport::Service {
 public:
  explicit FixedCoordinator(transport::ClusterState state) : state_(std::move(state)) {}
  Response Handle(const Address&, const Request& request) override {
    if (std::holds_alternative<transport::GetMapRequest>(request)) {
      return Response::Ok(transport::GetMapResponse{.state = state_});
    }
    if (std::holds_alternative<transport::HeartbeatRequest>(request)) {
      return Response::Ok(transport::HeartbeatResponse{.epoch = state_.map->epoch()});
    }
    return Response::Error(UnimplementedError("not served by the fixed coordinator"));
  }

 private:
  const transport::ClusterState state_;
};

class BatchSyncTest : public ::testing::Test {
 protected:
  BatchSyncTest()
      : sim_(transport::SimOptions{.seed = 1, .min_delay = 100, .max_delay = 100, .loss = 0}),
        fs_(std::make_shared<storage::SyncTrackingFileSystem>()),
        env_(storage::SyncTrackingFileSystem::NewEnv(fs_)) {
    dir_ = test::UniqueTestDir("shoal-batch-sync-test");
    auto map = cluster::ShardMap::Initial({.nodes = {kN1}, .bucket_count = 2});
    EXPECT_TRUE(map.ok()) << map.status();
    state_.map = std::make_shared<const cluster::ShardMap>(std::move(*map));
    state_.collections = {storage::CollectionSpec{.id = kDocs, .name = "docs"}};
  }

  ~BatchSyncTest() override {
    sim_.Shutdown();
    node_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Runs `body` on a client task with node n1 (syncing every write) started on the map.
  void Run(const std::function<void()>& body) {
    bool finished = false;
    sim_.Spawn(Address::Client(1), "test", [&] {
      sim_.Serve(Address::Coordinator(), std::make_shared<FixedCoordinator>(state_));
      NodeOptions options;
      options.id = kN1;
      options.data_dir = dir_ + "/node";
      test::UseSmallTestStore(options.store);
      options.store.sync = storage::SyncPolicy::kEveryWrite;
      options.store.env = env_.get();
      options.heartbeat_interval = 2 * kSecond;
      auto node = StorageNode::Open(sim_, options);
      if (node.ok()) {
        node_ = *node;
        node_->Start();
        auto installed = Call(transport::InstallMapRequest{.state = state_});
        EXPECT_TRUE(installed.ok() && installed->status.ok());
        body();
        EXPECT_TRUE(node_->Close().ok());
      } else {
        ADD_FAILURE() << "open: " << node.status();
      }
      sim_.Stop(Address::Coordinator());
      finished = true;
    });
    sim_.RunUntil(24 * 3600 * kSecond);
    EXPECT_TRUE(finished) << "the test task did not finish";
  }

  StatusOr<Response> Call(Request request) {
    return sim_.Call(Address::Node(kN1), std::move(request), 10 * kSecond);
  }

  static transport::WriteRequest Upsert(MapEpoch epoch, int i) {
    transport::WriteRequest write;
    write.epoch = epoch;
    write.op = transport::WriteOp::kUpsert;
    write.collection = kDocs;
    write.primary_key = fmt::format("k{}", i);
    write.body = fmt::format(R"({{"n":{}}})", i);
    return write;
  }

  transport::SimRuntime sim_;
  std::shared_ptr<storage::SyncTrackingFileSystem> fs_;
  std::unique_ptr<rocksdb::Env> env_;
  std::string dir_;
  transport::ClusterState state_;
  std::shared_ptr<StorageNode> node_;
};

TEST_F(BatchSyncTest, ABatchSyncsTheWalOnceAndSurvivesAMachineCrashAfterItsAnswer) {
  Run([&] {
    const MapEpoch epoch = state_.map->epoch();
    // Warm-up: the first write also reserves a block of versions (a synced write of its own).
    ASSERT_TRUE(Call(Upsert(epoch, -1)).ok());

    const uint64_t before_single = fs_->wal_syncs();
    auto single = Call(Upsert(epoch, -2));
    ASSERT_TRUE(single.ok() && single->status.ok());
    EXPECT_EQ(fs_->wal_syncs(), before_single + 1) << "a single write syncs on its own";

    transport::BatchWriteRequest batch{.epoch = epoch, .writes = {}};
    for (int i = 0; i < kBatchWrites; ++i) batch.writes.push_back(Upsert(epoch, i));
    const uint64_t before_batch = fs_->wal_syncs();
    auto answer = Call(std::move(batch));
    ASSERT_TRUE(answer.ok()) << answer.status();
    ASSERT_TRUE(answer->status.ok()) << answer->status;
    const auto* results = std::get_if<transport::BatchWriteResponse>(&answer->body);
    ASSERT_NE(results, nullptr);
    ASSERT_EQ(results->results.size(), static_cast<size_t>(kBatchWrites));
    for (const auto& result : results->results) EXPECT_TRUE(result.status.ok()) << result.status;
    EXPECT_EQ(fs_->wal_syncs(), before_batch + 1) << "one WAL sync per batch";

    // A machine crash right after the answer: the WAL cut to what was synced.
    auto crashed = fs_->OpenDurableCopy(dir_ + "/node/store", dir_ + "/crash", {});
    ASSERT_TRUE(crashed.ok()) << crashed.status();
    for (int i = 0; i < kBatchWrites; ++i) {
      auto document = (*crashed)->Get(kDocs, fmt::format("k{}", i));
      ASSERT_TRUE(document.ok()) << i << ": " << document.status();
      EXPECT_EQ(document->version, results->results[i].version);
    }
    EXPECT_TRUE((*crashed)->Close().ok());
  });
}

TEST_F(BatchSyncTest, ABatchThatWritesNothingDoesNotSync) {
  Run([&] {
    const MapEpoch epoch = state_.map->epoch();
    ASSERT_TRUE(Call(Upsert(epoch, -1)).ok());
    transport::WriteRequest update = Upsert(epoch, 0);
    update.op = transport::WriteOp::kUpdate;  // of a missing document: refused, writes nothing
    const uint64_t before = fs_->wal_syncs();
    auto answer = Call(transport::BatchWriteRequest{.epoch = epoch, .writes = {update}});
    ASSERT_TRUE(answer.ok() && answer->status.ok());
    const auto* results = std::get_if<transport::BatchWriteResponse>(&answer->body);
    ASSERT_NE(results, nullptr);
    ASSERT_EQ(results->results.size(), 1u);
    EXPECT_FALSE(results->results[0].status.ok());
    EXPECT_EQ(fs_->wal_syncs(), before);
  });
}

}  // namespace
}  // namespace shoal::node
