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
