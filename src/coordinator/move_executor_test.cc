// The MoveExecutor against scripted nodes (fake_move_node.h): the calls of each protocol, in
// order, the durable records, and what a failed step leaves behind. No store, no embedded
// cluster: the nodes answer what the script says.

#include "src/coordinator/move_executor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/coordinator/fake_move_node.h"

namespace shoal::coordinator::test {
namespace {

using cluster::ShardMap;
using cluster::ShardMapEdit;
using cluster::TransitionMode;
using cluster::TransitionStage;

class MoveExecutorTest : public PartsTest {
 protected:
  // Runs a move of b0 from n1 to n2 the way Coordinator::MoveBucket does.
  Status MoveB0(TransitionMode mode) {
    EXPECT_TRUE(executor_->Claim(kB0));
    Status status = executor_->Run(kB0, kN2, mode, /*planned_bytes=*/1000);
    executor_->Release(kB0);
    return status;
  }

  // The requests `id` received, but for the map publications.
  std::vector<std::string> MoveCalls(NodeId id) {
    std::vector<std::string> calls;
    for (const auto& name : node(id).received()) {
      if (name != "InstallMap") calls.push_back(name);
    }
    return calls;
  }

  // Stores a transition of b0 from n1 to n2 in `stage`, as a task that ended left it.
  void LeaveTransition(TransitionMode mode, TransitionStage stage) {
    const MoveId move = committer_->NextMoveId();
    auto begun = committer_->CommitEdit([&](const ShardMap&, ShardMapEdit* edit) {
      edit->BeginTransition(kB0, move, {kN2}, mode);
      return OkStatus();
    });
    ASSERT_TRUE(begun.ok()) << begun.status();
    std::vector<TransitionStage> path;
    for (auto s = cluster::FirstStage(mode); s != stage;) {
      s = *cluster::NextStage(s, mode);
      path.push_back(s);
    }
    for (TransitionStage next : path) {
      auto advanced = committer_->CommitEdit([&](const ShardMap&, ShardMapEdit* edit) {
        if (next == TransitionStage::kCommitted) {
          edit->CommitTransition(kB0, move);
        } else {
          edit->AdvanceStage(kB0, move, next);
        }
        return OkStatus();
      });
      ASSERT_TRUE(advanced.ok()) << advanced.status();
    }
  }
};

TEST_F(MoveExecutorTest, CopyThenSwitchRunsEveryStepInOrderAndCommits) {
  Run([&] {
    ASSERT_TRUE(MoveB0(TransitionMode::kCopyThenSwitch).ok());
    const auto& b0 = Placement(kB0);
    EXPECT_EQ(b0.replicas, std::vector<NodeId>{kN2});
    EXPECT_FALSE(b0.transition.has_value());
    // The source exports, is fenced, and drops its copy once the commit is durable.
    EXPECT_EQ(MoveCalls(kN1), (std::vector<std::string>{"ExportBucket", "Fence", "DropBucket"}));
    // The destination checks in, ingests, catches up (rounds, then the drain to the fence).
    EXPECT_EQ(node(kN2).Count("IngestBucket"), 1);
    EXPECT_GE(node(kN2).Count("CatchUp"), 2);
    EXPECT_EQ(node(kN2).Count("DropBucket"), 0);
    EXPECT_EQ(LogOf(MoveId(1)), "DONE b0");
    const MoveProgress progress = progress_->Snapshot();
    EXPECT_EQ(progress.started, 1u);
    EXPECT_EQ(progress.committed, 1u);
    EXPECT_EQ(progress.finished, 1u);
    EXPECT_EQ(progress.in_flight, 0u);
    EXPECT_EQ(progress.bytes_planned, FakeMoveNode::kExportedBytes);
    EXPECT_EQ(progress.fence_windows.size(), 1u);
  });
}

TEST_F(MoveExecutorTest, AFailedIngestAbortsAndTheDestinationDropsWhatItStaged) {
  Run([&] {
    node(kN2).Fail("IngestBucket", InternalError("disk on fire"));
    const Status status = MoveB0(TransitionMode::kCopyThenSwitch);
    EXPECT_EQ(status.code(), StatusCode::kInternal) << status;
    const auto& b0 = Placement(kB0);
    EXPECT_EQ(b0.replicas, std::vector<NodeId>{kN1});
    EXPECT_FALSE(b0.transition.has_value());
    EXPECT_EQ(node(kN2).Count("DropBucket"), 1);
    EXPECT_EQ(node(kN1).Count("Fence"), 0);  // never fenced
    EXPECT_NE(LogOf(MoveId(1)).find("ABORT b0"), std::string::npos) << LogOf(MoveId(1));
    const MoveProgress progress = progress_->Snapshot();
    EXPECT_EQ(progress.aborted, 1u);
    EXPECT_EQ(progress.in_flight, 0u);
  });
}

TEST_F(MoveExecutorTest, SwitchThenCopyChecksInTheDestinationBeforeTheFenceAndCommits) {
  Run([&] {
    ASSERT_TRUE(MoveB0(TransitionMode::kSwitchThenCopy).ok());
    const auto& b0 = Placement(kB0);
    EXPECT_EQ(b0.replicas, std::vector<NodeId>{kN2});
    EXPECT_FALSE(b0.transition.has_value());
    // The source: the fence before the switch, the seal before the commit, the drop.
    EXPECT_EQ(MoveCalls(kN1), (std::vector<std::string>{"Fence", "Fence", "DropBucket"}));
    // The destination took the kPrepare map before anything else happened to the move.
    const auto destination = node(kN2).received();
    ASSERT_FALSE(destination.empty());
    EXPECT_EQ(destination.front(), "InstallMap");
    EXPECT_EQ(node(kN2).Count("TransferBucket"), 1);
    EXPECT_GE(node(kN2).Count("CatchUp"), 1);
    EXPECT_EQ(LogOf(MoveId(1)), "DONE b0");
    EXPECT_EQ(progress_->Snapshot().bytes_copied, 300u);
  });
}

TEST_F(MoveExecutorTest, ASwitchedMoveWhoseDestinationIsLostGoesBackToTheSource) {
  Run([&] {
    node(kN2).Fail("TransferBucket", UnavailableError("gone"));
    const Status status = MoveB0(TransitionMode::kSwitchThenCopy);
    EXPECT_FALSE(status.ok());
    const auto& b0 = Placement(kB0);
    EXPECT_EQ(b0.replicas, std::vector<NodeId>{kN1});
    EXPECT_FALSE(b0.transition.has_value());
    EXPECT_TRUE(membership_->IsDown(kN2));
    EXPECT_NE(LogOf(MoveId(1)).find("goes back to its source"), std::string::npos)
        << LogOf(MoveId(1));
  });
}

TEST_F(MoveExecutorTest, ADestinationThatNeverCheckedInIsRefusedBeforeBegin) {
  Run([&] {
    sim_.Stop(Address::Node(kN3));  // no process answers for n3
    ASSERT_TRUE(committer_
                    ->CommitEdit([](const ShardMap&, ShardMapEdit* edit) {
                      edit->AddNode(kN3);
                      return OkStatus();
                    })
                    .ok());
    const auto before = committer_->map();
    EXPECT_TRUE(executor_->Claim(kB0));
    const Status status = executor_->Run(kB0, kN3, TransitionMode::kSwitchThenCopy, 0);
    executor_->Release(kB0);
    EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition) << status;
    EXPECT_EQ(committer_->map()->epoch(), before->epoch());  // no BEGIN
    EXPECT_EQ(committer_->NextMoveId(), MoveId(1));
    EXPECT_EQ(progress_->Snapshot().started, 0u);
  });
}

TEST_F(MoveExecutorTest, ACommittedOrphanIsFinished) {
  Run([&] {
    LeaveTransition(TransitionMode::kCopyThenSwitch, TransitionStage::kCommitted);
    ASSERT_TRUE(executor_->ResolveOrphans().ok());
    EXPECT_EQ(Placement(kB0).replicas, std::vector<NodeId>{kN2});
    EXPECT_FALSE(Placement(kB0).transition.has_value());
    EXPECT_EQ(node(kN1).Count("DropBucket"), 1);  // the source's copy, after the commit
    EXPECT_EQ(progress_->Snapshot().finished, 1u);
  });
}

TEST_F(MoveExecutorTest, AnUnswitchedOrphanIsAbortedAndAClaimedOneIsLeftAlone) {
  Run([&] {
    LeaveTransition(TransitionMode::kCopyThenSwitch, TransitionStage::kCatchUp);
    // Claimed by a task of this incarnation: not an orphan.
    ASSERT_TRUE(executor_->Claim(kB0));
    ASSERT_TRUE(executor_->ResolveOrphans().ok());
    EXPECT_TRUE(Placement(kB0).transition.has_value());
    executor_->Release(kB0);
    ASSERT_TRUE(executor_->ResolveOrphans().ok());
    EXPECT_FALSE(Placement(kB0).transition.has_value());
    EXPECT_EQ(Placement(kB0).replicas, std::vector<NodeId>{kN1});
    EXPECT_EQ(node(kN2).Count("DropBucket"), 1);
  });
}

TEST_F(MoveExecutorTest, ASwitchedOrphanRollsForward) {
  Run([&] {
    LeaveTransition(TransitionMode::kSwitchThenCopy, TransitionStage::kCopy);
    ASSERT_TRUE(executor_->ResolveOrphans().ok());
    EXPECT_EQ(Placement(kB0).replicas, std::vector<NodeId>{kN2});
    EXPECT_FALSE(Placement(kB0).transition.has_value());
    // Without the switch's sequence the roll-forward transfers twice (before and after the seal).
    EXPECT_EQ(node(kN2).Count("TransferBucket"), 2);
  });
}

TEST_F(MoveExecutorTest, OneClaimPerBucketAndABoundOnClaims) {
  Run([&] {
    EXPECT_TRUE(executor_->Claim(kB0));
    EXPECT_FALSE(executor_->Claim(kB0));
    EXPECT_FALSE(executor_->Claim(kB1, /*max_claims=*/1));
    EXPECT_TRUE(executor_->Claim(kB1, /*max_claims=*/2));
    EXPECT_EQ(executor_->Claimed(), 2u);
    executor_->Release(kB0);
    executor_->Release(kB1);
    EXPECT_EQ(executor_->Claimed(), 0u);
  });
}

}  // namespace
}  // namespace shoal::coordinator::test
