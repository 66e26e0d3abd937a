// Tests of Apply (shard_map_apply.cc): the lifecycle of moves, splits and merges, and that every
// invalid edit is rejected as a whole without changing anything.

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "src/cluster/cluster_test_util.h"
#include "src/cluster/replication_setting.h"
#include "src/cluster/shard_map_edit.h"

namespace shoal::cluster {
namespace {

using testing::GenEdit;
using testing::Nodes;

ShardMap Initial(std::initializer_list<uint32_t> nodes, uint32_t buckets, uint32_t k = 1) {
  return *ShardMap::Initial(
      {.nodes = Nodes(nodes), .bucket_count = buckets, .replication_factor = k});
}

// Applies `edit` (re-based on `map`), asserting success and invariants.
ShardMap MustApply(const ShardMap& map, ShardMapEdit edit) {
  edit.SetBaseEpoch(map.epoch());
  auto next = Apply(map, edit);
  EXPECT_TRUE(next.ok()) << next.status() << "\n"
                         << edit.DebugString() << "\n"
                         << map.DebugString();
  if (!next.ok()) return map;
  EXPECT_TRUE(next->CheckInvariants().ok());
  EXPECT_EQ(next->epoch().value(), map.epoch().value() + 1);
  return *std::move(next);
}

// Asserts that `edit` (re-based on `map`) is rejected and that `map` is unchanged.
void ExpectRejected(const ShardMap& map, ShardMapEdit edit) {
  const std::string before = map.DebugString();
  edit.SetBaseEpoch(map.epoch());
  auto next = Apply(map, edit);
  EXPECT_FALSE(next.ok()) << edit.DebugString() << " was accepted:\n" << next->DebugString();
  EXPECT_EQ(map.DebugString(), before);
}

TEST(ShardMapApplyTest, CopyThenSwitchMoveLifecycle) {
  ShardMap map = Initial({1, 2}, 2);  // b0 on n1, b1 on n2
  const BucketId b(0);
  const MoveId m(1);
  map = MustApply(
      map, ShardMapEdit().BeginTransition(b, m, Nodes({2}), TransitionMode::kCopyThenSwitch));
  EXPECT_EQ(map.Find(b)->replicas, Nodes({1}));  // the stable placement is untouched
  EXPECT_EQ(map.Find(b)->transition->stage, TransitionStage::kCopy);
  ExpectRejected(map, ShardMapEdit().CommitTransition(b, m));  // too early: no fence yet
  map = MustApply(map, ShardMapEdit().AdvanceStage(b, m, TransitionStage::kCatchUp));
  map = MustApply(map, ShardMapEdit().AdvanceStage(b, m, TransitionStage::kPrepare));
  ExpectRejected(map, ShardMapEdit().AdvanceStage(b, m, TransitionStage::kCommitted));
  map = MustApply(map, ShardMapEdit().CommitTransition(b, m));
  EXPECT_EQ(map.Find(b)->replicas, Nodes({2}));
  EXPECT_EQ(map.Find(b)->transition->stage, TransitionStage::kCommitted);
  ExpectRejected(map, ShardMapEdit().AbortTransition(b, m));  // no abort after the commit
  ExpectRejected(map, ShardMapEdit().FinishTransition(b, m));
  map = MustApply(map, ShardMapEdit().AdvanceStage(b, m, TransitionStage::kCleanup));
  map = MustApply(map, ShardMapEdit().FinishTransition(b, m));
  EXPECT_FALSE(map.Find(b)->transition.has_value());
  EXPECT_EQ(map.epoch(), MapEpoch(7));
  EXPECT_EQ(map.BucketsOf(NodeId(2)), (std::vector<BucketId>{BucketId(0), BucketId(1)}));
}

TEST(ShardMapApplyTest, SwitchThenCopyMoveLifecycle) {
  ShardMap map = Initial({1, 2}, 1);
  const BucketId b(0);
  const MoveId m(5);
  map = MustApply(
      map, ShardMapEdit().BeginTransition(b, m, Nodes({2}), TransitionMode::kSwitchThenCopy));
  EXPECT_EQ(map.Find(b)->transition->stage, TransitionStage::kPrepare);
  ExpectRejected(map, ShardMapEdit().AdvanceStage(b, m, TransitionStage::kCatchUp));
  ExpectRejected(map, ShardMapEdit().CommitTransition(b, m));  // not switched yet
  map = MustApply(map, ShardMapEdit().AdvanceStage(b, m, TransitionStage::kCopy));
  // Switched: the source still holds every write, so a lost destination can be rolled back.
  EXPECT_EQ(MustApply(map, ShardMapEdit().AbortTransition(b, m)).buckets()[0],
            Initial({1, 2}, 1).buckets()[0]);
  ExpectRejected(map, ShardMapEdit().CommitTransition(b, m));  // not sealed yet
  map = MustApply(map, ShardMapEdit().AdvanceStage(b, m, TransitionStage::kCatchUp));
  EXPECT_EQ(MustApply(map, ShardMapEdit().AbortTransition(b, m)).buckets()[0],
            Initial({1, 2}, 1).buckets()[0]);
  EXPECT_EQ(map.Find(b)->replicas, Nodes({1}));
  map = MustApply(map, ShardMapEdit().CommitTransition(b, m));
  ExpectRejected(map, ShardMapEdit().AbortTransition(b, m));  // committed
  map = MustApply(map, ShardMapEdit().AdvanceStage(b, m, TransitionStage::kCleanup));
  map = MustApply(map, ShardMapEdit().FinishTransition(b, m));
  EXPECT_EQ(map.Find(b)->replicas, Nodes({2}));
}

TEST(ShardMapApplyTest, AbortDropsTheTransitionAndKeepsTheSource) {
  const ShardMap start = Initial({1, 2}, 1);
  ShardMap map = MustApply(start, ShardMapEdit().BeginTransition(BucketId(0), MoveId(1), Nodes({2}),
                                                                 TransitionMode::kCopyThenSwitch));
  map = MustApply(map,
                  ShardMapEdit().AdvanceStage(BucketId(0), MoveId(1), TransitionStage::kCatchUp));
  ExpectRejected(map, ShardMapEdit().AbortTransition(BucketId(0), MoveId(2)));  // stale attempt
  map = MustApply(map, ShardMapEdit().AbortTransition(BucketId(0), MoveId(1)));
  EXPECT_EQ(map.buckets()[0], start.buckets()[0]);
}

TEST(ShardMapApplyTest, SplitAndMerge) {
  ShardMap map = Initial({1}, 1);
  map = MustApply(map, ShardMapEdit().SplitBucket(BucketId(0), uint64_t{1} << 63, BucketId(1)));
  ASSERT_EQ(map.buckets().size(), 2u);
  EXPECT_EQ(map.Lookup(Point(UINT64_MAX)).id, BucketId(1));
  ExpectRejected(map, ShardMapEdit().MergeBuckets(BucketId(1), BucketId(0)));    // wrong order
  ExpectRejected(map, ShardMapEdit().SplitBucket(BucketId(1), 5, BucketId(2)));  // outside
  ExpectRejected(map, ShardMapEdit().SplitBucket(BucketId(1), UINT64_MAX, BucketId(0)));
  map = MustApply(map, ShardMapEdit().MergeBuckets(BucketId(0), BucketId(1)));
  EXPECT_EQ(map.buckets()[0].range, BucketRange::Full());
}

TEST(ShardMapApplyTest, RuleOneMovingBucketsAreNeitherSplitNorMerged) {
  ShardMap map = Initial({1}, 2);
  map = MustApply(map, ShardMapEdit().AddNode(NodeId(2)).BeginTransition(
                           BucketId(0), MoveId(1), Nodes({2}), TransitionMode::kSwitchThenCopy));
  ExpectRejected(map, ShardMapEdit().MergeBuckets(BucketId(0), BucketId(1)));
  ExpectRejected(map, ShardMapEdit().SplitBucket(BucketId(0), 12345, BucketId(2)));
  map = MustApply(map, ShardMapEdit().AbortTransition(BucketId(0), MoveId(1)));
  map = MustApply(map, ShardMapEdit().MergeBuckets(BucketId(0), BucketId(1)));
  EXPECT_EQ(map.buckets().size(), 1u);
}

TEST(ShardMapApplyTest, RejectsEveryInvalidOperation) {
  ShardMap map = Initial({1, 2}, 2, 1);
  map = MustApply(map, ShardMapEdit().BeginTransition(BucketId(0), MoveId(1), Nodes({2}),
                                                      TransitionMode::kCopyThenSwitch));
  // Stale and future epochs.
  auto stale = ShardMapEdit(MapEpoch(1));
  stale.AddNode(NodeId(7));
  EXPECT_EQ(Apply(map, stale).status().code(), StatusCode::kFailedPrecondition);
  auto future = ShardMapEdit(MapEpoch(3));
  EXPECT_FALSE(Apply(map, future).ok());
  // Nodes.
  ExpectRejected(map, ShardMapEdit().AddNode(NodeId(1)));
  ExpectRejected(map, ShardMapEdit().RemoveNode(NodeId(9)));
  ExpectRejected(map, ShardMapEdit().RemoveNode(NodeId(2)));  // in a transition
  ExpectRejected(map, ShardMapEdit().SetNodeState(NodeId(9), NodeState::kLeaving));
  // Buckets: unknown ids, moving buckets (rule 1), merge of different replica sets.
  ExpectRejected(map, ShardMapEdit().SplitBucket(BucketId(9), 5, BucketId(10)));
  ExpectRejected(map, ShardMapEdit().SplitBucket(BucketId(0), 5, BucketId(10)));
  ExpectRejected(map, ShardMapEdit().MergeBuckets(BucketId(0), BucketId(1)));
  ExpectRejected(map, ShardMapEdit().MergeBuckets(BucketId(1), BucketId(9)));
  // Transitions: overlapping, duplicate move id, unknown node, bad destination, wrong move id.
  ExpectRejected(map, ShardMapEdit().BeginTransition(BucketId(0), MoveId(2), Nodes({1}),
                                                     TransitionMode::kCopyThenSwitch));
  ExpectRejected(map, ShardMapEdit().BeginTransition(BucketId(1), MoveId(1), Nodes({1}),
                                                     TransitionMode::kCopyThenSwitch));
  ExpectRejected(map, ShardMapEdit().BeginTransition(BucketId(1), MoveId(2), Nodes({9}),
                                                     TransitionMode::kCopyThenSwitch));
  ExpectRejected(map, ShardMapEdit().BeginTransition(BucketId(1), MoveId(2), Nodes({1, 2}),
                                                     TransitionMode::kCopyThenSwitch));
  ExpectRejected(map, ShardMapEdit().BeginTransition(BucketId(1), MoveId(2), {},
                                                     TransitionMode::kCopyThenSwitch));
  ExpectRejected(map, ShardMapEdit().BeginTransition(BucketId(1), MoveId(2), Nodes({2}),
                                                     TransitionMode::kCopyThenSwitch));
  ExpectRejected(map,
                 ShardMapEdit().AdvanceStage(BucketId(0), MoveId(2), TransitionStage::kCatchUp));
  ExpectRejected(map, ShardMapEdit().AdvanceStage(BucketId(0), MoveId(1),
                                                  TransitionStage::kPrepare));  // skips a stage
  ExpectRejected(map, ShardMapEdit().AdvanceStage(BucketId(1), MoveId(1),
                                                  TransitionStage::kCatchUp));  // not moving
  ExpectRejected(map,
                 ShardMapEdit().AdvanceStage(BucketId(0), MoveId(1), TransitionStage::kAborted));
  // Leaving nodes receive nothing.
  ShardMap leaving = MustApply(map, ShardMapEdit().SetNodeState(NodeId(1), NodeState::kLeaving));
  ExpectRejected(leaving, ShardMapEdit().BeginTransition(BucketId(1), MoveId(2), Nodes({1}),
                                                         TransitionMode::kCopyThenSwitch));
  // All or nothing: a valid operation followed by an invalid one changes nothing.
  ExpectRejected(map, ShardMapEdit().AddNode(NodeId(5)).AddNode(NodeId(5)));
}

TEST(ShardMapApplyTest, RemoveNodeDropsReplicasButNeverTheLastOne) {
  ShardMap map = Initial({1, 2, 3}, 3, 2);
  map = MustApply(map, ShardMapEdit().RemoveNode(NodeId(2)));
  for (const BucketPlacement& bucket : map.buckets()) EXPECT_FALSE(bucket.HasReplica(NodeId(2)));
  EXPECT_EQ(map.Find(BucketId(0))->replicas, Nodes({1}));     // under-replicated, to be repaired
  ExpectRejected(map, ShardMapEdit().RemoveNode(NodeId(1)));  // the only replica of b0
  ShardMap single = Initial({1}, 1);
  ExpectRejected(single, ShardMapEdit().RemoveNode(NodeId(1)));
}

// Random edits on random histories: Apply either rejects (leaving the map unchanged) or yields
// epoch + 1 and a map that satisfies every invariant.
RC_GTEST_PROP(ShardMapApplyProperty, EveryResultSatisfiesTheInvariants, ()) {
  ShardMap map =
      Initial({0, 1, 2}, *rc::gen::inRange<uint32_t>(1, 6), *rc::gen::inRange<uint32_t>(1, 3));
  const int steps = *rc::gen::inRange(1, 30);
  int accepted = 0;
  for (int i = 0; i < steps; ++i) {
    const std::string before = map.DebugString();
    const ShardMapEdit edit = *GenEdit(map.epoch());
    auto next = Apply(map, edit);
    RC_ASSERT(map.DebugString() == before);
    if (!next.ok()) continue;
    ++accepted;
    RC_ASSERT(next->CheckInvariants().ok());
    RC_ASSERT(next->epoch().value() == map.epoch().value() + 1);
    map = *std::move(next);
  }
  RC_TAG(accepted > 0 ? "some accepted" : "none accepted");
}

// A bucket's term is the epoch at which its primary was appointed: a commit that puts another
// node first, a split's upper half and a merge start a new term; a commit that keeps the
// primary, a split's lower half and every other stage keep it.
TEST(ShardMapApplyTest, TermsChangeWithThePrimary) {
  ShardMap map = Initial({1, 2, 3}, 2, 2);  // b0 [n1, n2], b1 [n2, n3]
  const BucketId b(0);
  EXPECT_EQ(map.Find(b)->term, Term(1));
  // Replace the backup: the primary stays, and so does the term.
  map = MustApply(map, ShardMapEdit().BeginTransition(b, MoveId(1), Nodes({1, 3}),
                                                      TransitionMode::kCopyThenSwitch));
  map = MustApply(map, ShardMapEdit().AdvanceStage(b, MoveId(1), TransitionStage::kCatchUp));
  map = MustApply(map, ShardMapEdit().AdvanceStage(b, MoveId(1), TransitionStage::kPrepare));
  map = MustApply(map, ShardMapEdit().CommitTransition(b, MoveId(1)));
  EXPECT_EQ(map.Find(b)->replicas, Nodes({1, 3}));
  EXPECT_EQ(map.Find(b)->term, Term(1));
  map = MustApply(map, ShardMapEdit().AdvanceStage(b, MoveId(1), TransitionStage::kCleanup));
  map = MustApply(map, ShardMapEdit().FinishTransition(b, MoveId(1)));
  // Another primary: the commit's epoch becomes the term.
  map = MustApply(map, ShardMapEdit().BeginTransition(b, MoveId(2), Nodes({3, 1}),
                                                      TransitionMode::kCopyThenSwitch));
  map = MustApply(map, ShardMapEdit().AdvanceStage(b, MoveId(2), TransitionStage::kCatchUp));
  map = MustApply(map, ShardMapEdit().AdvanceStage(b, MoveId(2), TransitionStage::kPrepare));
  EXPECT_EQ(map.Find(b)->term, Term(1));
  map = MustApply(map, ShardMapEdit().CommitTransition(b, MoveId(2)));
  const Term appointed(map.epoch().value());
  EXPECT_EQ(map.Find(b)->term, appointed);
  map = MustApply(map, ShardMapEdit().AdvanceStage(b, MoveId(2), TransitionStage::kCleanup));
  map = MustApply(map, ShardMapEdit().FinishTransition(b, MoveId(2)));
  EXPECT_EQ(map.Find(b)->term, appointed);
  // A split keeps the term in the lower half; the upper half starts a history of its own, and
  // so does their merge.
  const BucketRange range = map.Find(b)->range;
  map = MustApply(map, ShardMapEdit().SplitBucket(
                           b, range.begin() + (range.end() - range.begin()) / 2, BucketId(7)));
  EXPECT_EQ(map.Find(b)->term, appointed);
  EXPECT_EQ(map.Find(BucketId(7))->term, Term(map.epoch().value()));
  map = MustApply(map, ShardMapEdit().MergeBuckets(b, BucketId(7)));
  EXPECT_EQ(map.Find(b)->term, Term(map.epoch().value()));
  EXPECT_EQ(map.min_in_sync(), 2u);  // every edit keeps the floor
}

// RemoveReplica takes a backup out, never the primary, never below min_in_sync, and takes it out
// of the bucket's move too; PromoteReplica makes a backup the primary under a new term, drops the
// old primary, and waits for the bucket's move to end.
TEST(ShardMapApplyTest, ReplicaRemovalAndPromotion) {
  ShardMap map = Initial({1, 2, 3, 4}, 1, 3);  // b0 [n1, n2, n3], min_in_sync 2
  const BucketId b(0);
  ASSERT_EQ(map.min_in_sync(), 2u);
  ExpectRejected(map, ShardMapEdit().RemoveReplica(b, NodeId(1)));  // the primary
  ExpectRejected(map, ShardMapEdit().RemoveReplica(b, NodeId(4)));  // not a replica
  ExpectRejected(map, ShardMapEdit().RemoveReplica(BucketId(9), NodeId(2)));
  // Replacing backup n3 by n4; n2 then leaves: the move keeps going without it.
  map = MustApply(map, ShardMapEdit().BeginTransition(b, MoveId(1), Nodes({1, 2, 4}),
                                                      TransitionMode::kCopyThenSwitch));
  map = MustApply(map, ShardMapEdit().RemoveReplica(b, NodeId(2)));
  EXPECT_EQ(map.Find(b)->replicas, Nodes({1, 3}));
  ASSERT_TRUE(map.Find(b)->transition.has_value());
  EXPECT_EQ(map.Find(b)->transition->source, Nodes({1, 3}));
  EXPECT_EQ(map.Find(b)->transition->destination, Nodes({1, 4}));
  EXPECT_EQ(map.Find(b)->term, Term(1));
  // At the floor: n3 stays, unless it cannot catch up (DropReplica), which no floor holds back.
  ExpectRejected(map, ShardMapEdit().RemoveReplica(b, NodeId(3)));
  ExpectRejected(map, ShardMapEdit().DropReplica(b, NodeId(1)));  // never the primary
  EXPECT_EQ(MustApply(map, ShardMapEdit().DropReplica(b, NodeId(3))).Find(b)->replicas, Nodes({1}));
  // No promotion while moving; with the move aborted in the same edit, n3 takes over.
  ExpectRejected(map, ShardMapEdit().PromoteReplica(b, NodeId(3)));
  map = MustApply(map, ShardMapEdit().AbortTransition(b, MoveId(1)).PromoteReplica(b, NodeId(3)));
  EXPECT_EQ(map.Find(b)->replicas, Nodes({3}));
  EXPECT_EQ(map.Find(b)->term, Term(map.epoch().value()));
  EXPECT_FALSE(map.Find(b)->transition.has_value());
  ExpectRejected(map, ShardMapEdit().PromoteReplica(b, NodeId(3)));  // already the primary
}

// With several replicas a move changes one of them: it replaces one member, adds one copy or
// hands the primary over; switch-then-copy keeps the primary (replication.md §2 rules 11, 12).
TEST(ShardMapApplyTest, AReplicatedMoveChangesOneReplicaAtATime) {
  ShardMap map = Initial({1, 2, 3, 4, 5}, 1, 3);  // b0 [n1, n2, n3]
  const BucketId b(0);
  auto begin = [&](std::initializer_list<uint32_t> to, TransitionMode mode) {
    return ShardMapEdit().BeginTransition(b, MoveId(1), Nodes(to), mode);
  };
  constexpr auto kCopy = TransitionMode::kCopyThenSwitch;
  constexpr auto kSwitch = TransitionMode::kSwitchThenCopy;
  ExpectRejected(map, begin({1, 4, 5}, kCopy));  // two replaced
  ExpectRejected(map, begin({4, 5, 3}, kCopy));
  ExpectRejected(map, begin({1, 2}, kCopy));       // a shrink is RemoveReplica or SetReplication
  ExpectRejected(map, begin({2, 1, 4}, kSwitch));  // switch-then-copy of the primary
  MustApply(map, begin({1, 2, 4}, kCopy));         // a backup replaced
  MustApply(map, begin({1, 2, 4}, kSwitch));
  MustApply(map, begin({4, 2, 3}, kCopy));  // the primary replaced: a fenced handoff
  MustApply(map, begin({2, 1, 3}, kCopy));  // a handoff inside the set
  // Under-replicated: one copy added at a time.
  map = MustApply(map, ShardMapEdit().RemoveReplica(b, NodeId(3)));
  ExpectRejected(map, begin({1, 2, 4, 5}, kCopy));  // above K
  map = MustApply(map, begin({1, 2, 4}, kCopy));
  // Adding a copy keeps the primary and its term.
  const Term term = map.Find(b)->term;
  map = MustApply(map, ShardMapEdit()
                           .AdvanceStage(b, MoveId(1), TransitionStage::kCatchUp)
                           .AdvanceStage(b, MoveId(1), TransitionStage::kPrepare)
                           .CommitTransition(b, MoveId(1)));
  EXPECT_EQ(map.Find(b)->replicas, Nodes({1, 2, 4}));
  EXPECT_EQ(map.Find(b)->term, term);
}

// A backup removed from a move that replaces another member: the move now adds a copy.
TEST(ShardMapApplyTest, RemoveReplicaKeepsTheMoveItTakesPartIn) {
  ShardMap map = Initial({1, 2, 3, 4}, 1, 3);  // b0 [n1, n2, n3]
  const BucketId b(0);
  map = MustApply(map, ShardMapEdit().BeginTransition(b, MoveId(1), Nodes({1, 2, 4}),
                                                      TransitionMode::kCopyThenSwitch));
  map = MustApply(map, ShardMapEdit().RemoveReplica(b, NodeId(3)));
  EXPECT_EQ(map.Find(b)->replicas, Nodes({1, 2}));
  ASSERT_TRUE(map.Find(b)->transition.has_value());
  EXPECT_EQ(map.Find(b)->transition->destination, Nodes({1, 2, 4}));
}

// ForcePrimary names any member the only replica under a new term, never during a move.
TEST(ShardMapApplyTest, ForcePrimaryNamesTheOnlyCopy) {
  ShardMap map = Initial({1, 2, 3, 4}, 2, 3);
  const BucketId b(0);
  ExpectRejected(map, ShardMapEdit().ForcePrimary(b, NodeId(9)));   // not a member
  map = MustApply(map, ShardMapEdit().ForcePrimary(b, NodeId(4)));  // a copy outside the replicas
  EXPECT_EQ(map.Find(b)->replicas, Nodes({4}));
  EXPECT_EQ(map.Find(b)->term, Term(map.epoch().value()));
  map = MustApply(map, ShardMapEdit().BeginTransition(b, MoveId(1), Nodes({4, 1}),
                                                      TransitionMode::kCopyThenSwitch));
  ExpectRejected(map, ShardMapEdit().ForcePrimary(b, NodeId(1)));
}

// One check of a replication setting, in an operator's words, for the first map and for a change.
TEST(ShardMapApplyTest, ReplicationSettingsAreCheckedInOnePlace) {
  const Status too_many = CheckReplicationSetting(5, 0, 3);
  EXPECT_EQ(too_many.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(too_many.message(),
            "5 copies of every bucket (K = 5) need 5 active nodes, one per copy; the cluster has "
            "3, so K can be 1 to 3");
  EXPECT_EQ(CheckReplicationSetting(0, 0, 3).message(),
            "K = 0: every bucket needs at least one copy; the cluster has 3 active nodes, so K "
            "can be 1 to 3");
  EXPECT_EQ(CheckReplicationSetting(2, 3, 3).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckReplicationSetting(3, 3, 3).ok());
  EXPECT_TRUE(CheckReplicationSetting(1, 0, 1).ok());
  auto initial =
      ShardMap::Initial({.nodes = Nodes({1, 2}), .bucket_count = 4, .replication_factor = 3});
  ASSERT_FALSE(initial.ok());
  EXPECT_EQ(initial.status().message(), CheckReplicationSetting(3, 0, 2).message());
  initial = ShardMap::Initial(
      {.nodes = Nodes({1, 2, 3}), .bucket_count = 4, .replication_factor = 3, .min_in_sync = 4});
  EXPECT_EQ(initial.status().code(), StatusCode::kInvalidArgument);  // not an internal error
}

// SetReplication: bounds, no moves in flight, lowering K trims the last backups.
TEST(ShardMapApplyTest, SetReplicationChangesKAndTheFloor) {
  ShardMap map = Initial({1, 2, 3}, 3, 1);
  ExpectRejected(map, ShardMapEdit().SetReplication(4));  // more than the active nodes
  ExpectRejected(map, ShardMapEdit().SetReplication(0));
  ExpectRejected(map, ShardMapEdit().SetReplication(2, 3));  // floor above K
  map = MustApply(map, ShardMapEdit().SetReplication(3));
  EXPECT_EQ(map.replication_factor(), 3u);
  EXPECT_EQ(map.min_in_sync(), 2u);
  EXPECT_EQ(map.Find(BucketId(0))->replicas.size(), 1u);  // under-replicated until repaired
  map = MustApply(map, ShardMapEdit().BeginTransition(BucketId(0), MoveId(1), Nodes({1, 2}),
                                                      TransitionMode::kCopyThenSwitch));
  ExpectRejected(map, ShardMapEdit().SetReplication(1));  // a move is in flight
  map = MustApply(map, ShardMapEdit().AbortTransition(BucketId(0), MoveId(1)));
  map = MustApply(map, ShardMapEdit().SetReplication(3, 3));
  EXPECT_EQ(map.min_in_sync(), 3u);
  map = Initial({1, 2, 3}, 3, 3);
  map = MustApply(map, ShardMapEdit().SetReplication(2, 1));
  for (const BucketPlacement& bucket : map.buckets()) EXPECT_EQ(bucket.replicas.size(), 2u);
  EXPECT_EQ(map.min_in_sync(), 1u);
}

// BindStore binds once; ResetNode replaces the id and takes the node out of every bucket it
// does not hold alone, promoting the next replica under a new term where it was the primary.
TEST(ShardMapApplyTest, StoreBindingAndReset) {
  ShardMap map = Initial({1, 2, 3}, 3, 2);  // b0 [1,2] b1 [2,3] b2 [3,1]
  ExpectRejected(map, ShardMapEdit().BindStore(NodeId(1), 0));
  ExpectRejected(map, ShardMapEdit().BindStore(NodeId(9), 7));
  map = MustApply(map, ShardMapEdit().BindStore(NodeId(1), 7));
  EXPECT_EQ(map.FindNode(NodeId(1))->store_id, 7u);
  ExpectRejected(map, ShardMapEdit().BindStore(NodeId(1), 8));  // bound: that is a reset
  ExpectRejected(map, ShardMapEdit().ResetNode(NodeId(1), 7));  // the same store
  map = MustApply(map, ShardMapEdit().BeginTransition(BucketId(1), MoveId(1), Nodes({2, 1}),
                                                      TransitionMode::kCopyThenSwitch));
  map = MustApply(map, ShardMapEdit().ForcePrimary(BucketId(2), NodeId(1)));  // b2 [1] alone
  const Term before = map.Find(BucketId(1))->term;
  map = MustApply(map, ShardMapEdit().ResetNode(NodeId(1), 8));
  EXPECT_EQ(map.FindNode(NodeId(1))->store_id, 8u);
  EXPECT_EQ(map.Find(BucketId(0))->replicas, Nodes({2}));
  EXPECT_EQ(map.Find(BucketId(0))->term, Term(map.epoch().value()));  // the primary changed
  EXPECT_EQ(map.Find(BucketId(1))->replicas, Nodes({2, 3}));
  EXPECT_EQ(map.Find(BucketId(1))->term, before);
  EXPECT_FALSE(map.Find(BucketId(1))->transition.has_value());  // its move toward n1 aborted
  EXPECT_EQ(map.Find(BucketId(2))->replicas, Nodes({1}));       // the only copy stays listed
}

}  // namespace
}  // namespace shoal::cluster
