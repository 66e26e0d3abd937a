// Coordinator failover under ZooKeeper, with real processes (docs/design/network.md,
// "Coordinator failover"): a ZooKeeper server, two `shoal coordinator` processes on one ZooKeeper
// path (one leads, one stands by), three nodes and a client workload. Node 4 joins; the leader
// pauses in the middle of a bucket move (coordinator.before_commit, after the copy) and is then
//   - killed (SIGKILL): its session expires, the standby takes over and recovers the move from
//     the move log in ZooKeeper; the killed one restarts as the new standby; or
//   - stopped (SIGSTOP) until the standby has taken over, then continued: the stale leader's
//     commit is fenced by the leader epoch, and it finds its session gone and stands by.
// Under the new leader node 3 is removed. In the end every acknowledged write reads back, no
// move is in flight, every node holds exactly the buckets of the one map, and the leader is the
// former standby at leader epoch 2.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "proto/shoal.pb.h"
#include "src/client/client.h"
#include "src/metadata/zookeeper_test_server.h"
#include "src/remote/map_watcher.h"
#include "tests/cluster/process_cluster.h"
#include "tests/cluster/workload.h"
#include "tests/cluster/workload_check.h"

namespace shoal::cluster_test {
namespace {

using Clock = std::chrono::steady_clock;

// Short, so that a dead leader is replaced quickly (the test server's tickTime allows 400 ms).
constexpr int kElectionSessionMs = 1'500;
constexpr char kPoint[] = "coordinator.before_commit";
// How long ZooKeeperKilledUnderLoad keeps the ZooKeeper server down.
constexpr int kZooKeeperDownMs = 4'000;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

enum class LeaderFault : uint8_t { kKill, kPause };

std::string FaultName(const testing::TestParamInfo<LeaderFault>& info) {
  switch (info.param) {
    case LeaderFault::kKill:
      return "Kill";
    case LeaderFault::kPause:
      return "Pause";
  }
  return "Unknown";
}

// ZooKeeper, a cluster of processes on it and a workload (the tests below start what they need).
class ZooKeeperClusterTest : public testing::Test {
 protected:
  void SetUp() override {
    auto zk = metadata::ZooKeeperTestServer::Start();
    // Fails (never skips) when the server can not run.
    ASSERT_TRUE(zk.ok()) << zk.status();
    zk_ = *std::move(zk);
    cluster_ = std::make_unique<ProcessCluster>(ShoalBinary());
    cluster_->UseZooKeeper(fmt::format("zk://{}/shoal/failover", zk_->hosts()), kElectionSessionMs);
  }
  void TearDown() override {
    if (HasFailure()) std::fprintf(stderr, "%s\n", cluster_->LogTails(20).c_str());
    workload_.reset();
    cluster_.reset();
    zk_.reset();
  }

  // Starts nodes 1-4 (3 initial nodes and one spare) and waits until they serve and the first
  // coordinator leads at epoch 1.
  void StartNodesUnderTheLeader() {
    for (uint32_t id = 1; id <= 4; ++id) {
      Status started = cluster_->StartNode(id);
      ASSERT_TRUE(started.ok()) << started;
    }
    Status serving = cluster_->WaitServing(30);
    ASSERT_TRUE(serving.ok()) << serving;
    ASSERT_NO_FATAL_FAILURE(WaitLeader(kCoordinator, 1, 10));
  }

