// Log retention instead of hinted handoff (docs/design/replication.md §6): a copy that comes back
// resumes from its primary's log, with no snapshot, only when that is safe (§4.3), on the
// embedded cluster of the coordinator fixture (three nodes, 8 buckets with a copy on each, K = 3,
// min_in_sync 2) in the simulation:
//   - a node down for a moment comes back: each of its copies is resumed from its primary's log
//     (nothing ingested, no snapshot bytes), and what the catch-ups carry is about the writes it
//     missed;
//   - an old primary comes back with a write of its own that no backup got (unacknowledged): that
//     copy diverges and is rebuilt from a snapshot, so the write is on no copy, while its other
//     copies resume;
//   - a node comes back with its data directory wiped: every copy is rebuilt from a snapshot;
//   - the primaries restarted while the node was down: their log index is empty, so every copy
//     is rebuilt from a snapshot;
//   - a node whose copy a balance move dropped holds no copy any more: a repair that brings the
//     bucket back to it is a snapshot;
//   - a node that keeps failing (flap damping, §4.1): after its third removal within a minute it
//     gets no copy back until it has been stable for 30 s.
// Each case ends with every bucket at three copies, no acknowledged write lost and every copy
// equal to its primary's, key by key (version, tombstone, body) and position.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "src/coordinator/coordinator.h"
#include "src/coordinator/flap_damper.h"
#include "tests/support/coordinator_test_fixture.h"

namespace shoal::coordinator {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fixture

class ReplicationResumeTest : public CoordinatorTest {
 protected:
  ReplicationResumeTest() { replication_factor_ = 3; }

  // The loaded documents of buckets whose primary is not `node`.
  std::vector<int> DocumentsNotLedBy(NodeId node) {
    std::vector<int> out;
    for (int i = 0; i < kDocuments; ++i) {
      const auto& bucket = map()->Lookup(PointOf(collection_, Key(i)));
      if (bucket.replicas.front() != node) out.push_back(i);
    }
    return out;
  }

  // Every node's store is bound in the map (a copy resumes only on the store the map names).
  bool StoresBound() {
    return std::all_of(map()->nodes().begin(), map()->nodes().end(),
                       [](const cluster::NodeInfo& n) { return n.store_id != 0; });
  }

  // Every document not in `written` reads its loaded body from every copy of its bucket.
  void ExpectAllDocumentsReadableOnEveryCopy(const std::vector<int>& written) {
    for (int i = 0; i < kDocuments; ++i) {
      if (std::find(written.begin(), written.end(), i) != written.end()) continue;
      const auto& bucket = map()->Lookup(PointOf(collection_, Key(i)));
      for (NodeId node : bucket.replicas) {
        auto got = cluster_->node(node)->store()->Get(collection_, Key(i));
        ASSERT_TRUE(got.ok()) << Key(i) << " on " << node.DebugString() << ": " << got.status();
        EXPECT_EQ(got->body, Body(i)) << Key(i) << " on " << node.DebugString();
      }
    }
  }

