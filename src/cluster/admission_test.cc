#include "src/cluster/admission.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

namespace shoal::cluster {
namespace {

// Every stage a map may store, both modes.
constexpr std::array kStages = {TransitionStage::kCopy, TransitionStage::kCatchUp,
                                TransitionStage::kPrepare, TransitionStage::kCommitted,
                                TransitionStage::kCleanup};
constexpr std::array kModes = {TransitionMode::kCopyThenSwitch, TransitionMode::kSwitchThenCopy};
constexpr std::array kAccesses = {Access::kRead, Access::kWrite, Access::kReadAnyReplica};

constexpr NodeId kSourceNode(1);
constexpr NodeId kDestinationNode(2);
constexpr NodeId kBothNode(3);  // in the source and the destination set (K > 1 overlaps)
constexpr NodeId kStranger(4);
constexpr std::array kNodes = {kSourceNode, kDestinationNode, kBothNode, kStranger};
constexpr MoveId kMove(7);
constexpr MoveId kOtherMove(8);

BucketPlacement Moving(TransitionStage stage, TransitionMode mode) {
  BucketPlacement bucket;
  bucket.id = BucketId(0);
  // The stable replicas are the source until the commit and the destination from then on.
  bucket.replicas = IsCommitted(stage) ? std::vector<NodeId>{kDestinationNode, kBothNode}
                                       : std::vector<NodeId>{kSourceNode, kBothNode};
  bucket.transition = BucketTransition{.move = kMove,
                                       .source = {kSourceNode, kBothNode},
                                       .destination = {kDestinationNode, kBothNode},
                                       .stage = stage,
                                       .mode = mode};
  return bucket;
}

BucketPlacement Stable() {
  BucketPlacement bucket;
  bucket.id = BucketId(0);
  bucket.replicas = {kSourceNode};
  return bucket;
}

// Primary kSourceNode, backup kBothNode.
BucketPlacement StableReplicated() {
  BucketPlacement bucket = Stable();
  bucket.replicas = {kSourceNode, kBothNode};
  return bucket;
}

// Every local record a node may hold: none, one of another move, and every flag of this move.
std::vector<std::optional<LocalMoveState>> LocalStates() {
  std::vector<std::optional<LocalMoveState>> states = {
      std::nullopt, LocalMoveState{.move = kOtherMove, .fenced = true, .sealed = true}};
  for (bool fenced : {false, true}) {
    for (bool sealed : {false, true}) {
      states.push_back(LocalMoveState{.move = kMove, .fenced = fenced, .sealed = sealed});
    }
  }
  return states;
}

constexpr std::array<std::optional<MoveId>, 3> kVia = {std::nullopt, kMove, kOtherMove};

bool In(const std::vector<NodeId>& nodes, NodeId node) {
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

// The rules of admission.h stated case by case, as a storage node decides them, independently
// of the routing table: the oracle Admit must agree with on every input.
Admission CaseByCase(const BucketPlacement& bucket, NodeId self,
                     const std::optional<LocalMoveState>& local, Access access,
                     std::optional<MoveId> via_move) {
  if (access == Access::kReadAnyReplica) {
    if (via_move.has_value()) return Admission::kWrongShard;
    if (In(bucket.replicas, self)) return Admission::kServe;
    access = Access::kRead;
  }
  if (!bucket.transition.has_value()) {
    if (via_move.has_value()) return Admission::kWrongShard;
    return bucket.replicas.front() == self ? Admission::kServe : Admission::kWrongShard;
  }
  const auto& t = *bucket.transition;
  // Only a set's primary takes latest reads, writes and forwarded requests.
  const bool source = t.source.front() == self;
  const bool destination = t.destination.front() == self;
  const bool switched = t.mode == TransitionMode::kSwitchThenCopy &&
                        (t.stage == TransitionStage::kCopy || t.stage == TransitionStage::kCatchUp);
  const bool ours = local.has_value() && local->move == t.move;
  if (via_move.has_value()) {
    if (!source || t.move != *via_move) return Admission::kWrongShard;
    if (switched) {
      if (access == Access::kRead) return Admission::kServe;
      const bool sealed = t.stage == TransitionStage::kCatchUp || (ours && local->sealed);
      return sealed ? Admission::kWrongShard : Admission::kServe;
    }
    return t.stage == TransitionStage::kPrepare ? Admission::kQueue : Admission::kWrongShard;
  }
  if (IsCommitted(t.stage)) return destination ? Admission::kServe : Admission::kWrongShard;
  if (switched) {
    if (!destination) return Admission::kWrongShard;
    if (t.stage == TransitionStage::kCatchUp && access == Access::kWrite) return Admission::kQueue;
    return Admission::kServeViaSource;
  }
  if (source) {
    if (t.stage == TransitionStage::kPrepare) return Admission::kQueue;
    if (ours && local->fenced) return Admission::kQueue;
    return Admission::kServe;
  }
  return destination ? Admission::kNotYet : Admission::kWrongShard;
}

std::string Describe(const BucketPlacement& bucket, NodeId self,
                     const std::optional<LocalMoveState>& local, Access access,
                     std::optional<MoveId> via) {
  return fmt::format(
      "{} self={} local={} access={} via={}", bucket.DebugString(), self.DebugString(),
      local.has_value() ? fmt::format("{}{}{}", local->move.value(), local->fenced ? " fenced" : "",
                                      local->sealed ? " sealed" : "")
                        : std::string("none"),
      ToString(access), via.has_value() ? std::to_string(via->value()) : "none");
}

// Every stage × mode × role of the node × access × forwarding × local record, and a bucket
// with no move: the table-driven Admit decides as the case-by-case rules do.
TEST(AdmissionTest, AgreesWithTheCaseByCaseRulesOnEveryInput) {
  std::vector<BucketPlacement> buckets = {Stable(), StableReplicated()};
  for (TransitionMode mode : kModes) {
    for (TransitionStage stage : kStages) buckets.push_back(Moving(stage, mode));
  }
  int cases = 0;
  for (const BucketPlacement& bucket : buckets) {
    for (NodeId self : kNodes) {
      for (const auto& local : LocalStates()) {
        for (Access access : kAccesses) {
          for (const auto& via : kVia) {
            ++cases;
            EXPECT_EQ(Admit(bucket, self, local, access, via),
                      CaseByCase(bucket, self, local, access, via))
                << Describe(bucket, self, local, access, via);
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 12 * 4 * 6 * 3 * 3);
}

// FAILURE-PATTERNS.md #1 at the node: in every stage and mode, the nodes that admit a client's
// write all belong to the one acknowledging set of the table, and a node of the other set
// never admits one.
TEST(AdmissionTest, OnlyTheAcknowledgingSetAdmitsAClientWrite) {
  for (TransitionMode mode : kModes) {
    for (TransitionStage stage : kStages) {
      const BucketPlacement bucket = Moving(stage, mode);
      const auto& acknowledgers =
          bucket.transition->Replicas(WriteRouting(stage, mode).acknowledger);
      for (NodeId self : kNodes) {
        for (const auto& local : LocalStates()) {
          SCOPED_TRACE(Describe(bucket, self, local, Access::kWrite, std::nullopt));
          if (Admits(Admit(bucket, self, local, Access::kWrite, std::nullopt))) {
            EXPECT_TRUE(In(acknowledgers, self));
          }
        }
      }
    }
  }
}

// A forwarded write is applied only where the acknowledger itself serves writes through the
// source (a write mirror exists), and never by a sealed source.
TEST(AdmissionTest, AForwardedWriteIsAdmittedOnlyWhileTheAcknowledgerMirrors) {
  for (TransitionMode mode : kModes) {
    for (TransitionStage stage : kStages) {
      const BucketPlacement bucket = Moving(stage, mode);
      const Admission at_acknowledger =
          Admit(bucket, kDestinationNode, std::nullopt, Access::kWrite, std::nullopt);
      for (NodeId self : kNodes) {
        for (const auto& local : LocalStates()) {
          SCOPED_TRACE(Describe(bucket, self, local, Access::kWrite, kMove));
          const Admission forwarded = Admit(bucket, self, local, Access::kWrite, kMove);
          if (!Admits(forwarded)) continue;
          EXPECT_EQ(at_acknowledger, Admission::kServeViaSource);
          EXPECT_TRUE(In(bucket.transition->source, self));
          EXPECT_FALSE(local.has_value() && local->move == kMove && local->sealed);
        }
      }
    }
  }
}

// The client and the node agree: the owner a client routes a request to (OwnerOf, the primary
// of the table's acknowledging set) never answers WRONG_SHARD or "not yet" at the same map;
// it serves the request or holds it.
TEST(AdmissionTest, TheClientsOwnerNeverRefusesAtTheSameMap) {
  std::vector<BucketPlacement> buckets = {Stable(), StableReplicated()};
  for (TransitionMode mode : kModes) {
    for (TransitionStage stage : kStages) buckets.push_back(Moving(stage, mode));
  }
  for (const BucketPlacement& bucket : buckets) {
    const NodeId owner = OwnerOf(bucket);
    for (Access access : kAccesses) {
      SCOPED_TRACE(Describe(bucket, owner, std::nullopt, access, std::nullopt));
      const Admission admission = Admit(bucket, owner, std::nullopt, access, std::nullopt);
      EXPECT_NE(admission, Admission::kWrongShard);
      EXPECT_NE(admission, Admission::kNotYet);
    }
  }
}

// Reads: at most one set answers a client's read from its own store, and a node that serves
// through the source is the destination of a move whose table names the source as fallback.
TEST(AdmissionTest, OneSetAnswersAClientRead) {
  for (TransitionMode mode : kModes) {
    for (TransitionStage stage : kStages) {
      const BucketPlacement bucket = Moving(stage, mode);
      const ReadRoute route = ReadRouting(stage, mode);
      for (NodeId self : kNodes) {
        SCOPED_TRACE(Describe(bucket, self, std::nullopt, Access::kRead, std::nullopt));
        const Admission admission = Admit(bucket, self, std::nullopt, Access::kRead, std::nullopt);
        if (Admits(admission)) {
          EXPECT_TRUE(In(bucket.transition->Replicas(route.first), self));
        }
        if (admission == Admission::kServeViaSource) {
          EXPECT_EQ(route.first, ReplicaRole::kDestination);
          EXPECT_EQ(route.fallback, ReplicaRole::kSource);
        }
      }
    }
  }
}

// A fenced source holds reads as well as writes: once the commit lands the destination accepts
// writes the source would not see.
TEST(AdmissionTest, AFencedSourceHoldsReadsAndWrites) {
  const BucketPlacement copying = Moving(TransitionStage::kCopy, TransitionMode::kCopyThenSwitch);
  const LocalMoveState fenced{.move = kMove, .fenced = true, .sealed = false};
  // (A read that accepts any replica may be stale and is not held.)
  for (Access access : {Access::kRead, Access::kWrite}) {
    EXPECT_EQ(Admit(copying, kSourceNode, fenced, access, std::nullopt), Admission::kQueue);
    EXPECT_EQ(Admit(copying, kSourceNode, std::nullopt, access, std::nullopt), Admission::kServe);
    for (TransitionMode mode : kModes) {
      EXPECT_EQ(Admit(Moving(TransitionStage::kPrepare, mode), kSourceNode, std::nullopt, access,
                      std::nullopt),
                Admission::kQueue);
    }
  }
  // A record of another move does not fence this one.
  const LocalMoveState other{.move = kOtherMove, .fenced = true, .sealed = true};
  EXPECT_EQ(Admit(copying, kSourceNode, other, Access::kWrite, std::nullopt), Admission::kServe);
}

// A backup of a replicated bucket takes neither writes nor latest reads, in every stage; a read
// that accepts any replica is served by every stable replica and never by a copy being built.
TEST(AdmissionTest, BackupsServeOnlyReadsThatAcceptAnyReplica) {
  std::vector<BucketPlacement> buckets = {StableReplicated()};
  for (TransitionMode mode : kModes) {
    for (TransitionStage stage : kStages) buckets.push_back(Moving(stage, mode));
  }
  for (const BucketPlacement& bucket : buckets) {
    for (Access access : {Access::kRead, Access::kWrite}) {
      SCOPED_TRACE(Describe(bucket, kBothNode, std::nullopt, access, std::nullopt));
      EXPECT_FALSE(Admits(Admit(bucket, kBothNode, std::nullopt, access, std::nullopt)));
    }
    for (NodeId self : kNodes) {
      SCOPED_TRACE(Describe(bucket, self, std::nullopt, Access::kReadAnyReplica, std::nullopt));
      const Admission any =
          Admit(bucket, self, std::nullopt, Access::kReadAnyReplica, std::nullopt);
      if (In(bucket.replicas, self)) {
        EXPECT_EQ(any, Admission::kServe);
      } else {
        EXPECT_EQ(any, Admit(bucket, self, std::nullopt, Access::kRead, std::nullopt));
      }
      EXPECT_EQ(Admit(bucket, self, std::nullopt, Access::kReadAnyReplica, kMove),
                Admission::kWrongShard);
    }
  }
}

}  // namespace
}  // namespace shoal::cluster
