// Copies held outside a bucket's replicas (docs/design/replication.md §6.1, "Copies outside the
// replicas"), on the embedded cluster of the coordinator fixture (K = 3, 8 buckets) in the
// simulation:
//   - a node comes back while the repairs of the buckets it was removed from are still pending,
//     and an empty node joined meanwhile: each repair goes to the returning node, which resumes
//     its copy from the primary's log, rather than to the empty node by snapshot;
//   - with no grace at all, a copy held while its bucket is short of copies is kept (it is what
//     the repair resumes);
//   - a node that returns after its copies were rebuilt elsewhere: the copies it holds outside
//     the replicas are dropped once their buckets have been whole for the grace;
//   - repairs to a node just back abort as if it were still down, and their drops reach it: it
//     keeps its copies and resumes them all;
//   - data without a stored state that a node holds outside a bucket's replicas (an aborted
//     ingest's whose drop was lost) is reported and dropped once its bucket has been whole for
//     the grace;
//   - the coordinator's status answer (the admin progress answer `shoal status` reads) lists the
//     copies a returning node holds outside the replicas, with their positions.
// Each case ends with every bucket at three copies, no acknowledged write lost and every copy
// equal to its primary's.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <variant>
#include <vector>

#include "src/coordinator/coordinator.h"
#include "src/process/admin.h"
#include "tests/support/coordinator_test_fixture.h"

namespace shoal::coordinator {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fixture

constexpr NodeId kN4{4};
constexpr NodeId kN5{5};

class HeldCopyTest : public CoordinatorTest {
 protected:
  HeldCopyTest() { replication_factor_ = 3; }

  // The loaded documents of buckets whose primary is not `node`: a copy `node` held of them
  // holds no write of its own, so it is a prefix of its primary's history.
  std::vector<int> DocumentsNotLedBy(NodeId node) {
    std::vector<int> out;
    for (int i = 0; i < kDocuments; ++i) {
      if (map()->Lookup(PointOf(collection_, Key(i))).replicas.front() != node) out.push_back(i);
    }
    return out;
  }

  bool StoresBound() {
    return std::all_of(map()->nodes().begin(), map()->nodes().end(),
                       [](const cluster::NodeInfo& n) { return n.store_id != 0; });
  }

  std::set<BucketId> BucketsOf(NodeId node) {
    std::set<BucketId> out;
    for (const auto& bucket : map()->buckets()) {
      if (bucket.HasReplica(node)) out.insert(bucket.id);
    }
    return out;
  }

  // Whether `node` holds a copy (a stored state or any document) of a bucket it is no replica of.
  bool HoldsACopyOutsideTheReplicas(NodeId node) {
    for (const auto& bucket : map()->buckets()) {
      if (bucket.HasReplica(node) || bucket.transition.has_value()) continue;
      storage::BucketStore* store = cluster_->node(node)->store();
      if (store->GetReplicaState(bucket.id).position.rseq != 0) return true;
      auto stats = store->ComputeStats(transport::ToPointRange(bucket.range));
      if (!stats.ok() || stats->documents != 0) return true;
    }
    return false;
  }

  // The setup of the cases where n3 returns holding copies: the balancer off, a round writer on
  // the documents n3 leads none of, then n3 crashed and removed from every bucket it held.
  struct N3Removed {
    std::vector<int> documents;
    std::shared_ptr<RoundWriter> writer;
    std::set<BucketId> held;  // the buckets n3 was a replica of
  };
  void CrashAndRemoveN3(N3Removed* out) {
    coordinator().SetAutoBalance(false);
    ASSERT_TRUE(WaitFor([&] { return FullyReplicated(); }, 30 * kSecond));
    out->documents = DocumentsNotLedBy(kN3);
    out->writer = StartRoundWriter(out->documents, 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return out->writer->acknowledged_writes > 2 * kDocuments; }));
    out->held = BucketsOf(kN3);
    ASSERT_FALSE(out->held.empty());
    ASSERT_TRUE(cluster_->CrashNode(kN3).ok());
    ASSERT_TRUE(WaitFor([&] { return !Holds(kN3); }, 20 * kSecond));
  }
};

