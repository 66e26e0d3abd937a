// Re-replication in an embedded cluster (docs/design/replication.md §6; paper 001 §3.2 rule 2):
// K = 3 copies of every bucket while a writer updates every document in rounds. A bucket that
// lost a copy gets it back by a move that adds one, with the primary as the data source: the new
// copy ingests the primary's snapshot, catches up from its log, and at the fence takes the
// primary's position and term history, so that it joins the replication stream where the fence
// left it; handoffs then give the node its share of primaries back. A backup on a node that
// stays down is replaced on a live node. The primary crashing while a copy is built ends that
// move with the failover, and the copy is built again from the new primary. In every case writes go
// on, no acknowledged write is lost, and once the writer stops every copy of a bucket is equal to
// its primary's.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "src/coordinator/coordinator.h"
#include "tests/support/coordinator_test_fixture.h"

namespace shoal::coordinator {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fixture

constexpr NodeId kN4{4};

class ReplicationRepairTest : public CoordinatorTest {
 protected:
  ReplicationRepairTest() { replication_factor_ = 3; }

  // Every node of the map is the primary of as many buckets as any other, give or take one.
  bool PrimariesWithinOne() {
    std::map<NodeId, size_t> primaries;
    for (const auto& node : map()->nodes()) primaries[node.id] = 0;
    for (const auto& bucket : map()->buckets()) ++primaries[bucket.replicas.front()];
    const auto [low, high] =
        std::minmax_element(primaries.begin(), primaries.end(),
                            [](const auto& a, const auto& b) { return a.second < b.second; });
    return high->second - low->second <= 1;
  }
};

TEST_F(ReplicationRepairTest, ABackupLostWithItsNodeIsRebuiltWhenTheNodeReturns) {
  Run(/*auto_balance=*/true, [&] {
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    ASSERT_TRUE(cluster_->CrashNode(kN3).ok());
    ASSERT_TRUE(WaitFor([&] { return !Holds(kN3); }, 20 * kSecond));
    ExpectWritesGoOn(*w);
    ASSERT_TRUE(cluster_->StartNode(kN3).ok());
    const Micros back_at = sim_.Now();
    ASSERT_TRUE(WaitFor([&] { return FullyReplicated(); }, 30 * kSecond));
    std::printf("node back to K copies of every bucket: %lld ms\n",
                static_cast<long long>((sim_.Now() - back_at) / kMs));
    EXPECT_GE(coordinator().progress().committed, map()->buckets().size());
    // n3's primaries failed over to n1 and n2: handoffs give it its share back.
    ASSERT_TRUE(WaitFor([&] { return PrimariesWithinOne() && FullyReplicated(); }, 30 * kSecond));
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
    ExpectCopiesEqual();
  });
}

TEST_F(ReplicationRepairTest, ABackupOnANodeThatStaysDownIsReplacedOnALiveNode) {
  Run(/*auto_balance=*/true, [&] {
    ASSERT_TRUE(cluster_->AddNode(kN4).ok());
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    // Copies spread over four nodes; then n3 dies for good.
    ASSERT_TRUE(WaitFor([&] { return Holds(kN4) && FullyReplicated(); }, 30 * kSecond));
    ASSERT_TRUE(cluster_->CrashNode(kN3).ok());
    ASSERT_TRUE(WaitFor([&] { return !Holds(kN3) && FullyReplicated(); }, 30 * kSecond));
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
    ExpectCopiesEqual();
  });
}

// Two empty nodes join a K = 3 cluster: copies move to them until the balancer finds nothing
// more to do, and handoffs even out the primaries. A step of Algorithm 2 that moves a primary's
// copy starts with a handoff to a backup that stays (§7); skipping it instead left the balancer
// asking for the same step every round, with copies uneven and no handoff ever planned.
TEST_F(ReplicationRepairTest, JoiningNodesGetTheirShareOfCopiesAndPrimaries) {
  constexpr NodeId kN5{5};
  Run(/*auto_balance=*/true, [&] {
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    ASSERT_TRUE(cluster_->AddNode(kN4).ok());
    ASSERT_TRUE(cluster_->AddNode(kN5).ok());
    const Micros joined_at = sim_.Now();
    ASSERT_TRUE(WaitFor(
        [&] {
          return Holds(kN4) && Holds(kN5) && FullyReplicated() &&
                 coordinator().Balanced().value_or(false);
        },
        15 * kSecond));
    EXPECT_TRUE(PrimariesWithinOne());
    std::printf("balanced %lld ms after the joins\n",
                static_cast<long long>((sim_.Now() - joined_at) / kMs));
    std::map<NodeId, size_t> copies;
    for (const auto& bucket : map()->buckets()) {
      for (NodeId node : bucket.replicas) ++copies[node];
    }
    for (const auto& [node, count] : copies) {
      std::printf("%s holds %zu copies\n", node.DebugString().c_str(), count);
    }
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
    ExpectCopiesEqual();
  });
}

// The bucket's primary dies once the new copy holds the bucket's data, before its catch-up: after
// it ingested the primary's snapshot or resumed the copy it held from the primary's log (§6.1).
// The failover aborts the move in the edit that promotes a backup, and the copy is built again
// from the new primary.
TEST_F(ReplicationRepairTest, APrimaryCrashedWhileACopyIsBuiltEndsTheMoveAndTheCopyIsRebuilt) {
  bool crashed = false;
  NodeId victim;
  sim_.SetChaosHook([&](const Address& process, std::string_view name) {
    if (crashed || process != Address::Coordinator() ||
        (name != "coordinator.after_ingest" && name != "coordinator.after_resume")) {
      return false;
    }
    for (const auto& bucket : map()->buckets()) {
      if (bucket.transition.has_value()) victim = bucket.replicas.front();
    }
    crashed = true;
    sim_.Spawn(Address::Client(3), "crash-primary", [&] {
      (void)cluster_->CrashNode(victim);
      if (sim_.Sleep(50 * kMs).ok()) (void)cluster_->StartNode(victim);
    });
    return false;
  });
  Run(/*auto_balance=*/true, [&] {
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    ASSERT_TRUE(cluster_->CrashNode(kN3).ok());
    ASSERT_TRUE(WaitFor([&] { return !Holds(kN3); }, 20 * kSecond));
    ASSERT_TRUE(cluster_->StartNode(kN3).ok());
    ASSERT_TRUE(WaitFor([&] { return crashed; }, 20 * kSecond));
    ASSERT_TRUE(WaitFor([&] { return FullyReplicated(); }, 60 * kSecond));
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
    ExpectCopiesEqual();
  });
  sim_.SetChaosHook(nullptr);
}

// Decommission at K = 3 (paper 001 §3.3; docs/design/replication.md §7): the leaving node first
// hands each bucket it is the primary of to a backup in sync (a fenced handoff under a new
// term, no data moved), then its copies move to the other nodes, and it leaves the map.
TEST_F(ReplicationRepairTest, ALeavingNodeHandsItsPrimariesOverAndItsCopiesMove) {
  Run(/*auto_balance=*/true, [&] {
    ASSERT_TRUE(cluster_->AddNode(kN4).ok());
    ASSERT_TRUE(WaitFor([&] { return Holds(kN4) && FullyReplicated(); }, 30 * kSecond));
    std::map<BucketId, Term> led;
    for (const auto& bucket : map()->buckets()) {
      if (bucket.replicas.front() == kN1) led[bucket.id] = bucket.term;
    }
    ASSERT_FALSE(led.empty());
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    ASSERT_TRUE(Admin([](Coordinator& c) { return c.RemoveNode(kN1); }).ok());
    ASSERT_TRUE(WaitFor([&] { return !map()->HasNode(kN1); }, 60 * kSecond));
    // Handoffs may still even out the primaries of the three nodes left.
    ASSERT_TRUE(WaitFor([&] { return FullyReplicated(); }, 30 * kSecond));
    for (const auto& [bucket, term] : led) {
      EXPECT_GT(map()->Find(bucket)->term, term) << bucket.DebugString();
    }
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
    ExpectCopiesEqual();
  });
}

// An operator's move at K = 3: a copy is added to a bucket that has fewer than K, and any other
// request names what is not supported with a clear error.
TEST_F(ReplicationRepairTest, AnOperatorMoveAddsACopyOnlyWhereOneIsMissing) {
  Run(/*auto_balance=*/false, [&] {
    const BucketId bucket = map()->buckets().front().id;
    const Status full = Admin([&](Coordinator& c) { return c.MoveBucket(bucket, kN1); });
    EXPECT_EQ(full.code(), StatusCode::kFailedPrecondition) << full;
    ASSERT_TRUE(cluster_->CrashNode(kN3).ok());
    ASSERT_TRUE(WaitFor([&] { return !Holds(kN3); }, 20 * kSecond));
    ASSERT_TRUE(cluster_->StartNode(kN3).ok());
    ASSERT_TRUE(Admin([&](Coordinator& c) { return c.MoveBucket(bucket, kN3); }).ok());
    EXPECT_TRUE(map()->Find(bucket)->HasReplica(kN3));
    EXPECT_EQ(map()->Find(bucket)->replicas.size(), 3u);
  });
}

// K changes online (`shoal replicas --set K`): raised from 1 to 3 with a floor of one copy while
// the copies are rebuilt, then the default floor (2); lowered to 2, which drops the last backup
// of every bucket in the same edit, and its data on that node before the call returns. Writes go
// on throughout.
TEST_F(ReplicationRepairTest, KIsRaisedAndLoweredOnline) {
  replication_factor_ = 1;
  Run(/*auto_balance=*/true, [&] {
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    ASSERT_TRUE(Admin([](Coordinator& c) { return c.SetReplication(3, 1); }).ok());
    EXPECT_EQ(map()->replication_factor(), 3u);
    EXPECT_EQ(map()->min_in_sync(), 1u);
    ASSERT_TRUE(WaitFor([&] { return FullyReplicated(); }, 60 * kSecond));
    ASSERT_TRUE(Admin([](Coordinator& c) { return c.SetReplication(3, 0); }).ok());
    EXPECT_EQ(map()->min_in_sync(), 2u);
    ExpectWritesGoOn(*w);
    ASSERT_TRUE(Admin([](Coordinator& c) { return c.SetReplication(2, 0); }).ok());
    // Every bucket has 2 copies at once; the balancer may then even out the copies per node.
    // The trimmed copy holds nothing any more (a node a move adds a copy to is not checked).
    for (const auto& bucket : map()->buckets()) {
      EXPECT_EQ(bucket.replicas.size(), 2u) << bucket.DebugString();
      if (bucket.transition.has_value()) continue;
      for (NodeId node : {kN1, kN2, kN3}) {
        if (bucket.HasReplica(node)) continue;
        auto stats = cluster_->node(node)->store()->ComputeStats(RangeOf(bucket));
        ASSERT_TRUE(stats.ok()) << stats.status();
        EXPECT_EQ(stats->documents + stats->tombstones, 0u)
            << bucket.id.DebugString() << " on " << node.DebugString();
      }
    }
    ExpectWritesGoOn(*w);
    ASSERT_TRUE(WaitFor([&] { return FullyReplicated(); }, 60 * kSecond));
    const Status too_many = Admin([](Coordinator& c) { return c.SetReplication(4, 0); });
    EXPECT_EQ(too_many.code(), StatusCode::kInvalidArgument) << too_many;
    EXPECT_EQ(map()->replication_factor(), 2u);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
    ExpectCopiesEqual();
  });
}

// A floor the copies cannot meet yet (K raised from 1 to 3 with the default floor, 2) waits for
// them: the change commits the floor every bucket meets (one copy), so writes go on while the
// copies are built, and the coordinator raises it to 2 once they are there, with no second call,
// here after a coordinator crash in the middle (the pending floor is durable).
TEST_F(ReplicationRepairTest, AFloorTheCopiesCannotMeetYetWaitsForThem) {
  replication_factor_ = 1;
  Run(/*auto_balance=*/true, [&] {
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    ASSERT_TRUE(Admin([](Coordinator& c) { return c.SetReplication(3, 0); }).ok());
    EXPECT_EQ(map()->replication_factor(), 3u);
    EXPECT_EQ(map()->min_in_sync(), 1u);
    EXPECT_EQ(coordinator().pending_min_in_sync(), 2u);  // what `shoal status` shows
    ExpectWritesGoOn(*w);
    cluster_->CrashCoordinator();
    ASSERT_TRUE(cluster_->StartCoordinator().ok());
    ASSERT_TRUE(WaitFor([&] { return coordinator().recovered(); }));
    EXPECT_EQ(map()->min_in_sync(), 1u) << "the copies were built before the crash";
    EXPECT_EQ(coordinator().pending_min_in_sync(), 2u) << "the record is durable";
    ASSERT_TRUE(
        WaitFor([&] { return FullyReplicated() && map()->min_in_sync() == 2; }, 60 * kSecond))
        << map()->DebugString();
    EXPECT_EQ(coordinator().pending_min_in_sync(), 0u);
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
    ExpectCopiesEqual();
  });
}

// A node whose leaving would leave fewer active nodes than K is refused, and nothing changes:
// its copies would have nowhere to go, and it would stay leaving for good.
TEST_F(ReplicationRepairTest, ANodeIsNotRemovedBelowKActiveNodes) {
  Run(/*auto_balance=*/true, [&] {
    const cluster::ShardMapPtr before = map();
    const Status refused = Admin([](Coordinator& c) { return c.RemoveNode(kN2); });
    EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused;
    EXPECT_NE(std::string(refused.message()).find("add a node first, or lower K"),
              std::string::npos)
        << refused;
    EXPECT_EQ(map()->epoch(), before->epoch());
    EXPECT_EQ(map()->FindNode(kN2)->state, cluster::NodeState::kActive);
    // The preview (`shoal plan --remove`) refuses it in the same words.
    const auto plan = coordinator().Plan(std::nullopt, kN2);
    EXPECT_EQ(plan.status().code(), StatusCode::kFailedPrecondition) << plan.status();
    EXPECT_EQ(plan.status().message(), refused.message());
    // With a fourth node it may leave.
    ASSERT_TRUE(cluster_->AddNode(kN4).ok());
    ASSERT_TRUE(WaitFor([&] { return Holds(kN4) && FullyReplicated(); }, 30 * kSecond));
    EXPECT_TRUE(Admin([](Coordinator& c) { return c.RemoveNode(kN2); }).ok());
  });
}

// Two nodes leave that together hold every copy of some buckets (K = 2, four nodes): those
// buckets' copies go to the nodes that stay, one at a time, the primary handed to a staying copy
// first; the leaving nodes never hand a primary to each other for good, and the other buckets'
// drains and repairs are not held up. Writes go on; nothing acknowledged is lost.
TEST_F(ReplicationRepairTest, TwoLeavingNodesHoldingEveryCopyOfABucketDrain) {
  replication_factor_ = 2;
  Run(/*auto_balance=*/true, [&] {
    ASSERT_TRUE(cluster_->AddNode(kN4).ok());
    ASSERT_TRUE(WaitFor([&] { return Holds(kN4) && FullyReplicated(); }, 30 * kSecond));
    // Two nodes that share a bucket.
    std::vector<NodeId> pair;
    for (const auto& bucket : map()->buckets()) {
      if (bucket.replicas.size() == 2) {
        pair = bucket.replicas;
        break;
      }
    }
    ASSERT_EQ(pair.size(), 2u) << map()->DebugString();
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    ASSERT_TRUE(Admin([&](Coordinator& c) { return c.RemoveNode(pair[0]); }).ok());
    ASSERT_TRUE(Admin([&](Coordinator& c) { return c.RemoveNode(pair[1]); }).ok());
    ASSERT_TRUE(WaitFor(
        [&] { return !map()->HasNode(pair[0]) && !map()->HasNode(pair[1]) && FullyReplicated(); },
        60 * kSecond))
        << map()->DebugString();
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
    ExpectCopiesEqual();
  });
}

// The operator's way out (`shoal force-primary`): a backup's copy becomes the only one under a
// new term; the balancer then rebuilds the others from it. It is refused while the bucket's
// primary is up. Here the primary crashed while the coordinator could not reach the backups (so
// no failover could seal them), and the forced copy was in sync: nothing acknowledged is lost.
TEST_F(ReplicationRepairTest, AForcedPrimaryIsTheOnlyCopyUntilTheOthersAreRebuilt) {
  Run(/*auto_balance=*/true, [&] {
    const cluster::BucketPlacement first = map()->buckets().front();
    const BucketId bucket = first.id;
    const NodeId primary = first.replicas[0];
    const NodeId backup = first.replicas[1];
    const Term term = first.term;
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    const Status refused = Admin([&](Coordinator& c) { return c.ForcePrimary(bucket, backup); });
    EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused;
    EXPECT_EQ(map()->Find(bucket)->term, term);
    std::vector<Address> backups;
    for (size_t i = 1; i < first.replicas.size(); ++i) {
      backups.push_back(Address::Node(first.replicas[i]));
    }
    sim_.CutLinks(Address::Coordinator(), backups, transport::LinkDirection::kBoth);
    ASSERT_TRUE(cluster_->CrashNode(primary).ok());
    ASSERT_TRUE(sim_.Sleep(3 * kSecond).ok());  // the coordinator's node_timeout: it is down
    EXPECT_EQ(map()->Find(bucket)->term, term) << "a failover sealed a backup it cannot reach";
    ASSERT_TRUE(Admin([&](Coordinator& c) { return c.ForcePrimary(bucket, backup); }).ok());
    sim_.HealAllLinks();
    ASSERT_TRUE(cluster_->StartNode(primary).ok());
    const auto* forced = map()->Find(bucket);
    EXPECT_GT(forced->term, term);
    EXPECT_EQ(forced->replicas.front(), backup);
    ASSERT_TRUE(WaitFor([&] { return FullyReplicated(); }, 60 * kSecond));
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
    ExpectCopiesEqual();
  });
}

}  // namespace
}  // namespace shoal::coordinator
