// An admin request whose answer a coordinator crash loses, with real processes
// (docs/design/network.md, "Admin requests across a coordinator failover"): two coordinators on
// one ZooKeeper path, the leader set to die right after it committed a change and before it
// answers (coordinator.before_admin_reply=crash). `shoal add-node` must not leave the operator
// with "the request may have been handled": it waits for the standby to take over, learns from
// the new leader's map that the node was added, and says so.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "proto/shoal.pb.h"
#include "src/metadata/zookeeper_test_server.h"
#include "tests/cluster/process_cluster.h"

namespace shoal::cluster_test {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kElectionSessionMs = 1'500;
constexpr char kPoint[] = "coordinator.before_admin_reply";

class AdminRepeatTest : public testing::Test {
 protected:
  void SetUp() override {
    auto zk = metadata::ZooKeeperTestServer::Start();
    ASSERT_TRUE(zk.ok()) << zk.status();
    zk_ = *std::move(zk);
    cluster_ = std::make_unique<ProcessCluster>(ShoalBinary());
    cluster_->UseZooKeeper(fmt::format("zk://{}/shoal/admin-repeat", zk_->hosts()),
                           kElectionSessionMs);
  }
  void TearDown() override {
    if (HasFailure()) std::fprintf(stderr, "%s\n", cluster_->LogTails(20).c_str());
    cluster_.reset();
    zk_.reset();
  }

  std::unique_ptr<metadata::ZooKeeperTestServer> zk_;
  std::unique_ptr<ProcessCluster> cluster_;
};

TEST_F(AdminRepeatTest, AddNodeWhoseAnswerALeaderCrashLostReportsTheNodeAdded) {
  // Nodes 1 and 2 hold the buckets; node 3 runs (it has checked in) and is added.
  ASSERT_TRUE(cluster_->StartCoordinator(2, 4, fmt::format("{}=crash:1", kPoint)).ok());
  ASSERT_TRUE(cluster_->StartStandbyCoordinator(2, 4).ok());
  for (uint32_t id = 1; id <= 3; ++id) {
    Status started = cluster_->StartNode(id);
    ASSERT_TRUE(started.ok()) << started;
  }
  Status serving = cluster_->WaitServing(30);
  ASSERT_TRUE(serving.ok()) << serving;
  auto before = cluster_->Progress();
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_EQ(before->leader(), cluster_->CoordinatorAddress(kCoordinator));

  const auto start = Clock::now();
  std::string out;
  const int code = cluster_->RunCli({"add-node", "--id", "3", "--no-wait", "--json"}, &out);
  const auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  std::fprintf(stderr, "add-node across the crash: exit %d after %lld ms: %s\n", code,
               static_cast<long long>(took), out.c_str());

  // The leader died at the point, after its commit: the first answer was lost.
  ASSERT_TRUE(cluster_->LogShowsFailpoint(kCoordinator, kPoint));
  const std::vector<Exit> exits = cluster_->Reap();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].id, kCoordinator);
  EXPECT_TRUE(exits[0].killed);
  ASSERT_EQ(code, 0) << out;
  auto answer = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(answer.is_discarded()) << out;
  EXPECT_EQ(answer["recovered"], "the first attempt's answer was lost; confirmed by the map")
      << out;
  EXPECT_EQ(answer["outcome"],
            "node 3 added (the first attempt's answer was lost; confirmed by the map)")
      << out;

  // The new leader's map has the node, added once.
  auto state = cluster_->State();
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_TRUE(state->map->HasNode(NodeId(3)));
  auto progress = cluster_->Progress();
  ASSERT_TRUE(progress.ok()) << progress.status();
  EXPECT_EQ(progress->leader(), cluster_->CoordinatorAddress(kStandbyCoordinator));
  EXPECT_EQ(progress->leader_epoch(), 2u);
  // The answer shown is the new leader's, at or after the epoch that added the node.
  EXPECT_GT(answer["epoch"].get<uint64_t>(), before->epoch()) << out;
  EXPECT_LE(answer["epoch"].get<uint64_t>(), progress->epoch()) << out;
}

}  // namespace
}  // namespace shoal::cluster_test