// n3 dies and is removed from every bucket while the balancer is off, and an empty n5 joins. When
// the balancer runs again, n3 is back: the empty n5 is the least loaded node, yet each bucket
// short of a copy is repaired on n3, which holds a copy of it, from the primary's log.
TEST_F(HeldCopyTest, ARepairGoesToTheReturningNodeThatHoldsACopy) {
  Run(/*auto_balance=*/true, [&] {
    ASSERT_TRUE(cluster_->AddNode(kN4).ok());
    ASSERT_TRUE(
        WaitFor([&] { return Holds(kN4) && FullyReplicated() && StoresBound(); }, 30 * kSecond));
    N3Removed removed;
    ASSERT_NO_FATAL_FAILURE(CrashAndRemoveN3(&removed));
    const auto& [documents, w, held] = removed;
    ExpectWritesGoOn(*w);
    ASSERT_TRUE(cluster_->AddNode(kN5).ok());
    ASSERT_TRUE(cluster_->StartNode(kN3).ok());
    ASSERT_TRUE(sim_.Sleep(500 * kMs).ok());  // heartbeats: n3 is not down any more
    const MoveProgress before = coordinator().progress();
    coordinator().SetAutoBalance(true);
    ASSERT_TRUE(WaitFor(
        [&] {
          return FullyReplicated() && std::all_of(held.begin(), held.end(), [&](BucketId b) {
                   return map()->Find(b)->HasReplica(kN3);
                 });
        },
        60 * kSecond));
    const node::NodeCounters n3 = cluster_->node(kN3)->counters();
    std::printf("n3 held %zu copies; resumed %llu, ingested %llu bytes\n", held.size(),
                static_cast<unsigned long long>(n3.copies_resumed),
                static_cast<unsigned long long>(n3.bytes_ingested));
    EXPECT_EQ(n3.copies_resumed, held.size());
    EXPECT_EQ(coordinator().progress().copies_resumed - before.copies_resumed, held.size());
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, documents);
    ExpectCopiesEqual();
  });
}

// No grace: a copy outside the replicas may be dropped as soon as its bucket is whole, and still
// the copies n3 holds while their buckets are short are kept: on three nodes every repair goes
// back to n3 and resumes its copy.
TEST_F(HeldCopyTest, ACopyIsKeptWhileItsBucketIsShortOfCopies) {
  stale_copy_grace_ = 0;
  Run(/*auto_balance=*/true, [&] {
    ASSERT_TRUE(WaitFor([&] { return StoresBound(); }));
    const std::vector<int> documents = DocumentsNotLedBy(kN3);
    auto w = StartRoundWriter(documents, 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    ASSERT_TRUE(cluster_->CrashNode(kN3).ok());
    ASSERT_TRUE(WaitFor([&] { return !Holds(kN3); }, 20 * kSecond));
    ExpectWritesGoOn(*w);
    ASSERT_TRUE(cluster_->StartNode(kN3).ok());
    ASSERT_TRUE(WaitFor([&] { return FullyReplicated(); }, 30 * kSecond));
    EXPECT_EQ(cluster_->node(kN3)->counters().copies_resumed, map()->buckets().size());
    EXPECT_EQ(cluster_->node(kN3)->counters().bytes_ingested, 0u);
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, documents);
    ExpectCopiesEqual();
  });
}

// n3 stays down until its copies are rebuilt on the other nodes; back, it holds copies of
// buckets that are whole. Those the balance moves do not bring back to it are dropped once the
// grace has passed: no stored state, no document of their ranges.
TEST_F(HeldCopyTest, AStaleCopyIsDroppedOnceItsBucketHasBeenWholeForTheGrace) {
  stale_copy_grace_ = 2 * kSecond;
  Run(/*auto_balance=*/true, [&] {
    ASSERT_TRUE(cluster_->AddNode(kN4).ok());
    ASSERT_TRUE(
        WaitFor([&] { return Holds(kN4) && FullyReplicated() && StoresBound(); }, 30 * kSecond));
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    const std::set<BucketId> held = BucketsOf(kN3);
    ASSERT_TRUE(cluster_->CrashNode(kN3).ok());
    ASSERT_TRUE(WaitFor([&] { return !Holds(kN3) && FullyReplicated(); }, 60 * kSecond));
    ExpectWritesGoOn(*w);
    ASSERT_TRUE(cluster_->StartNode(kN3).ok());
    ASSERT_TRUE(WaitFor([&] { return HoldsACopyOutsideTheReplicas(kN3); }, 5 * kSecond))
        << "n3 comes back with its copies";
    ASSERT_TRUE(WaitFor(
        [&] {
          return coordinator().Balanced().value_or(false) && !HoldsACopyOutsideTheReplicas(kN3);
        },
        60 * kSecond));
    size_t dropped = 0;
    for (BucketId bucket : held) dropped += map()->Find(bucket)->HasReplica(kN3) ? 0 : 1;
    std::printf("n3 held %zu copies; %zu were dropped, the others moved back to it\n", held.size(),
                dropped);
    EXPECT_GT(dropped, 0u);
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
    ExpectCopiesEqual();
  });
}

