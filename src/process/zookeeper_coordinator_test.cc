// A coordinator process whose metadata lives in a real ZooKeeper server (started by this test on
// loopback): a bucket moves, the coordinator restarts, and the map and the move log come back
// from ZooKeeper, not from the data directory.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "include/shoal/shoal.h"
#include "proto/shoal.pb.h"
#include "src/client/client.h"
#include "src/metadata/fenced_metadata_store.h"
#include "src/metadata/leader_election.h"
#include "src/metadata/zookeeper_metadata_store.h"
#include "src/metadata/zookeeper_test_server.h"
#include "src/process/processes.h"
#include "src/remote/map_watcher.h"

namespace shoal::process {
namespace {

class ZooKeeperCoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "shoal-zkc-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    auto started = metadata::ZooKeeperTestServer::Start();
    // Fails (never skips) when the server can not run.
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = *std::move(started);
  }
  void TearDown() override {
    nodes_.clear();
    coordinator_.reset();
    server_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  CoordinatorProcessOptions Options(const std::string& listen) const {
    CoordinatorProcessOptions options;
    options.data_dir = dir_ + "/coordinator";
    options.listen = listen;
    options.initial_nodes = 2;
    options.buckets = 8;
    options.sync = false;
    options.metadata = fmt::format("zk://{}/shoal/cluster", server_->hosts());
    options.coordinator.auto_balance = false;
    return options;
  }

  void StartNode(uint32_t id, const std::string& coordinators = {}) {
    NodeProcessOptions options;
    options.id = id;
    options.data_dir = fmt::format("{}/node-{}", dir_, id);
    options.listen = "127.0.0.1:0";
    options.coordinator = coordinators.empty() ? coordinator_->address() : coordinators;
    auto process = NodeProcess::Start(options);
    ASSERT_TRUE(process.ok()) << process.status();
    nodes_[id] = std::move(*process);
  }

  std::string dir_;
  std::unique_ptr<metadata::ZooKeeperTestServer> server_;
  std::unique_ptr<CoordinatorProcess> coordinator_;
  std::map<uint32_t, std::unique_ptr<NodeProcess>> nodes_;
};

TEST_F(ZooKeeperCoordinatorTest, RestartRecoversMapAndMoveLogFromZooKeeper) {
  auto started = CoordinatorProcess::Start(Options("127.0.0.1:0"));
  ASSERT_TRUE(started.ok()) << started.status();
  coordinator_ = *std::move(started);
  StartNode(1);
  StartNode(2);
  const std::string address = coordinator_->address();
  {
    auto db = Database::Connect(address, {.insecure = true});
    ASSERT_TRUE(db.ok()) << db.status();
    auto c = (*db)->GetCollection("c");
    ASSERT_TRUE(c.ok()) << c.status();
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(c->Insert(fmt::format("k{}", i), fmt::format(R"({{"i": {}}})", i)).ok());
    }
  }
  const std::vector<BucketId> on_one = coordinator_->coordinator().map()->BucketsOf(NodeId(1));
  ASSERT_FALSE(on_one.empty());
  const Status moved = coordinator_->coordinator().MoveBucket(on_one.front(), NodeId(2));
  ASSERT_TRUE(moved.ok()) << moved;
  const cluster::ShardMapPtr before = coordinator_->coordinator().map();
  coordinator_->Stop();
  coordinator_.reset();
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/coordinator/metadata"));

  {
    // The move log is in ZooKeeper.
    metadata::ZooKeeperMetadataOptions zk;
    zk.hosts = server_->hosts();
    zk.root = "/shoal/cluster";
    auto store = metadata::ZooKeeperMetadataStore::Open(zk);
    ASSERT_TRUE(store.ok()) << store.status();
    auto moves = (*store)->List("moves/");
    ASSERT_TRUE(moves.ok()) << moves.status();
    EXPECT_FALSE(moves->empty());
  }