  // Until the coordinator that answers admin requests is `id`, at leader epoch >= `epoch`.
  void WaitLeader(uint32_t id, uint64_t epoch, int seconds) {
    const auto until = Clock::now() + std::chrono::seconds(seconds);
    std::string last = "no answer";
    while (Clock::now() < until) {
      auto progress = cluster_->Progress();
      if (progress.ok()) {
        last = fmt::format("{} at epoch {}", progress->leader(), progress->leader_epoch());
        if (progress->leader() == cluster_->CoordinatorAddress(id) &&
            progress->leader_epoch() >= epoch) {
          return;
        }
      } else {
        last = progress.status().ToString();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "coordinator " << id << " does not lead at epoch " << epoch << " after " << seconds
           << " s; last: " << last;
  }

  void WaitBalanced(int seconds) {
    const Status s = cluster_->AwaitBalanced(std::chrono::seconds(seconds));
    ASSERT_TRUE(s.ok()) << s;
  }

  bool LogShows(const std::string& name, const std::string& text) const {
    return ReadFile(fmt::format("{}/{}.log", cluster_->dir(), name)).find(text) !=
           std::string::npos;
  }

  std::unique_ptr<metadata::ZooKeeperTestServer> zk_;
  std::unique_ptr<ProcessCluster> cluster_;
  std::unique_ptr<Workload> workload_;
};

class FailoverTest : public ZooKeeperClusterTest,
                     public testing::WithParamInterface<LeaderFault> {};

TEST_P(FailoverTest, StandbyTakesOverMidMoveWithoutLoss) {
  // Every move of the first leader waits 5 s before its commit: the window for the fault.
  ASSERT_TRUE(cluster_->StartCoordinator(3, 12, std::string(kPoint) + "=pause:5000").ok());
  ASSERT_TRUE(cluster_->StartStandbyCoordinator(3, 12).ok());
  ASSERT_NO_FATAL_FAILURE(StartNodesUnderTheLeader());

  workload_ = std::make_unique<Workload>(cluster_->uri(), cluster_->connect_options(),
                                         /*threads=*/2, /*keys_per_thread=*/150);
  ASSERT_TRUE(workload_->Start().ok());
  for (int i = 0; i < 200 && workload_->acknowledged() < 300; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  Status added = cluster_->AddNode(4);
  ASSERT_TRUE(added.ok()) << added;

  // The leader reaches the point in a move (to node 4, or one the balancer planned earlier).
  const auto until = Clock::now() + std::chrono::seconds(40);
  while (!cluster_->LogShowsFailpoint(kCoordinator, kPoint) && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(cluster_->LogShowsFailpoint(kCoordinator, kPoint)) << kPoint << " not reached";
  const auto fault_at = Clock::now();
  if (GetParam() == LeaderFault::kKill) {
    cluster_->Kill(kCoordinator);
  } else {
    cluster_->Pause(kCoordinator);
  }
  ASSERT_NO_FATAL_FAILURE(WaitLeader(kStandbyCoordinator, 2, 30));
  std::fprintf(
      stderr, "failover: the standby leads %lld ms after the fault\n",
      static_cast<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - fault_at).count()));
  if (GetParam() == LeaderFault::kKill) {
    // Back on its data directory, the old leader is the standby now.
    ASSERT_TRUE(cluster_->Restart(kCoordinator).ok());
  } else {
    // The stale leader goes on from its pause: its commit is fenced, and it steps down.
    cluster_->Resume(kCoordinator);
    const auto stepped = Clock::now() + std::chrono::seconds(20);
    while (!LogShows("coordinator", "coordinator.standby") && Clock::now() < stepped) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_TRUE(LogShows("coordinator", "coordinator.standby"));
    EXPECT_TRUE(cluster_->Running(kCoordinator));
  }
  ASSERT_NO_FATAL_FAILURE(WaitBalanced(60));
  ASSERT_NO_FATAL_FAILURE(WaitLeader(kStandbyCoordinator, 2, 10));
  // The interrupted move was in the map in ZooKeeper: the new leader recovered it.
  EXPECT_TRUE(LogShows("coordinator-2", "move.recover"));

  // Membership under the new leader: node 3 leaves.
  Status removed = cluster_->RemoveNode(3);
  ASSERT_TRUE(removed.ok()) << removed;
  ASSERT_NO_FATAL_FAILURE(WaitBalanced(60));
  std::string out;
  ASSERT_EQ(cluster_->RunCli({"status", "--json"}, &out), 0) << out;
  auto status = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(status.is_discarded()) << out;
  for (const auto& node : status["nodes"]) EXPECT_NE(node["id"].get<uint32_t>(), 3u) << out;
  EXPECT_EQ(status["leader"], cluster_->CoordinatorAddress(kStandbyCoordinator)) << out;
  EXPECT_EQ(status["leader_epoch"], 2) << out;
  cluster_->Kill(3);  // out of the map: only the map's nodes may answer now

  workload_->Stop();
  ExpectNoLoss(*workload_, nullptr);
  ExpectOneMap(*cluster_);  // no move in flight, every node holds exactly its buckets
  // Neither coordinator died on its own.
  for (const Exit& exit : cluster_->Reap()) {
    ADD_FAILURE() << "process " << exit.id << " exited with " << exit.status;
  }
}

// A client that only watches the map (it sends no data request, so no error refreshes its map)
// follows a failover: the leader is SIGKILLed, the standby takes over and adds node 4, and the
// watcher reaches that epoch (docs/design/network.md, "Map watch").
TEST_F(ZooKeeperClusterTest, WatchingClientFollowsTheNewLeader) {
  ASSERT_TRUE(cluster_->StartCoordinator(3, 12).ok());
  ASSERT_TRUE(cluster_->StartStandbyCoordinator(3, 12).ok());
  ASSERT_NO_FATAL_FAILURE(StartNodesUnderTheLeader());

  auto runtime = cluster_->ClientRuntime();
  ASSERT_TRUE(runtime.ok()) << runtime.status();
  client::Client watching(**runtime);
  ASSERT_TRUE(watching.Refresh().ok());
  const MapEpoch first = watching.map()->epoch();
  remote::MapWatcher watcher(**runtime, watching, remote::MapWatcherOptions{});

  cluster_->Kill(kCoordinator);
  ASSERT_NO_FATAL_FAILURE(WaitLeader(kStandbyCoordinator, 2, 30));
  Status added = cluster_->AddNode(4);
  ASSERT_TRUE(added.ok()) << added;
  auto progress = cluster_->Progress();
  ASSERT_TRUE(progress.ok()) << progress.status();
  ASSERT_GT(progress->epoch(), first.value());
  const auto until = Clock::now() + std::chrono::seconds(60);
  while (watching.map()->epoch().value() < progress->epoch() && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(watching.map()->epoch().value(), progress->epoch())
      << "the watcher stayed at epoch " << watching.map()->epoch().value() << " after "
      << watcher.failures() << " failed polls";
  EXPECT_TRUE(watching.map()->HasNode(NodeId(4)));
  const client::ClientCounters counters = watching.counters();
  EXPECT_EQ(counters.wrong_shard, 0u);
  EXPECT_EQ(counters.map_refreshes, 1u);  // only the first Refresh above
  watcher.Stop();
}

// The ZooKeeper server is SIGKILLed under a live cluster with a client workload, and restarted
// on its data directory and port after kZooKeeperDownMs (docs/design/zookeeper.md, "ZooKeeper
// down"). The data path does not use ZooKeeper: writes keep being acknowledged and read back
// while it is down; the coordinator answers from memory, and a map edit fails and changes
// nothing. After the restart the coordinator leads again and adds node 4; nothing
// acknowledged is lost and every node holds exactly the buckets of the one map.
TEST_F(ZooKeeperClusterTest, ZooKeeperKilledUnderLoad) {
  ASSERT_TRUE(cluster_->StartCoordinator(3, 12).ok());
  ASSERT_NO_FATAL_FAILURE(StartNodesUnderTheLeader());
  auto reader = Database::Connect(cluster_->uri(),
                                  cluster_->connect_options());  // opened before: it has the map
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto probe = (*reader)->GetCollection("faults");
  ASSERT_TRUE(probe.ok()) << probe.status();
  workload_ = std::make_unique<Workload>(cluster_->uri(), cluster_->connect_options(),
                                         /*threads=*/2, /*keys_per_thread=*/150);
  ASSERT_TRUE(workload_->Start().ok());
  for (int i = 0; i < 200 && workload_->acknowledged() < 300; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // No move in flight across the outage (the balancer may first even out the initial map).
  ASSERT_NO_FATAL_FAILURE(WaitBalanced(30));

  zk_->Kill();
  const auto killed_at = Clock::now();
  const uint64_t acknowledged_at_kill = workload_->acknowledged();
  // Longer than the election session (1.5 s), shorter than the metadata store's own (10 s),
  // which does not reconnect once expired (zookeeper.md, "Errors").
  const auto restart_at = killed_at + std::chrono::milliseconds(kZooKeeperDownMs);
  // A map edit needs ZooKeeper: it fails and changes nothing.
  auto epoch_before = cluster_->Progress();
  ASSERT_TRUE(epoch_before.ok()) << epoch_before.status();
  std::string refused;
  EXPECT_NE(cluster_->RunCli({"add-node", "--id", "4", "--no-wait", "--json"}, &refused), 0)
      << refused;
  auto epoch_after = cluster_->Progress();
  ASSERT_TRUE(epoch_after.ok()) << epoch_after.status();
  EXPECT_EQ(epoch_after->epoch(), epoch_before->epoch());
  uint64_t reads = 0;
  for (int i = 0; Clock::now() < restart_at; ++i) {
    auto doc = probe->Get(fmt::format("t0-k{}", i % 150));
    EXPECT_TRUE(doc.ok() || doc.status().code() == StatusCode::kNotFound) << doc.status();
    ++reads;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const uint64_t acknowledged_while_down = workload_->acknowledged() - acknowledged_at_kill;
  auto admin = cluster_->Progress();
  std::fprintf(
      stderr, "zookeeper down %lld ms: %llu writes acknowledged, %llu reads; admin: %s\n",
      static_cast<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - killed_at).count()),
      static_cast<unsigned long long>(acknowledged_while_down),
      static_cast<unsigned long long>(reads),
      admin.ok() ? "answers" : admin.status().ToString().c_str());
  EXPECT_GT(acknowledged_while_down, 50u) << "writes stopped while ZooKeeper was down";

  Status restarted = zk_->Restart();
  ASSERT_TRUE(restarted.ok()) << restarted;
  // The coordinator leads again (at a new leader epoch if it lost its election session).
  ASSERT_NO_FATAL_FAILURE(WaitLeader(kCoordinator, 1, 30));
  Status added = cluster_->AddNode(4);
  ASSERT_TRUE(added.ok()) << added;
  ASSERT_NO_FATAL_FAILURE(WaitBalanced(60));
  auto progress = cluster_->Progress();
  ASSERT_TRUE(progress.ok()) << progress.status();
  EXPECT_GT(progress->moves_committed(), 0u);

  workload_->Stop();
  ExpectNoLoss(*workload_, nullptr);
  ExpectOneMap(*cluster_);
  std::string out;
  ASSERT_EQ(cluster_->RunCli({"status", "--json"}, &out), 0) << out;
  auto status = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(status.is_discarded()) << out;
  bool has_four = false;
  for (const auto& node : status["nodes"]) has_four = has_four || node["id"] == 4;
  EXPECT_TRUE(has_four) << out;
  EXPECT_TRUE(status["moves_in_flight"].empty()) << out;
  for (const Exit& exit : cluster_->Reap()) {
    ADD_FAILURE() << "process " << exit.id << " exited with " << exit.status;
  }
}

INSTANTIATE_TEST_SUITE_P(Leader, FailoverTest,
                         testing::Values(LeaderFault::kKill, LeaderFault::kPause), FaultName);

}  // namespace
}  // namespace shoal::cluster_test
