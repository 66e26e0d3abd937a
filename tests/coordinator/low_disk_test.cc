// A node near its free-space reserve is not a destination (FAILURE-PATTERNS.md, "from the
// field": a move to a node whose disk fills). Nodes report their free space and reserve with
// their load (transport::DiskSpaceReport); the coordinator offers the balancer half of the space
// above the reserve (cluster::LoadReport::node_room_bytes), and the planners give a node no
// bucket that does not fit (docs/design/cluster.md, "Free space"). A node that joins with a disk
// at its reserve receives nothing and the cluster counts as balanced; once space is freed, the
// balancer's next round moves buckets to it.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "src/coordinator/coordinator.h"
#include "src/storage/full_disk_fs.h"
#include "tests/support/coordinator_test_fixture.h"

namespace shoal::coordinator {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fixture

constexpr NodeId kN4{4};
constexpr uint64_t kReserve = node::test::kSmallTestStoreReserve;

class LowDiskTest : public CoordinatorTest {
 protected:
  LowDiskTest() : disk_(std::make_shared<storage::FullDiskFileSystem>(dir_ + "/node-4/")) {
    node_env_ = storage::FullDiskFileSystem::NewEnv(disk_);
  }

  std::shared_ptr<storage::FullDiskFileSystem> disk_;
};

TEST_F(LowDiskTest, ANodeAtItsReserveReceivesNothingUntilSpaceIsFreed) {
  disk_->SetFreeBytes(kReserve);  // no room above the reserve
  Run(/*auto_balance=*/true, [&] {
    ASSERT_TRUE(WaitFor([&] { return coordinator().Balanced().value_or(false); }));
    uint64_t smallest = UINT64_MAX;
    for (const cluster::BucketPlacement& bucket : map()->buckets()) {
      smallest = std::min(smallest, StoredIn(bucket.replicas.front(), RangeOf(bucket)));
    }
    ASSERT_GT(smallest, 0u) << "every bucket holds documents";

    const uint64_t started = coordinator().progress().started;
    // What adding n4 would move: nothing, since no bucket fits in its room.
    ASSERT_TRUE(cluster_->StartNode(kN4).ok());
    ASSERT_TRUE(coordinator().AddNode(kN4).ok());
    ASSERT_TRUE(WaitFor([&] { return coordinator().Balanced().value_or(false); }));
    EXPECT_TRUE(map()->BucketsOf(kN4).empty());
    EXPECT_EQ(coordinator().progress().started, started);
    auto plan = coordinator().Plan();
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->buckets, 0u);
    EXPECT_EQ(cluster_->node(kN4)->store()->disk_space().refused(), 0u)
        << "a move was tried and refused at n4 instead of not being planned";

    // Space is freed: the next rounds bring n4 to its share, every move commits.
    disk_->SetFreeBytes(std::nullopt);
    ASSERT_TRUE(WaitFor([&] { return !map()->BucketsOf(kN4).empty(); }));
    ASSERT_TRUE(WaitFor([&] { return coordinator().Balanced().value_or(false); }));
    EXPECT_GE(map()->BucketsOf(kN4).size(), 1u);
    EXPECT_EQ(coordinator().progress().aborted, 0u);
    ExpectAllDocumentsReadable();
  });
}

}  // namespace
}  // namespace shoal::coordinator