  auto restarted = CoordinatorProcess::Start(Options(address));
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  coordinator_ = *std::move(restarted);
  const cluster::ShardMapPtr after = coordinator_->coordinator().map();
  EXPECT_GE(after->epoch(), before->epoch());
  EXPECT_EQ(after->BucketsOf(NodeId(2)), before->BucketsOf(NodeId(2)));
  EXPECT_EQ(after->NextMoveId(), before->NextMoveId());
  auto db = Database::Connect(address, {.insecure = true});
  ASSERT_TRUE(db.ok()) << db.status();
  auto c = (*db)->GetCollection("c");
  ASSERT_TRUE(c.ok());
  for (int i = 0; i < 50; ++i) {
    auto doc = c->Get(fmt::format("k{}", i));
    ASSERT_TRUE(doc.ok()) << doc.status();
    EXPECT_EQ(doc->json, fmt::format(R"({{"i": {}}})", i));
  }
}

// Two coordinators on one ZooKeeper path: one leads, the other stands by and answers admin
// requests with kUnavailable; when the leader stops, the standby takes over with the next leader
// epoch and the nodes and clients, which know both addresses, go on through it.
TEST_F(ZooKeeperCoordinatorTest, StandbyTakesOverWhenTheLeaderStops) {
  CoordinatorProcessOptions first_options = Options("127.0.0.1:0");
  first_options.election_session_timeout = std::chrono::milliseconds(1'000);
  auto first = CoordinatorProcess::Start(first_options);
  ASSERT_TRUE(first.ok()) << first.status();
  coordinator_ = *std::move(first);
  ASSERT_TRUE(coordinator_->leader());
  EXPECT_EQ(coordinator_->leader_epoch(), std::optional<uint64_t>(1));

  CoordinatorProcessOptions second_options = first_options;
  second_options.data_dir = dir_ + "/coordinator-2";
  auto second = CoordinatorProcess::Start(second_options);
  ASSERT_TRUE(second.ok()) << second.status();
  std::unique_ptr<CoordinatorProcess> standby = *std::move(second);
  EXPECT_FALSE(standby->leader());

  const std::string both = fmt::format("{},{}", standby->address(), coordinator_->address());
  StartNode(1, both);
  StartNode(2, both);
  {
    // The standby answers admin requests with kUnavailable; a client of both finds the leader.
    auto admin = net::GrpcRuntime::Start({.listen = {},
                                          .advertise = {},
                                          .coordinator = standby->address(),
                                          .address_book_path = {},
                                          .max_message_bytes = net::kDefaultMaxMessageBytes});
    ASSERT_TRUE(admin.ok()) << admin.status();
    wire::AdminRequest request;
    request.mutable_progress();
    auto refused = (*admin)->Admin(request, 5'000'000);
    EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable) << refused.status();
  }
  auto db = Database::Connect("shoal://" + both, {.insecure = true});
  ASSERT_TRUE(db.ok()) << db.status();
  auto c = (*db)->GetCollection("c");
  ASSERT_TRUE(c.ok()) << c.status();
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(c->Insert(fmt::format("k{}", i), fmt::format(R"({{"i": {}}})", i)).ok());
  }
  const cluster::ShardMapPtr before = coordinator_->coordinator().map();
  // A client that only watches the map (it sends no data request): it must follow the new leader.
  auto watch_runtime = net::GrpcRuntime::Start({.listen = {},
                                                .advertise = {},
                                                .coordinator = both,
                                                .address_book_path = {},
                                                .max_message_bytes = net::kDefaultMaxMessageBytes});
  ASSERT_TRUE(watch_runtime.ok()) << watch_runtime.status();
  client::Client watching(**watch_runtime);
  ASSERT_TRUE(watching.Refresh().ok());
  remote::MapWatcher watcher(**watch_runtime, watching, remote::MapWatcherOptions{});

  coordinator_->Stop();  // resigns: the standby need not wait for the session timeout
  ASSERT_TRUE(standby->WaitLeader(std::chrono::seconds(30)));
  EXPECT_EQ(standby->leader_epoch(), std::optional<uint64_t>(2));
  EXPECT_EQ(standby->coordinator().map()->epoch(), before->epoch());
  // The new leader moves a bucket: its fenced writes go through.
  const std::vector<BucketId> on_one = standby->coordinator().map()->BucketsOf(NodeId(1));
  ASSERT_FALSE(on_one.empty());
  const Status moved = standby->coordinator().MoveBucket(on_one.front(), NodeId(2));
  ASSERT_TRUE(moved.ok()) << moved;
  // The watch ended at the old leader (kUnavailable from its hub, or CANCELLED by its server
  // shutting down) and moved on to the new one.
  const MapEpoch moved_epoch = standby->coordinator().map()->epoch();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (watching.map()->epoch() < moved_epoch && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(watching.map()->epoch(), moved_epoch);
  EXPECT_EQ(watching.counters().wrong_shard, 0u);
  for (int i = 0; i < 50; ++i) {
    auto doc = c->Get(fmt::format("k{}", i));
    ASSERT_TRUE(doc.ok()) << doc.status();
    EXPECT_EQ(doc->json, fmt::format(R"({{"i": {}}})", i));
  }
  ASSERT_TRUE(c->Insert("after", R"({"i": -1})").ok());
  db->reset();
  nodes_.clear();
  standby->Stop();
}