  // Key + body bytes of the largest update a RoundWriter makes up to `round`.
  static uint64_t MaxWriteBytes(int round) {
    return Key(kDocuments - 1).size() + Body((round + 1) * kDocuments).size();
  }
};

// A node down for a moment: its primaries fail over and its copies leave every bucket; back on
// the same store, each copy is a prefix of its primary's history within the primary's log, so
// each repair resumes it there. The writer keeps off the buckets the node led, so that none of
// its copies holds a write of its own.
TEST_F(ReplicationResumeTest, ANodeDownForAMomentCatchesUpFromThePrimarysLog) {
  Run(/*auto_balance=*/true, [&] {
    ASSERT_TRUE(WaitFor([&] { return StoresBound(); }));
    const std::vector<int> documents = DocumentsNotLedBy(kN3);
    auto w = StartRoundWriter(documents, 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    const MoveProgress before = coordinator().progress();
    const uint64_t acknowledged_before = w->acknowledged_writes;
    ASSERT_TRUE(cluster_->CrashNode(kN3).ok());
    ASSERT_TRUE(WaitFor([&] { return !Holds(kN3); }, 20 * kSecond));
    ExpectWritesGoOn(*w);
    ASSERT_TRUE(cluster_->StartNode(kN3).ok());
    ASSERT_TRUE(WaitFor([&] { return FullyReplicated(); }, 30 * kSecond));
    const MoveProgress after = coordinator().progress();
    const uint64_t missed = w->acknowledged_writes - acknowledged_before;
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);

    const node::NodeCounters n3 = cluster_->node(kN3)->counters();
    const size_t buckets = map()->buckets().size();
    EXPECT_EQ(n3.copies_resumed, buckets);
    EXPECT_EQ(n3.bytes_ingested, 0u) << "no snapshot was ingested";
    EXPECT_EQ(after.copies_resumed - before.copies_resumed, buckets);
    EXPECT_EQ(after.bytes_moved, before.bytes_moved) << "no snapshot was exported";
    // The catch-ups carried the writes acknowledged while the node was away (and those of the
    // catch-ups themselves), not more.
    const uint64_t caught_up = after.bytes_caught_up - before.bytes_caught_up;
    const int rounds = std::max_element(w->tried.begin(), w->tried.end(), [](auto& a, auto& b) {
                         return a.second < b.second;
                       })->second;
    std::printf(
        "resumed %llu copies; %llu bytes caught up for %llu writes acknowledged meanwhile\n",
        static_cast<unsigned long long>(n3.copies_resumed),
        static_cast<unsigned long long>(caught_up), static_cast<unsigned long long>(missed));
    EXPECT_GT(caught_up, 0u);
    EXPECT_LE(caught_up, (missed + buckets) * MaxWriteBytes(rounds));
    ExpectNoAcknowledgedRoundLost(*w, documents);
    ExpectCopiesEqual();
  });
}

// The old primary's unacknowledged tail (§4.3): n1, the primary of b0, applies an update that
// reaches neither backup (its links to them are cut) and crashes. A backup is promoted without
// it, and writes more to b0 than n1 holds. Back, n1's copy of b0 holds a write under the old term
// where the new primary's history has one of the new term: it is no prefix, and it is rebuilt
// from a snapshot, so the update is on no copy. n1's other copies resume. (Were the divergent
// copy resumed, apply-if-newer would keep its update, which no later write of that key
// replaces: the bodies checked below and the copies' digests would differ.)
TEST_F(ReplicationResumeTest, AnOldPrimarysUnacknowledgedTailIsRebuiltFromASnapshot) {
  Run(/*auto_balance=*/true, [&] {
    ASSERT_TRUE(WaitFor([&] { return StoresBound(); }));
    ASSERT_EQ(map()->Find(kB0)->replicas.front(), kN1);
    int doc = -1;
    for (int i = 0; i < kDocuments && doc < 0; ++i) {
      if (map()->Lookup(PointOf(collection_, Key(i))).id == kB0) doc = i;
    }
    ASSERT_GE(doc, 0);
    const std::vector<int> documents = DocumentsNotLedBy(kN1);
    auto w = StartRoundWriter(documents, 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));

    const Address n1 = Address::Node(kN1), n2 = Address::Node(kN2), n3 = Address::Node(kN3);
    sim_.CutLink(n1, n2);
    sim_.CutLink(n1, n3);
    bool update_done = false;
    Status update_status;
    sim_.Spawn(Address::Client(3), "unacked-update", [&, c = collection_] {
      client::Client writer(sim_);
      update_status = writer.Update(c, Key(doc), R"({"lost":true})").status();
      update_done = true;
    });
    auto position = [&](NodeId node) {
      return cluster_->node(node)->store()->GetReplicaState(kB0).position;
    };
    ASSERT_TRUE(WaitFor([&] { return position(kN1) > std::max(position(kN2), position(kN3)); },
                        5 * kSecond));
    ASSERT_FALSE(update_done) << "acknowledged without a backup: " << update_status;
    const Term old_term = map()->Find(kB0)->term;
    const storage::ReplicaPosition n1_at = position(kN1);
    ASSERT_TRUE(cluster_->CrashNode(kN1).ok());
    sim_.HealAllLinks();
    ASSERT_TRUE(WaitFor([&] { return map()->Find(kB0)->term > old_term; }, 20 * kSecond));
    ASSERT_TRUE(WaitFor([&] { return update_done; }));
    EXPECT_FALSE(update_status.ok());
    ASSERT_TRUE(WaitFor([&] { return !Holds(kN1); }, 20 * kSecond));
    // The new primary goes past n1's position with writes of its own to other keys of b0: n1's
    // copy is then no shorter than the history, only different from it.
    client::Client inserter(sim_);
    int inserted = 0;
    for (int i = 0; inserted < 3; ++i) {
      const std::string key = fmt::format("extra{}", i);
      if (map()->Lookup(PointOf(collection_, key)).id != kB0) continue;
      auto written = inserter.Insert(collection_, key, Body(i));
      ASSERT_TRUE(written.ok()) << written.status();
      ++inserted;
    }
    ASSERT_GT(cluster_->node(map()->Find(kB0)->replicas.front())
                  ->store()
                  ->GetReplicaState(kB0)
                  .position.rseq,
              n1_at.rseq);

    ASSERT_TRUE(cluster_->StartNode(kN1).ok());
    ASSERT_TRUE(WaitFor([&] { return FullyReplicated(); }, 60 * kSecond));
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    const node::NodeCounters back = cluster_->node(kN1)->counters();
    EXPECT_EQ(back.copies_resumed, map()->buckets().size() - 1) << "all but b0";
    EXPECT_GT(back.bytes_ingested, 0u) << "b0 from a snapshot";
    ExpectNoAcknowledgedRoundLost(*w, documents);
    ExpectCopiesEqual();
    client::Client reader(sim_);
    for (int i = 0; i < 3 * 3; ++i) {
      auto any = reader.GetAnyReplica(collection_, Key(doc));
      ASSERT_TRUE(any.ok()) << any.status();
      EXPECT_EQ(any->body, Body(doc));
    }
  });
}

