// Over gRPC on loopback: the SetThresholds admin request (validation, persistence across a
// coordinator restart) and the map watch (a client learns a new map without a data request; the
// coordinator's limit on waiting watches).

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <array>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include "proto/shoal.grpc.pb.h"
#include "proto/shoal.pb.h"
#include "src/client/client.h"
#include "src/process/processes.h"
#include "src/remote/map_watcher.h"

namespace shoal::process {
namespace {

constexpr transport::Micros kAdminTimeout = 10'000'000;

// Polls `condition` every 10 ms for up to 60 s (the machine may be heavily loaded).
bool WaitFor(const std::function<bool()>& condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

class MapWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "shoal-watch-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    coordinator_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // A coordinator of two nodes that are never started: admin edits and map commits need none.
  void StartCoordinator(size_t max_watchers = kDefaultMaxMapWatchers) {
    CoordinatorProcessOptions options;
    options.data_dir = dir_ + "/coordinator";
    options.listen = "127.0.0.1:0";
    options.initial_nodes = 2;
    options.buckets = 4;
    options.sync = false;
    options.coordinator.auto_balance = false;
    options.max_map_watchers = max_watchers;
    auto process = CoordinatorProcess::Start(options);
    ASSERT_TRUE(process.ok()) << process.status();
    coordinator_ = *std::move(process);
  }

  std::unique_ptr<net::GrpcRuntime> ClientRuntime() {
    auto runtime = net::GrpcRuntime::Start({.listen = {},
                                            .advertise = {},
                                            .coordinator = coordinator_->address(),
                                            .address_book_path = {},
                                            .max_message_bytes = net::kDefaultMaxMessageBytes,
                                            .server_mode = net::GrpcServerMode::kSync});
    EXPECT_TRUE(runtime.ok()) << runtime.status();
    return runtime.ok() ? *std::move(runtime) : nullptr;
  }

  static wire::AdminRequest Thresholds(std::optional<uint64_t> split,
                                       std::optional<uint64_t> merge) {
    wire::AdminRequest request;
    auto* body = request.mutable_set_thresholds();
    if (split.has_value()) body->set_split_bytes(*split);
    if (merge.has_value()) body->set_merge_bytes(*merge);
    return request;
  }

  static wire::AdminRequest Status() {
    wire::AdminRequest request;
    request.mutable_progress();
    return request;
  }

  std::string dir_;
  std::unique_ptr<CoordinatorProcess> coordinator_;
};

TEST_F(MapWatchTest, ThresholdsAreValidatedAndSurviveARestart) {
  StartCoordinator();
  auto admin = ClientRuntime();
  ASSERT_NE(admin, nullptr);
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  auto set = admin->Admin(Thresholds(64 * kMiB, 16 * kMiB), kAdminTimeout);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->split_bytes(), 64 * kMiB);
  EXPECT_EQ(set->merge_bytes(), 16 * kMiB);

  // Each bad request fails with kInvalidArgument and leaves both values as they were.
  const std::vector<wire::AdminRequest> bad = {
      Thresholds(coordinator::kMinThresholdBytes - 1, std::nullopt),
      Thresholds(coordinator::kMaxThresholdBytes + 1, std::nullopt),
      Thresholds(std::nullopt, 32 * kMiB),  // 2 * merge == split
      Thresholds(20 * kMiB, std::nullopt),  // 2 * 16 MiB > 20 MiB
      Thresholds(std::nullopt, std::nullopt),
  };
  for (const auto& request : bad) {
    auto refused = admin->Admin(request, kAdminTimeout);
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << request.DebugString();
    auto status = admin->Admin(Status(), kAdminTimeout);
    ASSERT_TRUE(status.ok()) << status.status();
    EXPECT_EQ(status->split_bytes(), 64 * kMiB);
    EXPECT_EQ(status->merge_bytes(), 16 * kMiB);
  }
  // One value alone keeps the other; 0 turns a rule off.
  ASSERT_TRUE(admin->Admin(Thresholds(std::nullopt, 0), kAdminTimeout).ok());
  ASSERT_TRUE(admin->Admin(Thresholds(128 * kMiB, std::nullopt), kAdminTimeout).ok());
  EXPECT_EQ(coordinator_->coordinator().thresholds().split_bytes, 128 * kMiB);
  EXPECT_EQ(coordinator_->coordinator().thresholds().merge_bytes, 0u);