// n3 dies and is removed from every bucket while the balancer is off, then comes back: every
// bucket it was removed from is short of a copy, and the status answer names n3 as holding one,
// at the position its store reports, until a repair brings it back into the replicas.
TEST_F(HeldCopyTest, TheStatusAnswerListsTheCopiesHeldOutsideTheReplicas) {
  Run(/*auto_balance=*/true, [&] {
    ASSERT_TRUE(WaitFor([&] { return FullyReplicated() && StoresBound(); }, 30 * kSecond));
    N3Removed removed;
    ASSERT_NO_FATAL_FAILURE(CrashAndRemoveN3(&removed));
    const auto& [documents, w, held] = removed;
    StopRoundWriter(*w);
    ASSERT_TRUE(cluster_->StartNode(kN3).ok());
    ASSERT_TRUE(sim_.Sleep(500 * kMs).ok());  // heartbeats: n3 is not down any more
    // A plan preview collects the loads, held copies included, as a balancer round does.
    ASSERT_TRUE(coordinator().Plan().ok());

    std::map<BucketId, storage::ReplicaPosition> expected;
    for (BucketId bucket : held) {
      expected[bucket] = cluster_->node(kN3)->store()->GetReplicaState(bucket).position;
      EXPECT_GT(expected[bucket].rseq, 0u) << bucket;
    }
    std::map<BucketId, storage::ReplicaPosition> listed;
    for (const auto& [bucket, holders] : coordinator().CopiesOutsideReplicas()) {
      ASSERT_EQ(holders.size(), 1u) << bucket;
      EXPECT_EQ(holders.front().node, kN3) << bucket;
      listed[bucket] = holders.front().position;
    }
    EXPECT_EQ(listed, expected);

    wire::AdminRequest request;
    request.mutable_progress();
    wire::AdminResponse answer;
    process::HandleAdmin(coordinator(), request, &answer);
    ASSERT_EQ(answer.status().code(), 0) << answer.status().message();
    std::map<BucketId, storage::ReplicaPosition> answered;
    for (const wire::HeldCopyStatus& copy : answer.held_copies()) {
      EXPECT_EQ(copy.node(), kN3.value());
      answered[BucketId(copy.bucket())] = {Term(copy.term()), copy.rseq()};
    }
    EXPECT_EQ(answered, expected);

    // Repaired, n3 is a replica again: nothing is held outside the replicas.
    coordinator().SetAutoBalance(true);
    ASSERT_TRUE(WaitFor([&] { return FullyReplicated(); }, 60 * kSecond));
    ASSERT_TRUE(coordinator().Plan().ok());
    EXPECT_TRUE(coordinator().CopiesOutsideReplicas().empty());
    ExpectNoAcknowledgedRoundLost(*w, documents);
    ExpectCopiesEqual();
  });
}