// A wiped data directory is another store (§4.6): the node is reset, and every copy it gets
// back is built from a snapshot. (The balancer waits for the reset, so that every copy is built
// on the new store once: a copy built there before the reset is dropped with the reset, and
// resumed when it comes back, rightly: its data came from a snapshot on this store.)
TEST_F(ReplicationResumeTest, ANodeBackWithAWipedDirectoryIsRebuiltFromSnapshots) {
  Run(/*auto_balance=*/true, [&] {
    ASSERT_TRUE(WaitFor([&] { return StoresBound(); }));
    const uint64_t old_store = map()->FindNode(kN3)->store_id;
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    const MoveProgress before = coordinator().progress();
    ASSERT_TRUE(cluster_->CrashNode(kN3).ok());
    ASSERT_TRUE(sim_.Sleep(50 * kMs).ok());
    std::error_code ec;
    std::filesystem::remove_all(fmt::format("{}/node-3", dir_), ec);
    ASSERT_FALSE(ec) << ec.message();
    coordinator().SetAutoBalance(false);
    ASSERT_TRUE(cluster_->StartNode(kN3).ok());
    ASSERT_TRUE(WaitFor([&] { return map()->FindNode(kN3)->store_id != old_store && !Holds(kN3); },
                        20 * kSecond));
    coordinator().SetAutoBalance(true);
    ASSERT_TRUE(WaitFor([&] { return FullyReplicated(); }, 60 * kSecond));
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    const node::NodeCounters n3 = cluster_->node(kN3)->counters();
    EXPECT_EQ(n3.copies_resumed, 0u);
    EXPECT_GT(n3.bytes_ingested, 0u);
    EXPECT_EQ(coordinator().progress().copies_resumed, before.copies_resumed);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
    ExpectCopiesEqual();
  });
}

// The primaries restarted while the node was down: a restarted node's log index is empty (in
// memory), so it vouches for no copy older than its restart, and every copy the node gets back
// is built from a snapshot.
TEST_F(ReplicationResumeTest, APrimaryRestartedMeanwhileRebuildsTheCopyFromASnapshot) {
  Run(/*auto_balance=*/true, [&] {
    ASSERT_TRUE(WaitFor([&] { return StoresBound(); }));
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    ASSERT_TRUE(cluster_->CrashNode(kN3).ok());
    ASSERT_TRUE(WaitFor([&] { return !Holds(kN3); }, 20 * kSecond));
    ExpectWritesGoOn(*w);
    // Both other nodes restart: every primary left is a restarted process.
    ASSERT_TRUE(cluster_->CrashNode(kN1).ok());
    ASSERT_TRUE(cluster_->CrashNode(kN2).ok());
    ASSERT_TRUE(cluster_->StartNode(kN1).ok());
    ASSERT_TRUE(cluster_->StartNode(kN2).ok());
    ExpectWritesGoOn(*w);
    const MoveProgress before = coordinator().progress();
    ASSERT_TRUE(cluster_->StartNode(kN3).ok());
    ASSERT_TRUE(WaitFor([&] { return FullyReplicated(); }, 60 * kSecond));
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    const node::NodeCounters n3 = cluster_->node(kN3)->counters();
    EXPECT_EQ(n3.copies_resumed, 0u);
    EXPECT_GT(n3.bytes_ingested, 0u);
    EXPECT_EQ(coordinator().progress().copies_resumed, before.copies_resumed);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
    ExpectCopiesEqual();
  });
}

