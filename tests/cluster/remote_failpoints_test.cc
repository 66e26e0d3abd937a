// Failpoints over the network (docs/security.md): a coordinator and a node started without
// --enable-failpoints refuse AdminRequest.set_failpoints (`shoal failpoint`) with
// FAILED_PRECONDITION, even one that would switch every failpoint off; started with the flag,
// both accept it.

#include <gtest/gtest.h>

#include <string>

#include "tests/cluster/process_cluster.h"

namespace shoal::cluster_test {
namespace {

void StartOneNodeCluster(ProcessCluster& cluster) {
  ASSERT_TRUE(cluster.StartCoordinator(1, 4).ok());
  ASSERT_TRUE(cluster.StartNode(1).ok());
  const Status serving = cluster.WaitServing(30);
  ASSERT_TRUE(serving.ok()) << serving << cluster.LogTails(15);
}

TEST(RemoteFailpointsTest, ProcessesWithoutTheFlagRefuseAndChangeNothing) {
  ProcessCluster cluster(ShoalBinary());
  cluster.DisableRemoteFailpoints();
  ASSERT_NO_FATAL_FAILURE(StartOneNodeCluster(cluster));
  for (const std::string spec : {"coordinator.after_begin=crash", ""}) {
    for (const Status& set : {cluster.SetCoordinatorFailpoints(kCoordinator, spec),
                              cluster.SetNodeFailpoints(1, spec)}) {
      EXPECT_EQ(set.code(), StatusCode::kFailedPrecondition) << set;
      EXPECT_NE(set.ToString().find("started without --enable-failpoints"), std::string::npos)
          << set;
    }
  }
  // Nothing was armed: both processes still serve.
  EXPECT_TRUE(cluster.Running(kCoordinator));
  EXPECT_TRUE(cluster.Running(1));
  EXPECT_TRUE(cluster.WaitServing(10).ok());
}

TEST(RemoteFailpointsTest, ProcessesWithTheFlagAccept) {
  ProcessCluster cluster(ShoalBinary());
  ASSERT_NO_FATAL_FAILURE(StartOneNodeCluster(cluster));
  for (const std::string spec : {"test.unreached=pause:1", ""}) {
    const Status coordinator = cluster.SetCoordinatorFailpoints(kCoordinator, spec);
    EXPECT_TRUE(coordinator.ok()) << coordinator;
    const Status node = cluster.SetNodeFailpoints(1, spec);
    EXPECT_TRUE(node.ok()) << node;
  }
}

}  // namespace
}  // namespace shoal::cluster_test