// A Coordinator writing through a fenced store: once another candidate took over the election,
// every edit of the stale one (a node added, a bucket moved) is refused and the map in ZooKeeper
// stays as the new leader left it.
TEST_F(ZooKeeperCoordinatorTest, StaleLeaderCoordinatorCannotCommit) {
  metadata::ZooKeeperMetadataOptions zk;
  zk.hosts = server_->hosts();
  zk.root = "/shoal/fenced";
  auto opened = metadata::ZooKeeperMetadataStore::Open(zk);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<metadata::ZooKeeperMetadataStore> store = *std::move(opened);
  metadata::LeaderElection stale(*store, "coordinator/", "stale", std::chrono::milliseconds(2'000));
  metadata::LeaderElection fresh(*store, "coordinator/", "fresh", std::chrono::milliseconds(2'000));
  ASSERT_EQ(stale.TryAcquire().value_or(false), true);
  metadata::FencedMetadataStore fenced(*store, [&] { return stale.Fence(); });
  auto runtime = net::GrpcRuntime::Start({.listen = "127.0.0.1:0",
                                          .advertise = {},
                                          .coordinator = {},
                                          .address_book_path = {},
                                          .max_message_bytes = net::kDefaultMaxMessageBytes});
  ASSERT_TRUE(runtime.ok()) << runtime.status();
  coordinator::CoordinatorOptions options;
  options.auto_balance = false;
  auto opened_coordinator = coordinator::Coordinator::Open(**runtime, fenced, options);
  ASSERT_TRUE(opened_coordinator.ok()) << opened_coordinator.status();
  std::shared_ptr<coordinator::Coordinator> coordinator = *opened_coordinator;
  ASSERT_TRUE(coordinator->Initialize({NodeId(1), NodeId(2)}, 4).ok());
  auto before = store->Get("cluster/map");
  ASSERT_TRUE(before.ok()) << before.status();

  // The stale leader's session ends behind its back (as when it is paused for longer than the
  // session timeout); the other candidate takes over.
  ASSERT_TRUE(store->CloseSession(*stale.session()).ok());
  ASSERT_EQ(fresh.TryAcquire().value_or(false), true);
  EXPECT_EQ(fresh.epoch(), std::optional<uint64_t>(2));

  const Status added = coordinator->AddNode(NodeId(3));
  EXPECT_EQ(added.code(), StatusCode::kFailedPrecondition) << added;
  const Status moved = coordinator->MoveBucket(coordinator->map()->buckets().front().id, NodeId(2));
  EXPECT_FALSE(moved.ok());
  auto created = coordinator->CreateCollection("late");
  EXPECT_EQ(created.status().code(), StatusCode::kFailedPrecondition) << created.status();
  EXPECT_EQ(*store->Get("cluster/map"), *before);
  EXPECT_TRUE(store->List("moves/")->empty());
  EXPECT_TRUE(store->List("cluster/collections/")->empty());
  (*runtime)->Shutdown();
}

}  // namespace
}  // namespace shoal::process
