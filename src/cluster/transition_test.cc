#include "src/cluster/transition.h"

#include <gtest/gtest.h>

#include <array>
#include <set>

namespace shoal::cluster {
namespace {

constexpr std::array kStages = {
    TransitionStage::kCopy,      TransitionStage::kCatchUp, TransitionStage::kPrepare,
    TransitionStage::kCommitted, TransitionStage::kCleanup, TransitionStage::kDone,
    TransitionStage::kAborted,
};
constexpr std::array kModes = {TransitionMode::kCopyThenSwitch, TransitionMode::kSwitchThenCopy};

// FAILURE-PATTERNS.md #1: for every stage and mode, exactly one replica set may acknowledge a
// write for a key. A mirror receives the write too but never acknowledges on its own, and is
// never the acknowledger itself.
TEST(TransitionTest, ExactlyOneSetAcknowledgesWritesInEveryStage) {
  for (TransitionMode mode : kModes) {
    for (TransitionStage stage : kStages) {
      SCOPED_TRACE(std::string(ToString(stage)) + " / " + std::string(ToString(mode)));
      const WriteRoute route = WriteRouting(stage, mode);
      std::set<ReplicaRole> acknowledgers = {route.acknowledger};
      EXPECT_EQ(acknowledgers.size(), 1u);
      if (route.mirror.has_value()) {
        EXPECT_NE(*route.mirror, route.acknowledger);
      }
      // The set that serves reads first is the set that acknowledges writes: a read never
      // prefers a copy that may miss an acknowledged write.
      EXPECT_EQ(ReadRouting(stage, mode).first, route.acknowledger);
    }
  }
}

// The whole table, so that a change of routing is a deliberate change of this test.
TEST(TransitionTest, RoutingTable) {
  using enum TransitionStage;
  using enum ReplicaRole;
  struct Row {
    TransitionStage stage;
    TransitionMode mode;
    ReadRoute read;
    WriteRoute write;
  };
  const ReadRoute src{.first = kSource, .fallback = std::nullopt};
  const ReadRoute dst{.first = kDestination, .fallback = std::nullopt};
  const ReadRoute dst_then_src{.first = kDestination, .fallback = kSource};
  const WriteRoute w_src{
      .acknowledger = kSource, .mirror = std::nullopt, .admission = WriteAdmission::kServe};
  const WriteRoute w_src_fenced{
      .acknowledger = kSource, .mirror = std::nullopt, .admission = WriteAdmission::kQueue};
  const WriteRoute w_dst{
      .acknowledger = kDestination, .mirror = std::nullopt, .admission = WriteAdmission::kServe};
  const WriteRoute w_dst_mirror{
      .acknowledger = kDestination, .mirror = kSource, .admission = WriteAdmission::kServe};
  const WriteRoute w_dst_queued{
      .acknowledger = kDestination, .mirror = std::nullopt, .admission = WriteAdmission::kQueue};
  const TransitionMode cts = TransitionMode::kCopyThenSwitch;
  const TransitionMode stc = TransitionMode::kSwitchThenCopy;
  const Row rows[] = {
      {kCopy, cts, src, w_src},
      {kCatchUp, cts, src, w_src},
      {kPrepare, cts, src, w_src_fenced},
      {kCommitted, cts, dst, w_dst},
      {kCleanup, cts, dst, w_dst},
      {kDone, cts, dst, w_dst},
      {kAborted, cts, src, w_src},
      {kPrepare, stc, src, w_src_fenced},
      {kCopy, stc, dst_then_src, w_dst_mirror},
      {kCatchUp, stc, dst_then_src, w_dst_queued},
      {kCommitted, stc, dst, w_dst},
      {kCleanup, stc, dst, w_dst},
      {kDone, stc, dst, w_dst},
      {kAborted, stc, src, w_src},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(ToString(row.stage)) + " / " + std::string(ToString(row.mode)));
    EXPECT_EQ(ReadRouting(row.stage, row.mode), row.read);
    EXPECT_EQ(WriteRouting(row.stage, row.mode), row.write);
  }
}

// Walking NextStage from the first stage visits the documented sequence, ownership flips once
// (at the commit for copy-then-switch, at the start for switch-then-copy), and abort is allowed
// exactly before the commit.
TEST(TransitionTest, StageSequences) {
  using enum TransitionStage;
  const std::vector<TransitionStage> cts = {kCopy, kCatchUp, kPrepare, kCommitted, kCleanup, kDone};
  const std::vector<TransitionStage> stc = {kPrepare, kCopy, kCatchUp, kCommitted, kCleanup, kDone};
  for (TransitionMode mode : kModes) {
    const auto& expected = mode == TransitionMode::kCopyThenSwitch ? cts : stc;
    std::vector<TransitionStage> walked;
    std::optional<TransitionStage> stage = FirstStage(mode);
    while (stage.has_value()) {
      walked.push_back(*stage);
      // A failed step aborts only before ownership moves to the destination; a rollback is safe
      // at every stage before the commit.
      EXPECT_EQ(
          AbortsOnFailure(*stage, mode),
          WriteRouting(*stage, mode).acknowledger == ReplicaRole::kSource && !IsTerminal(*stage));
      EXPECT_EQ(CanAbort(*stage, mode), !IsCommitted(*stage) && !IsTerminal(*stage));
      EXPECT_EQ(IsStorable(*stage, mode), *stage != kDone);
      stage = NextStage(*stage, mode);
    }
    EXPECT_EQ(walked, expected);
    int flips = 0;
    ReplicaRole owner = ReplicaRole::kSource;
    for (TransitionStage s : walked) {
      const ReplicaRole now = WriteRouting(s, mode).acknowledger;
      if (now != owner) ++flips;
      owner = now;
    }
    EXPECT_EQ(flips, 1);
    EXPECT_EQ(owner, ReplicaRole::kDestination);
  }
  EXPECT_FALSE(NextStage(kAborted, TransitionMode::kCopyThenSwitch).has_value());
  EXPECT_TRUE(IsTerminal(kAborted));
  EXPECT_FALSE(IsStorable(kAborted, TransitionMode::kSwitchThenCopy));
}

TEST(TransitionTest, IncomingOutgoingAndDebugString) {
  const BucketTransition t{.move = MoveId(7),
                           .source = {NodeId(1), NodeId(2)},
                           .destination = {NodeId(2), NodeId(3)},
                           .stage = TransitionStage::kCatchUp,
                           .mode = TransitionMode::kCopyThenSwitch};
  EXPECT_EQ(t.Incoming(), std::vector<NodeId>{NodeId(3)});
  EXPECT_EQ(t.Outgoing(), std::vector<NodeId>{NodeId(1)});
  EXPECT_TRUE(t.Involves(NodeId(1)));
  EXPECT_FALSE(t.Involves(NodeId(4)));
  EXPECT_EQ(&t.Replicas(ReplicaRole::kDestination), &t.destination);
  EXPECT_EQ(t.DebugString(), "m7{copy-then-switch [n1,n2]->[n2,n3] catch-up}");
}

}  // namespace
}  // namespace shoal::cluster