// n3 is removed from every bucket while it is down, and comes back. The first repairs to it act
// as if it were still down (the coordinator calls a node down only after node_timeout): their
// ResumeCopy requests are lost, so they abort, and the aborts' drops
// (DropReason::kAbortedStaging) reach n3. It keeps every copy, and the next repairs resume each
// from its primary's log, with no byte ingested.
TEST_F(HeldCopyTest, AnAbortedRepairsDropReachingTheReturnedHolderKeepsItsCopy) {
  Run(/*auto_balance=*/true, [&] {
    ASSERT_TRUE(WaitFor([&] { return FullyReplicated() && StoresBound(); }, 30 * kSecond));
    N3Removed removed;
    ASSERT_NO_FATAL_FAILURE(CrashAndRemoveN3(&removed));
    const auto& [documents, w, held] = removed;
    ExpectWritesGoOn(*w);
    ASSERT_TRUE(cluster_->StartNode(kN3).ok());
    ASSERT_TRUE(sim_.Sleep(500 * kMs).ok());  // heartbeats: n3 is not down any more
    int aborted_drops = 0;
    sim_.SetMessageHook([&](const Address&, const Address& to, const transport::Request& request,
                            transport::SimRuntime::MessageLeg leg) {
      transport::SimRuntime::MessageFate fate;
      if (!(to == Address::Node(kN3)) || leg != transport::SimRuntime::MessageLeg::kRequest) {
        return fate;
      }
      if (const auto* drop = std::get_if<transport::DropBucketRequest>(&request);
          drop != nullptr && drop->reason == transport::DropReason::kAbortedStaging) {
        ++aborted_drops;
      }
      fate.lose =
          aborted_drops == 0 && std::holds_alternative<transport::ResumeCopyRequest>(request);
      return fate;
    });
    const MoveProgress before = coordinator().progress();
    coordinator().SetAutoBalance(true);
    ASSERT_TRUE(WaitFor(
        [&] {
          return FullyReplicated() && std::all_of(held.begin(), held.end(), [&](BucketId b) {
                   return map()->Find(b)->HasReplica(kN3);
                 });
        },
        60 * kSecond));
    sim_.SetMessageHook({});
    const node::NodeCounters n3 = cluster_->node(kN3)->counters();
    std::printf(
        "n3 held %zu copies; %d aborted repairs' drops reached it; resumed %llu, "
        "ingested %llu bytes\n",
        held.size(), aborted_drops, static_cast<unsigned long long>(n3.copies_resumed),
        static_cast<unsigned long long>(n3.bytes_ingested));
    EXPECT_GT(aborted_drops, 0);
    EXPECT_GT(coordinator().progress().aborted, before.aborted);
    EXPECT_EQ(n3.copies_resumed, held.size());
    EXPECT_EQ(n3.bytes_ingested, 0u);
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, documents);
    ExpectCopiesEqual();
  });
}

// An aborted ingest's leftovers on n4, whose drop was lost: a document of a bucket n4 is no
// replica of, with no stored state. n4 reports it with no position, and the coordinator drops
// it once the bucket has been whole for the grace.
TEST_F(HeldCopyTest, DataWithoutAStoredStateOutsideTheReplicasIsDropped) {
  stale_copy_grace_ = 2 * kSecond;
  Run(/*auto_balance=*/true, [&] {
    ASSERT_TRUE(cluster_->AddNode(kN4).ok());
    ASSERT_TRUE(WaitFor(
        [&] {
          return Holds(kN4) && FullyReplicated() && StoresBound() &&
                 coordinator().Balanced().value_or(false);
        },
        60 * kSecond));
    int document = -1;
    for (int i = 0; i < kDocuments && document < 0; ++i) {
      if (!map()->Lookup(PointOf(collection_, Key(i))).HasReplica(kN4)) document = i;
    }
    ASSERT_GE(document, 0);
    const BucketId bucket = map()->Lookup(PointOf(collection_, Key(document))).id;
    storage::BucketStore* store = cluster_->node(kN4)->store();
    const storage::Document leftover{.collection = collection_,
                                     .primary_key = Key(document),
                                     .body = R"({"left":"over"})",
                                     .version = 1,
                                     .tombstone = false};
    ASSERT_TRUE(store->ApplyChanges(std::span<const storage::Document>(&leftover, 1)).ok());
    ASSERT_EQ(store->GetReplicaState(bucket).position.rseq, 0u);
    ASSERT_TRUE(HoldsACopyOutsideTheReplicas(kN4));
    ASSERT_TRUE(WaitFor([&] { return !HoldsACopyOutsideTheReplicas(kN4); }, 60 * kSecond));
    EXPECT_FALSE(map()->Find(bucket)->HasReplica(kN4)) << "dropped, not replaced by a move";
    EXPECT_FALSE(store->Get(collection_, Key(document)).ok());
    ExpectCopiesEqual();
  });
}

}  // namespace
}  // namespace shoal::coordinator
