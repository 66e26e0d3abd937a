#include "src/coordinator/membership.h"

#include <gtest/gtest.h>

#include "src/coordinator/fake_move_node.h"

namespace shoal::coordinator::test {
namespace {

using MembershipTest = PartsTest;

TEST_F(MembershipTest, ANodeNeverHeardFromIsDownOneTimeoutAfterTheStart) {
  Run([&] {
    EXPECT_FALSE(membership_->IsDown(kN1));  // the benefit of the doubt
    EXPECT_FALSE(membership_->HeardFrom(kN1));
    ASSERT_TRUE(sim_.Sleep(options_.node_timeout + kMs).ok());
    EXPECT_TRUE(membership_->IsDown(kN1));
    EXPECT_TRUE(membership_->RecordHeartbeat(kN1));  // it came back
    EXPECT_FALSE(membership_->IsDown(kN1));
    EXPECT_TRUE(membership_->HeardFrom(kN1));
    EXPECT_FALSE(membership_->RecordHeartbeat(kN1));  // it was up
    EXPECT_EQ(membership_->DownNodes(*committer_->map()), std::set<NodeId>{kN2});
  });
}

TEST_F(MembershipTest, CheckInAsksANodeNotHeardFromAndCountsItsAnswer) {
  Run([&] {
    ASSERT_TRUE(membership_->CheckIn(kN2, committer_->State()).ok());
    EXPECT_EQ(node(kN2).Count("InstallMap"), 1);
    EXPECT_TRUE(membership_->HeardFrom(kN2));
    // Heard from lately: no call.
    ASSERT_TRUE(membership_->CheckIn(kN2, committer_->State()).ok());
    EXPECT_EQ(node(kN2).Count("InstallMap"), 1);
  });
}

TEST_F(MembershipTest, ANodeIdWithNoProcessNeverChecksIn) {
  Run([&] {
    const NodeId nobody(9);
    const Status status = membership_->CheckIn(nobody, committer_->State(), 100 * kMs);
    EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition) << status;
    EXPECT_NE(status.ToString().find("n9"), std::string::npos) << status;
    EXPECT_FALSE(membership_->HeardFrom(nobody));
  });
}

TEST_F(MembershipTest, CheckInWaitsTheGraceForAStartingNodesFirstHeartbeat) {
  Run([&] {
    const NodeId starting(9);
    sim_.Spawn(Address::Node(starting), "heartbeat", [&] {
      (void)sim_.Sleep(300 * kMs);
      (void)membership_->RecordHeartbeat(starting);
    });
    EXPECT_TRUE(membership_->CheckIn(starting, committer_->State(), kSecond).ok());
  });
}

// One store speaks for a node id at a time: a second process with the same --id (another store)
// is refused while the first is heard from, and a replaced data directory is taken once the old
// process has been silent for node_timeout.
TEST_F(MembershipTest, AnotherStoreIsRefusedWhileTheNodesStoreIsHeardFrom) {
  Run([&] {
    constexpr uint64_t kFirst = 0x1111;
    constexpr uint64_t kOther = 0x2222;
    ASSERT_TRUE(membership_->AdmitStore(kN1, kFirst, 0).ok());
    const Status refused = membership_->AdmitStore(kN1, kOther, 0);
    EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused;
    EXPECT_NE(refused.ToString().find("--id 1"), std::string::npos) << refused;
    EXPECT_NE(refused.ToString().find("0x1111"), std::string::npos) << refused;
    // The first keeps speaking; the second stays refused.
    ASSERT_TRUE(sim_.Sleep(options_.node_timeout / 2).ok());
    ASSERT_TRUE(membership_->AdmitStore(kN1, kFirst, 0).ok());
    ASSERT_TRUE(sim_.Sleep(options_.node_timeout / 2).ok());
    EXPECT_FALSE(membership_->AdmitStore(kN1, kOther, 0).ok());
    EXPECT_TRUE(membership_->AdmitStore(kN1, 0, 0).ok()) << "no store: not checked";
    // The first falls silent: the second (a replaced data directory) is taken.
    ASSERT_TRUE(sim_.Sleep(options_.node_timeout + kMs).ok());
    ASSERT_TRUE(membership_->AdmitStore(kN1, kOther, 0).ok());
    EXPECT_FALSE(membership_->AdmitStore(kN1, kFirst, 0).ok());
  });
}

// Before any heartbeat since the coordinator's start, the store the map binds to a node speaks
// for it for one node_timeout (a coordinator restarted while a second process runs with the id).
TEST_F(MembershipTest, TheMapsStoreIsWaitedForAfterTheStart) {
  Run([&] {
    EXPECT_FALSE(membership_->AdmitStore(kN2, 0x2222, 0x1111).ok());
    ASSERT_TRUE(membership_->AdmitStore(kN1, 0x1111, 0x1111).ok());
    ASSERT_TRUE(sim_.Sleep(options_.node_timeout + kMs).ok());
    EXPECT_TRUE(membership_->AdmitStore(kN2, 0x2222, 0x1111).ok()) << "the bound store is silent";
  });
}

TEST_F(MembershipTest, AJoiningNodeIsTakenOnce) {
  Run([&] {
    membership_->AddJoining(kN3);
    EXPECT_EQ(membership_->Joining(), std::set<NodeId>{kN3});
    EXPECT_TRUE(membership_->TakeJoining(kN3));
    EXPECT_FALSE(membership_->TakeJoining(kN3));
    EXPECT_TRUE(membership_->Joining().empty());
  });
}

}  // namespace
}  // namespace shoal::coordinator::test