// A copy's data dropped (the backup a balance move replaced) takes its stored state with it: the
// node holds no copy afterwards, and a repair that brings the bucket back to it is a snapshot.
// Four nodes; once the fourth took its share, it dies for good and its copies are rebuilt on the
// nodes that gave them up. (Were the state kept, those repairs would resume an empty range.)
TEST_F(ReplicationResumeTest, ADroppedCopyIsNeverResumed) {
  constexpr NodeId kN4{4};
  Run(/*auto_balance=*/true, [&] {
    ASSERT_TRUE(cluster_->AddNode(kN4).ok());
    // Half of the documents are written only at the load, so that a copy missing the data it
    // dropped shows it whatever the catch-up carries.
    std::vector<int> documents;
    for (int i = 0; i < kDocuments; i += 2) documents.push_back(i);
    auto w = StartRoundWriter(documents, 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return Holds(kN4) && FullyReplicated(); }, 30 * kSecond));
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    std::vector<BucketId> taken;
    for (const auto& bucket : map()->buckets()) {
      if (bucket.HasReplica(kN4)) taken.push_back(bucket.id);
    }
    ASSERT_FALSE(taken.empty());
    const MoveProgress before = coordinator().progress();
    ASSERT_TRUE(cluster_->CrashNode(kN4).ok());
    ASSERT_TRUE(WaitFor([&] { return !Holds(kN4) && FullyReplicated(); }, 60 * kSecond));
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    EXPECT_EQ(coordinator().progress().copies_resumed, before.copies_resumed);
    EXPECT_GE(coordinator().progress().committed - before.committed, taken.size());
    ExpectNoAcknowledgedRoundLost(*w, documents);
    ExpectAllDocumentsReadableOnEveryCopy(documents);
    ExpectCopiesEqual();
  });
}

// Flap damping (§4.1): n3 crashes and comes back three times within a minute. The first two
// times the balancer repairs every bucket onto it as soon as it is back. The third removal damps
// it: on three nodes it is the only place for a third copy, and the buckets stay at two copies
// (min_in_sync holds, writes go on) until 30 s after that removal, then come back to three.
TEST_F(ReplicationResumeTest, AFlappingNodeGetsNoCopyBackUntilItIsStable) {
  Run(/*auto_balance=*/true, [&] {
    ASSERT_TRUE(WaitFor([&] { return StoresBound(); }));
    const std::vector<int> documents = AllDocuments();
    auto w = StartRoundWriter(documents, 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > kDocuments; }));
    const Micros first_crash = sim_.Now();
    Micros removed_at = 0;
    for (int flap = 1; flap <= FlapDamper::kDampAfterRemovals; ++flap) {
      ASSERT_TRUE(cluster_->CrashNode(kN3).ok());
      ASSERT_TRUE(WaitFor([&] { return !Holds(kN3); }, 20 * kSecond)) << "flap " << flap;
      removed_at = sim_.Now();
      ASSERT_TRUE(cluster_->StartNode(kN3).ok());
      if (flap < FlapDamper::kDampAfterRemovals) {
        ASSERT_TRUE(WaitFor([&] { return FullyReplicated(); }, 20 * kSecond)) << "flap " << flap;
      }
    }
    ASSERT_LT(removed_at - first_crash, FlapDamper::kDampWindow);
    // Damped: nothing comes back to n3 for most of kStableFor.
    for (Micros waited = 0; waited < FlapDamper::kStableFor - 5 * kSecond; waited += kSecond) {
      ASSERT_FALSE(Holds(kN3)) << "a copy came back to n3 " << waited / kSecond << " s in";
      ASSERT_TRUE(sim_.Sleep(kSecond).ok());
    }
    ExpectWritesGoOn(*w);
    ASSERT_TRUE(WaitFor([&] { return FullyReplicated(); }, 30 * kSecond));
    const Micros back_after = sim_.Now() - removed_at;
    std::printf("third removal to three copies again: %.1f s\n", back_after / 1e6);
    EXPECT_GE(back_after, FlapDamper::kStableFor - 5 * kSecond);
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, documents);
    ExpectCopiesEqual();
  });
}

}  // namespace
}  // namespace shoal::coordinator
