// A node whose disk reaches its free-space reserve at K = 3 (FAILURE-PATTERNS.md, "from the
// field": a disk that fills). It refuses every write, a client's and a replicated one, with
// NO_SPACE. The cluster keeps taking every write with the two other copies:
//   - its primaries go to backups with room (cluster::Balancer, MoveReason::kDiskFull), so that
//     no key's writes fail for want of space on one node of three;
//   - as a backup it refuses the primaries' streams, and each primary reports it (the report
//     says it refused, and why) and the coordinator takes it out of their configurations;
//   - the balancer wants its copies back, but begins no move to it while it is full
//     (move.waits_for_space), where it used to begin one and have it refused every round.
// Once space is freed, its copies are rebuilt and it leads primaries again; no acknowledged
// write is lost and every copy equals its primary's.

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "src/common/log_capture.h"
#include "src/coordinator/coordinator.h"
#include "src/storage/full_disk_fs.h"
#include "tests/support/coordinator_test_fixture.h"

namespace shoal::coordinator {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fixture

constexpr uint64_t kReserve = node::test::kSmallTestStoreReserve;

class ReplicationLowDiskTest : public CoordinatorTest {
 protected:
  ReplicationLowDiskTest()
      : disk_(std::make_shared<storage::FullDiskFileSystem>(dir_ + "/node-2/")) {
    replication_factor_ = 3;
    node_env_ = storage::FullDiskFileSystem::NewEnv(disk_);
  }

  size_t PrimariesOf(NodeId node) {
    size_t led = 0;
    for (const auto& bucket : map()->buckets()) led += bucket.replicas.front() == node ? 1 : 0;
    return led;
  }

  std::shared_ptr<storage::FullDiskFileSystem> disk_;
};

TEST_F(ReplicationLowDiskTest, AFullNodeLeavesItsBucketsToTheOthersUntilSpaceIsFreed) {
  Run(/*auto_balance=*/true, [&] {
    ASSERT_TRUE(WaitFor([&] { return FullyReplicated() && PrimariesOf(kN2) > 0; }));
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    log::LogCapture log;

    disk_->SetFreeBytes(kReserve);  // no room above the reserve: n2 refuses every write
    ASSERT_TRUE(WaitFor([&] { return PrimariesOf(kN2) == 0 && !Holds(kN2); }, 30 * kSecond));
    ExpectWritesGoOn(*w);
    const MoveProgress full = coordinator().progress();
    ASSERT_TRUE(sim_.Sleep(5 * kSecond).ok());
    ExpectWritesGoOn(*w);
    EXPECT_EQ(coordinator().progress().started, full.started)
        << "a move to the full node was begun";
    EXPECT_EQ(coordinator().progress().aborted, full.aborted);
    EXPECT_FALSE(Holds(kN2));

    disk_->SetFreeBytes(std::nullopt);
    ASSERT_TRUE(WaitFor([&] { return FullyReplicated() && PrimariesOf(kN2) > 0; }, 60 * kSecond));
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
    ExpectCopiesEqual();

    const std::string lines = log.Stop();
    EXPECT_GE(log::Occurrences(lines, "move.waits_for_space"), 1u);
    // n2's refusals are reported as such, with their reason, not as silence.
    EXPECT_GE(log::Occurrences(lines, "refused every message"), 1u);
    EXPECT_GE(log::Occurrences(lines, "disk full under"), 1u);
  });
}

}  // namespace
}  // namespace shoal::coordinator