  // A restart on the same data directory reads them back from the metadata store.
  admin.reset();
  coordinator_->Stop();
  coordinator_.reset();
  StartCoordinator();
  admin = ClientRuntime();
  ASSERT_NE(admin, nullptr);
  auto status = admin->Admin(Status(), kAdminTimeout);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->split_bytes(), 128 * kMiB);
  EXPECT_EQ(status->merge_bytes(), 0u);
}

TEST_F(MapWatchTest, WatcherLearnsTheNewMapWithoutADataRequest) {
  StartCoordinator();
  auto runtime = ClientRuntime();
  ASSERT_NE(runtime, nullptr);
  client::Client client(*runtime);
  ASSERT_TRUE(client.Refresh().ok());
  const MapEpoch before = client.map()->epoch();
  remote::MapWatcher watcher(*runtime, client, remote::MapWatcherOptions{});
  ASSERT_TRUE(WaitFor([&] { return coordinator_->map_watchers() == 1; }));

  // A map edit that needs no node process: node 2 starts to leave.
  wire::AdminRequest remove;
  remove.mutable_remove_node()->set_node(2);
  auto removed = runtime->Admin(remove, kAdminTimeout);
  ASSERT_TRUE(removed.ok()) << removed.status();
  ASSERT_GT(removed->epoch(), before.value());
  ASSERT_TRUE(WaitFor([&] { return client.map()->epoch().value() >= removed->epoch(); }))
      << "the client still has epoch " << client.map()->epoch().value();
  ASSERT_NE(client.map()->FindNode(NodeId(2)), nullptr);
  EXPECT_EQ(client.map()->FindNode(NodeId(2))->state, cluster::NodeState::kLeaving);
  const client::ClientCounters counters = client.counters();
  EXPECT_GE(counters.maps_adopted, 1u);
  EXPECT_EQ(counters.wrong_shard, 0u);
  EXPECT_EQ(counters.map_refreshes, 1u);  // only the first Refresh above
  // Stop ends the poll in flight at once (its hold is 10 s).
  const auto stop_started = std::chrono::steady_clock::now();
  watcher.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - stop_started, std::chrono::seconds(9));
}

