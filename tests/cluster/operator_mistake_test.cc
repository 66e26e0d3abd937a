// An operator's mistakes between real processes (docs/design/cluster.md, "Switch-then-copy"):
// `shoal add-node` for a node id with no process behind it is refused and changes nothing, and a
// node killed right after it was added (before or after its first bucket switched to it) leaves
// no key unavailable: its moves go back to their sources, every acknowledged write reads back,
// and `shoal remove-node` takes it out of the map.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "proto/shoal.pb.h"
#include "src/cluster/shard_map.h"
#include "tests/cluster/process_cluster.h"
#include "tests/cluster/workload.h"
#include "tests/cluster/workload_check.h"

namespace shoal::cluster_test {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kJoiner = 4;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class OperatorMistakeTest : public testing::Test {
 protected:
  void SetUp() override { cluster_ = std::make_unique<ProcessCluster>(ShoalBinary()); }
  void TearDown() override {
    if (HasFailure()) std::fprintf(stderr, "%s\n", cluster_->LogTails(15).c_str());
    workload_.reset();
    cluster_.reset();
  }

  // A coordinator (with `failpoints`) and two nodes holding 3 buckets, so that node 1 is heavy
  // and a joining node pre-bootstraps from it with a switch-then-copy move; a workload runs.
  void StartCluster(const std::string& failpoints) {
    ASSERT_TRUE(cluster_->StartCoordinator(2, 3, failpoints).ok());
    for (uint32_t id = 1; id <= 2; ++id) ASSERT_TRUE(cluster_->StartNode(id).ok());
    const Status serving = cluster_->WaitServing(30);
    ASSERT_TRUE(serving.ok()) << serving;
    workload_ =
        std::make_unique<Workload>(cluster_->uri(), cluster_->connect_options(), /*threads=*/2,
                                   /*keys_per_thread=*/100);
    const Status started = workload_->Start();
    ASSERT_TRUE(started.ok()) << started;
    const Status loaded = cluster_->AwaitLoadReported(std::chrono::seconds(20));
    ASSERT_TRUE(loaded.ok()) << loaded;
  }

  // Until no transition is in flight and node 4 holds no bucket; then remove-node takes it out,
  // and every acknowledged write reads back.
  void ExpectNodeFourGoneWithoutLoss() {
    bool settled = false;
    const auto until = Clock::now() + std::chrono::seconds(30);
    while (!settled && Clock::now() < until) {
      auto state = cluster_->State();
      settled = state.ok() && state->map->TransitionCount() == 0 &&
                state->map->BucketsOf(NodeId(kJoiner)).empty();
      if (!settled) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_TRUE(settled) << "moves toward the dead node 4 did not end";
    ASSERT_TRUE(cluster_->RemoveNode(kJoiner).ok());
    const Status balanced = cluster_->AwaitBalanced(std::chrono::seconds(30));
    ASSERT_TRUE(balanced.ok()) << balanced;
    auto state = cluster_->State();
    ASSERT_TRUE(state.ok()) << state.status();
    EXPECT_FALSE(state->map->HasNode(NodeId(kJoiner)));
    workload_->Stop();
    ExpectNoLoss(*workload_, nullptr);
    ExpectOneMap(*cluster_);
  }

  std::unique_ptr<ProcessCluster> cluster_;
  std::unique_ptr<Workload> workload_;
};

// `shoal add-node --id 9` with no process 9: FAILED_PRECONDITION naming the node, node 9 is not
// in the map, no move toward it begins, and every key stays served.
TEST_F(OperatorMistakeTest, AddNodeWithoutAProcessIsRefused) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(""));
  const std::string log_path = cluster_->dir() + "/cli.log";
  const size_t log_size = ReadAll(log_path).size();
  std::string out;
  EXPECT_EQ(cluster_->RunCli({"add-node", "--id", "9"}, &out), 1) << out;
  const std::string said = ReadAll(log_path).substr(log_size);
  EXPECT_NE(said.find("FAILED_PRECONDITION"), std::string::npos) << said;
  EXPECT_NE(said.find("n9 has not checked in"), std::string::npos) << said;
  std::this_thread::sleep_for(std::chrono::seconds(1));
  auto after = cluster_->State();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_FALSE(after->map->HasNode(NodeId(9)));
  EXPECT_FALSE(cluster_->LogShows(kCoordinator, "destination=9"));
  workload_->Stop();
  ExpectNoLoss(*workload_, nullptr);
}

// Node 4 checks in, is added, and is killed as soon as the first move toward it began (each move
// is held 1.5 s after its BEGIN, so the kill lands before any switch however slow the build):
// whatever moves toward it began end without it, at its check of the move.
TEST_F(OperatorMistakeTest, NodeKilledRightAfterItWasAdded) {
  ASSERT_NO_FATAL_FAILURE(StartCluster("coordinator.after_begin=pause:1500"));
  ASSERT_TRUE(cluster_->StartNode(kJoiner).ok());
  ASSERT_TRUE(cluster_->AddNode(kJoiner).ok());
  const std::string toward_joiner = "destination=" + std::to_string(kJoiner);
  const auto until = Clock::now() + std::chrono::seconds(30);
  while (!cluster_->LogShows(kCoordinator, toward_joiner) && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  cluster_->Kill(kJoiner);
  EXPECT_TRUE(cluster_->LogShows(kCoordinator, toward_joiner)) << "no move toward node 4 began";
  ASSERT_NO_FATAL_FAILURE(ExpectNodeFourGoneWithoutLoss());
}

// Node 4 is killed after its first bucket switched to it (the coordinator pauses right after
// the switch): the switched move goes back to its source once node 4 is down.
TEST_F(OperatorMistakeTest, NodeKilledAfterItsFirstBucketSwitched) {
  ASSERT_NO_FATAL_FAILURE(StartCluster("coordinator.after_switch=pause:1000"));
  ASSERT_TRUE(cluster_->StartNode(kJoiner).ok());
  ASSERT_TRUE(cluster_->AddNode(kJoiner).ok());
  const auto until = Clock::now() + std::chrono::seconds(40);
  auto added_at = Clock::now();
  while (!cluster_->LogShowsFailpoint(kCoordinator, "coordinator.after_switch") &&
         Clock::now() < until) {
    // The loads may not make node 1 heavy, and the bootstrap is then planned as copy-then-switch:
    // once balanced without a switch, node 4 leaves and joins again.
    if (Clock::now() - added_at > std::chrono::seconds(3)) {
      auto progress = cluster_->Progress();
      if (progress.ok() && progress->balanced()) {
        ASSERT_TRUE(cluster_->RemoveNode(kJoiner).ok());
        ASSERT_TRUE(cluster_->AwaitBalanced(std::chrono::seconds(30)).ok());
        ASSERT_TRUE(cluster_->AwaitLoadReported(std::chrono::seconds(20)).ok());
        ASSERT_TRUE(cluster_->AddNode(kJoiner).ok());
        added_at = Clock::now();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(cluster_->LogShowsFailpoint(kCoordinator, "coordinator.after_switch"))
      << "node 4's pre-bootstrap did not switch a bucket";
  cluster_->Kill(kJoiner);
  ASSERT_NO_FATAL_FAILURE(ExpectNodeFourGoneWithoutLoss());
  auto progress = cluster_->Progress();
  ASSERT_TRUE(progress.ok()) << progress.status();
  EXPECT_GE(progress->moves_aborted(), 1u);
  EXPECT_TRUE(cluster_->LogShows(kCoordinator, "goes back to its source"));
}

}  // namespace
}  // namespace shoal::cluster_test
