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
#include "src/metadata/zookeeper_test_server.h"
#include "tests/cluster/process_cluster.h"
#include "tests/cluster/workload.h"

namespace shoal::cluster_test {
namespace {

using Clock = std::chrono::steady_clock;

// Short, so that a dead leader is replaced quickly (the test server's tickTime allows 400 ms).
constexpr int kElectionSessionMs = 1'500;
constexpr char kPoint[] = "coordinator.before_commit";

std::string Binary() {
  const char* binary = std::getenv("SHOAL_BINARY");
  return binary != nullptr ? binary : SHOAL_DEFAULT_BINARY;
}

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

class FailoverTest : public testing::TestWithParam<LeaderFault> {
 protected:
  void SetUp() override {
    auto zk = metadata::ZooKeeperTestServer::Start();
    // Fails (never skips) when the server can not run.
    ASSERT_TRUE(zk.ok()) << zk.status();
    zk_ = *std::move(zk);
    cluster_ = std::make_unique<ProcessCluster>(Binary());
    cluster_->UseZooKeeper(fmt::format("zk://{}/shoal/failover", zk_->hosts()), kElectionSessionMs);
  }
  void TearDown() override {
    if (HasFailure()) std::fprintf(stderr, "%s\n", cluster_->LogTails(20).c_str());
    workload_.reset();
    cluster_.reset();
    zk_.reset();
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
    const auto until = Clock::now() + std::chrono::seconds(seconds);
    while (Clock::now() < until) {
      auto progress = cluster_->Progress();
      if (progress.ok() && progress->balanced()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL() << "not balanced after " << seconds << " s";
  }

  bool LogShows(const std::string& name, const std::string& text) const {
    return ReadFile(fmt::format("{}/{}.log", cluster_->dir(), name)).find(text) !=
           std::string::npos;
  }

  std::unique_ptr<metadata::ZooKeeperTestServer> zk_;
  std::unique_ptr<ProcessCluster> cluster_;
  std::unique_ptr<Workload> workload_;
};

TEST_P(FailoverTest, StandbyTakesOverMidMoveWithoutLoss) {
  // Every move of the first leader waits 5 s before its commit: the window for the fault.
  ASSERT_TRUE(cluster_->StartCoordinator(3, 12, std::string(kPoint) + "=pause:5000").ok());
  ASSERT_TRUE(cluster_->StartStandbyCoordinator(3, 12).ok());
  for (uint32_t id = 1; id <= 4; ++id) {
    Status started = cluster_->StartNode(id);
    ASSERT_TRUE(started.ok()) << started;
  }
  Status serving = cluster_->WaitServing(30);
  ASSERT_TRUE(serving.ok()) << serving;
  ASSERT_NO_FATAL_FAILURE(WaitLeader(kCoordinator, 1, 10));

  workload_ = std::make_unique<Workload>(cluster_->uri(), /*threads=*/2, /*keys_per_thread=*/150);
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
  EXPECT_GT(workload_->acknowledged(), 100u);
  const VerifyResult verified = workload_->Verify(nullptr, 20);
  EXPECT_EQ(verified.lost_writes, 0u) << verified.first_problem;
  EXPECT_EQ(verified.resurrected_deletes, 0u) << verified.first_problem;
  EXPECT_EQ(verified.unreadable, 0u) << verified.first_problem;
  std::fprintf(stderr, "workload: %llu acknowledged, %llu unknown outcomes, %llu keys\n",
               static_cast<unsigned long long>(workload_->acknowledged()),
               static_cast<unsigned long long>(workload_->uncertain()),
               static_cast<unsigned long long>(verified.keys));
  // One map: no move in flight, and every node holds exactly its buckets.
  std::string disagreement = cluster_->MapDisagreement();
  for (int i = 0; i < 100 && !disagreement.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    disagreement = cluster_->MapDisagreement();
  }
  EXPECT_EQ(disagreement, "");
  // Neither coordinator died on its own.
  for (const Exit& exit : cluster_->Reap()) {
    ADD_FAILURE() << "process " << exit.id << " exited with " << exit.status;
  }
}

INSTANTIATE_TEST_SUITE_P(Leader, FailoverTest,
                         testing::Values(LeaderFault::kKill, LeaderFault::kPause), FaultName);

}  // namespace
}  // namespace shoal::cluster_test