TEST_F(MapWatchTest, WatchesBeyondTheLimitAreRefused) {
  constexpr size_t kLimit = 2;
  StartCoordinator(kLimit);
  auto runtime = ClientRuntime();
  ASSERT_NE(runtime, nullptr);
  const MapEpoch current = coordinator_->coordinator().map()->epoch();
  std::array<net::CallCanceller, kLimit> cancellers;  // one per call in flight
  std::vector<std::thread> waiting;
  std::vector<StatusOr<std::optional<transport::ClusterState>>> results(kLimit - 1,
                                                                        InternalError("not run"));
  for (size_t i = 0; i + 1 < kLimit; ++i) {
    waiting.emplace_back([&, i] {
      results[i] = runtime->WatchMap(current, std::chrono::milliseconds(30'000), &cancellers[i]);
    });
  }
  ASSERT_TRUE(WaitFor([&] { return coordinator_->map_watchers() == kLimit - 1; }));
  // At the limit: the kLimit-th watch is served (no news within its short hold).
  auto at_limit = runtime->WatchMap(current, std::chrono::milliseconds(0), nullptr);
  ASSERT_TRUE(at_limit.ok()) << at_limit.status();
  EXPECT_FALSE(at_limit->has_value());
  // A watch that knows an older epoch is answered at once with the current map.
  auto stale = runtime->WatchMap(MapEpoch(0), std::chrono::milliseconds(30'000), nullptr);
  ASSERT_TRUE(stale.ok()) << stale.status();
  ASSERT_TRUE(stale->has_value());
  EXPECT_EQ((*stale)->map->epoch(), current);

  // One past the limit: fill it, then one more is refused at once.
  waiting.emplace_back([&] {
    (void)runtime->WatchMap(current, std::chrono::milliseconds(30'000), &cancellers[kLimit - 1]);
  });
  ASSERT_TRUE(WaitFor([&] { return coordinator_->map_watchers() == kLimit; }));
  auto refused = runtime->WatchMap(current, std::chrono::milliseconds(30'000), nullptr);
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << refused.status();
  // A hold above the bound is bad input.
  auto too_long =
      runtime->WatchMap(current, std::chrono::milliseconds(net::kMaxWatchHoldMillis + 1), nullptr);
  EXPECT_EQ(too_long.status().code(), StatusCode::kInvalidArgument) << too_long.status();

  for (auto& canceller : cancellers) canceller.Cancel();
  for (auto& thread : waiting) thread.join();
  EXPECT_EQ(results[0].status().code(), StatusCode::kCancelled) << results[0].status();
  EXPECT_TRUE(WaitFor([&] { return coordinator_->map_watchers() == 0; }));
}

// A coordinator answers CANCELLED (as a server shutting down does for a poll it received or
// held): the watcher must go on to the next coordinator, not end. A watcher that took any
// CANCELLED for its own Stop would stay at its map for good after a failover.
class CancellingCoordinator final : public wire::Shoal::Service {
 public:
  grpc::Status WatchMap(grpc::ServerContext*, const wire::WatchMapRequest*,
                        wire::WatchMapResponse*) override {
    ++polls;
    return grpc::Status(grpc::StatusCode::CANCELLED, "the server is shutting down");
  }
  std::atomic<int> polls{0};
};

TEST_F(MapWatchTest, WatcherMovesOnWhenAServerCancelsItsPoll) {
  StartCoordinator();
  // A client-only runtime whose coordinator list puts the server on `port` before the leader.
  const auto start_client_runtime = [&](int port) {
    return net::GrpcRuntime::Start(
        {.listen = {},
         .advertise = {},
         .coordinator = fmt::format("127.0.0.1:{},{}", port, coordinator_->address()),
         .address_book_path = {},
         .max_message_bytes = net::kDefaultMaxMessageBytes,
         .server_mode = net::GrpcServerMode::kSync});
  };
  CancellingCoordinator cancelling;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&cancelling);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  ASSERT_GT(port, 0);
  auto runtime = start_client_runtime(port);
  ASSERT_TRUE(runtime.ok()) << runtime.status();
  // The runtime alone: one call tries the cancelling coordinator, then the leader.
  auto state = (*runtime)->WatchMap(MapEpoch(0), std::chrono::milliseconds(0), nullptr);
  ASSERT_TRUE(state.ok()) << state.status();
  ASSERT_TRUE(state->has_value());
  EXPECT_EQ(cancelling.polls.load(), 1);

  // The watcher, started on the cancelling coordinator again.
  auto watching = start_client_runtime(port);
  ASSERT_TRUE(watching.ok()) << watching.status();
  client::Client client(**watching);
  remote::MapWatcher watcher(**watching, client, remote::MapWatcherOptions{});
  const MapEpoch current = coordinator_->coordinator().map()->epoch();
  ASSERT_TRUE(WaitFor([&] { return client.map() != nullptr && client.map()->epoch() >= current; }))
      << "the watcher did not reach the leader";
  EXPECT_EQ(cancelling.polls.load(), 2);
  EXPECT_EQ(client.counters().map_refreshes, 0u);  // learned by the watch alone
  ASSERT_TRUE(WaitFor([&] { return coordinator_->map_watchers() == 1; }));
  // Its own Stop still ends it, with the poll in flight.
  watcher.Stop();
  EXPECT_TRUE(WaitFor([&] { return coordinator_->map_watchers() == 0; }));
  server->Shutdown();
}

}  // namespace
}  // namespace shoal::process
