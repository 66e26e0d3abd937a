// Failure handling of replicated buckets in an embedded cluster (docs/design/replication.md §4):
// three nodes hold every bucket (K = 3, min_in_sync 2) while a writer updates every document in
// rounds. A crashed primary is replaced by a backup under a new term; a crashed backup is
// removed from its buckets by their primaries' reports; a primary that restarts before anyone
// noticed serves nothing at its old term and is replaced as well. In every case writes go on and
// every document holds its last acknowledged update or a later one of unknown outcome. At the
// floor (min_in_sync) a silent backup stays listed: writes are refused with a clear error until
// it answers again. A node back with a wiped directory is reset, never promoted; a coordinator
// that crashes at any step of a failover is replaced by one that finishes it. A client with a
// retry budget waits out a failover instead of failing.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "src/client/client.h"
#include "src/common/point.h"
#include "src/coordinator/coordinator.h"
#include "tests/support/coordinator_test_fixture.h"

namespace shoal::coordinator {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fixture

class ReplicationFailoverTest : public CoordinatorTest {
 protected:
  ReplicationFailoverTest() { replication_factor_ = 3; }

  // The buckets whose primary is `node` in the current map.
  std::vector<BucketId> PrimariesOf(NodeId node) {
    std::vector<BucketId> out;
    for (const auto& bucket : map()->buckets()) {
      if (bucket.replicas.front() == node) out.push_back(bucket.id);
    }
    return out;
  }
};

TEST_F(ReplicationFailoverTest, ACrashedPrimaryIsReplacedByABackupUnderANewTerm) {
  Run(/*auto_balance=*/false, [&] {
    ASSERT_EQ(map()->replication_factor(), 3u);
    const std::vector<BucketId> lost = PrimariesOf(kN1);
    ASSERT_FALSE(lost.empty());
    std::map<BucketId, Term> terms;
    for (BucketId b : lost) terms[b] = map()->Find(b)->term;
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));

    const Micros crashed_at = sim_.Now();
    ASSERT_TRUE(cluster_->CrashNode(kN1).ok());
    ASSERT_TRUE(WaitFor([&] { return PrimariesOf(kN1).empty(); }, 20 * kSecond));
    const Micros failover = sim_.Now() - crashed_at;
    std::printf("primary crash to promotion: %lld ms\n", static_cast<long long>(failover / kMs));
    // failover_timeout (1 s) + the read lease it waits out at most (1.1 s) + a poll.
    EXPECT_LE(failover, 2500 * kMs);
    for (BucketId b : lost) {
      const auto* bucket = map()->Find(b);
      EXPECT_GT(bucket->term, terms[b]) << b.DebugString();
      EXPECT_FALSE(bucket->HasReplica(kN1)) << b.DebugString();
      EXPECT_EQ(bucket->replicas.size(), 2u) << b.DebugString();
    }
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
    // The two copies left of each bucket are equal.
    for (const auto& bucket : map()->buckets()) {
      ASSERT_GE(bucket.replicas.size(), 2u);
      const auto range = RangeOf(bucket);
      auto first = cluster_->node(bucket.replicas[0])->store()->DigestRange(range);
      auto second = cluster_->node(bucket.replicas[1])->store()->DigestRange(range);
      ASSERT_TRUE(first.ok() && second.ok());
      EXPECT_EQ(*first, *second) << bucket.id.DebugString();
    }
  });
}

// A client that retries for ClientOptions::retry_for (the applications' clients:
// kApplicationRetryFor) waits out the failover of a dead primary: its write to one of the
// primary's documents succeeds once a backup took over. With attempts alone (retry_for 0) the
// same write gives up first, with UNAVAILABLE.
TEST_F(ReplicationFailoverTest, AClientWithARetryBudgetWaitsOutAFailover) {
  Run(/*auto_balance=*/false, [&] {
    std::vector<int> lost;
    for (int i = 0; i < kDocuments; ++i) {
      if (map()->Lookup(PointOf(collection_, Key(i))).replicas.front() == kN1) lost.push_back(i);
    }
    ASSERT_GE(lost.size(), 2u);
    client::Client patient(sim_, client::ClientOptions{.retry_for = client::kApplicationRetryFor});
    client::Client hasty(sim_);
    ASSERT_TRUE(patient.Refresh().ok());
    ASSERT_TRUE(hasty.Refresh().ok());

    const Micros crashed_at = sim_.Now();
    ASSERT_TRUE(cluster_->CrashNode(kN1).ok());
    auto gave_up = hasty.Upsert(collection_, Key(lost[0]), R"({"hasty":1})");
    EXPECT_EQ(gave_up.status().code(), StatusCode::kUnavailable) << gave_up.status();
    EXPECT_NE(gave_up.status().message().find("gave up after"), std::string::npos)
        << gave_up.status();
    EXPECT_LT(sim_.Now() - crashed_at, 1000 * kMs);  // before the failover could begin

    auto written = patient.Upsert(collection_, Key(lost[1]), R"({"patient":1})");
    ASSERT_TRUE(written.ok()) << written.status();
    const Micros waited = sim_.Now() - crashed_at;
    std::printf("a write to a dead primary's bucket succeeded %lld ms after the crash\n",
                static_cast<long long>(waited / kMs));
    EXPECT_GE(waited, 1000 * kMs);  // failover_timeout: it did wait for the new primary
    EXPECT_NE(map()->Lookup(PointOf(collection_, Key(lost[1]))).replicas.front(), kN1);
    auto read = patient.Get(collection_, Key(lost[1]));
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->body, R"({"patient":1})");
  });
}

// ReadMode::kAnyReplica (docs/design/replication.md §5): reads spread over the three copies and
// return the latest value once it is committed; while a primary is down and not yet replaced,
// its backups still answer.
TEST_F(ReplicationFailoverTest, AnyReplicaReadsSpreadOverTheCopiesAndGoOnWhileThePrimaryIsDown) {
  Run(/*auto_balance=*/false, [&] {
    for (int i = 0; i < kDocuments; ++i) {
      ASSERT_TRUE(client_->Upsert(collection_, Key(i), Body(kDocuments + i)).ok());
    }
    ASSERT_TRUE(sim_.Sleep(500 * kMs).ok());  // a keepalive tells the backups it is committed
    std::map<NodeId, uint64_t> before;
    for (NodeId n : {kN1, kN2, kN3}) before[n] = cluster_->node(n)->counters().reads;
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < kDocuments; ++i) {
        auto got = client_->GetAnyReplica(collection_, Key(i));
        ASSERT_TRUE(got.ok()) << Key(i) << ": " << got.status();
        EXPECT_EQ(got->body, Body(kDocuments + i)) << Key(i);
      }
    }
    // Every copy answered some of them.
    for (NodeId n : {kN1, kN2, kN3}) {
      EXPECT_GE(cluster_->node(n)->counters().reads, before[n] + kDocuments / 2) << n.DebugString();
    }
    // n1 dies: before its buckets fail over, their backups answer any-replica reads of them
    // (a read sent to n1 first passes to the next copy).
    std::vector<int> led;
    for (int i = 0; i < kDocuments && led.size() < 3; ++i) {
      if (map()->Lookup(PointOf(collection_, Key(i))).replicas.front() == kN1) led.push_back(i);
    }
    ASSERT_FALSE(led.empty());
    ASSERT_TRUE(cluster_->CrashNode(kN1).ok());
    for (int i : led) {
      auto got = client_->GetAnyReplica(collection_, Key(i));
      ASSERT_TRUE(got.ok()) << Key(i) << ": " << got.status();
      EXPECT_EQ(got->body, Body(kDocuments + i)) << Key(i);
    }
    EXPECT_FALSE(PrimariesOf(kN1).empty()) << "the reads waited for the failover";
  });
}

// At the floor (docs/design/replication.md §4.1 step 3): n3 dies and leaves every bucket, then
// n2 dies. Where n1 is the primary and n2 its last backup, removing n2 would undercut
// min_in_sync 2: n2 stays listed, writes get NOT_ENOUGH_REPLICAS, and reads go on under a lease
// from the coordinator. n2 returns and writes go on.
TEST_F(ReplicationFailoverTest, AtTheFloorWritesAreRefusedAndReadsGoOn) {
  Run(/*auto_balance=*/false, [&] {
    ASSERT_TRUE(cluster_->CrashNode(kN3).ok());
    ASSERT_TRUE(WaitFor([&] { return !Holds(kN3); }, 20 * kSecond));
    ASSERT_FALSE(PrimariesOf(kN1).empty());
    ASSERT_TRUE(cluster_->CrashNode(kN2).ok());
    // n1 reports n2 silent and the coordinator keeps it: the floor.
    ASSERT_TRUE(sim_.Sleep(3 * kSecond).ok());
    std::vector<int> floor_keys;  // of buckets n1 leads with n2 still listed
    const ShardMapPtr floor = map();
    for (int i = 0; i < kDocuments; ++i) {
      const auto& bucket = floor->Lookup(PointOf(collection_, Key(i)));
      if (bucket.replicas.front() == kN1 && bucket.HasReplica(kN2)) floor_keys.push_back(i);
    }
    ASSERT_FALSE(floor_keys.empty());
    for (int i : floor_keys) {
      auto write = client_->Upsert(collection_, Key(i), Body(2 * kDocuments + i));
      EXPECT_FALSE(write.ok()) << Key(i);
      EXPECT_EQ(transport::ClusterErrorOf(write.status()),
                transport::ClusterError::kNotEnoughReplicas)
          << write.status();
    }
    // Every document reads back, from n1 alone.
    ExpectAllDocumentsReadable();
    // n2 answers again: the floor lifts. (The buckets promoted to n1 alone wait for a copy to be
    // rebuilt, which this test's balancer, off, does not do.)
    ASSERT_TRUE(cluster_->StartNode(kN2).ok());
    for (int i : floor_keys) {
      ASSERT_TRUE(WaitFor([&] {
        return client_->Upsert(collection_, Key(i), Body(3 * kDocuments + i)).ok();
      })) << Key(i);
    }
  });
}

TEST_F(ReplicationFailoverTest, ACrashedBackupIsRemovedAndWritesGoOn) {
  Run(/*auto_balance=*/false, [&] {
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    ASSERT_TRUE(cluster_->CrashNode(kN3).ok());
    // Every bucket ends without n3: removed where it was a backup, replaced where it was the
    // primary.
    ASSERT_TRUE(WaitFor([&] { return !Holds(kN3); }, 20 * kSecond));
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
  });
}

// A backup that dies leaves all the buckets of each primary in one map edit and about one
// report, not one of each per bucket: it is silent on one stream, and the first report takes it
// out of every bucket of that primary. With 48 buckets n3 backs 32 of them; as one edit each
// the removals alone took 32 epochs, and a report per bucket made 32 reports.
TEST_F(ReplicationFailoverTest, ADeadBackupLeavesEachPrimarysBucketsInOneEdit) {
  bucket_count_ = 48;
  Run(/*auto_balance=*/false, [&] {
    size_t backed = 0;
    for (const auto& bucket : map()->buckets()) {
      if (bucket.replicas.front() != kN3 && bucket.HasReplica(kN3)) ++backed;
    }
    ASSERT_EQ(backed, 32u);
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    const MapEpoch before = map()->epoch();
    const uint64_t reports_before = cluster_->node(kN1)->counters().backup_reports +
                                    cluster_->node(kN2)->counters().backup_reports;
    ASSERT_TRUE(cluster_->CrashNode(kN3).ok());
    ASSERT_TRUE(WaitFor([&] { return !Holds(kN3); }, 20 * kSecond));
    const uint64_t edits = map()->epoch().value() - before.value();
    const uint64_t reports = cluster_->node(kN1)->counters().backup_reports +
                             cluster_->node(kN2)->counters().backup_reports - reports_before;
    std::printf("map edits until n3 left every bucket: %llu, reports of n3: %llu\n",
                static_cast<unsigned long long>(edits), static_cast<unsigned long long>(reports));
    EXPECT_LE(edits, 8u);  // two primaries' removals, and n3's own primaries' failovers
    // One report per primary would do; a report for each of the 32 buckets n3 backs is waste.
    EXPECT_LE(reports, 8u);
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
  });
}

TEST_F(ReplicationFailoverTest, APrimaryThatRestartedServesNothingUntilANewTerm) {
  Run(/*auto_balance=*/false, [&] {
    const std::vector<BucketId> held = PrimariesOf(kN1);
    std::map<BucketId, Term> terms;
    for (BucketId b : held) terms[b] = map()->Find(b)->term;
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    // Back 50 ms later, long before failover_timeout: only its fence tells the coordinator.
    ASSERT_TRUE(cluster_->CrashNode(kN1).ok());
    ASSERT_TRUE(sim_.Sleep(50 * kMs).ok());
    ASSERT_TRUE(cluster_->StartNode(kN1).ok());
    ASSERT_TRUE(WaitFor(
        [&] {
          return std::all_of(held.begin(), held.end(),
                             [&](BucketId b) { return map()->Find(b)->term > terms[b]; });
        },
        20 * kSecond));
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
  });
}

TEST_F(ReplicationFailoverTest, AtTheFloorASilentBackupStaysListedAndWritesWaitForIt) {
  Run(/*auto_balance=*/false, [&] {
    ASSERT_EQ(map()->Find(kB0)->replicas, (std::vector<NodeId>{kN1, kN2, kN3}));
    int doc = -1;
    for (int i = 0; i < kDocuments && doc < 0; ++i) {
      if (map()->Lookup(PointOf(collection_, Key(i))).id == kB0) doc = i;
    }
    ASSERT_GE(doc, 0);
    // n3 dies and leaves b0; then n2 dies: b0 is at min_in_sync (2), so n2 stays listed.
    ASSERT_TRUE(cluster_->CrashNode(kN3).ok());
    ASSERT_TRUE(WaitFor([&] { return !map()->Find(kB0)->HasReplica(kN3); }, 20 * kSecond));
    ASSERT_TRUE(cluster_->CrashNode(kN2).ok());
    client::Client writer(sim_);
    Status refused;
    ASSERT_TRUE(WaitFor(
        [&] {
          refused = writer.Update(collection_, Key(doc), Body(doc)).status();
          return refused.ToString().find("min_in_sync") != std::string::npos;
        },
        20 * kSecond))
        << refused;
    EXPECT_EQ(map()->Find(kB0)->replicas, (std::vector<NodeId>{kN1, kN2}));
    // n2 comes back on its directory: it answers again, and b0 takes writes.
    ASSERT_TRUE(cluster_->StartNode(kN2).ok());
    ASSERT_TRUE(
        WaitFor([&] { return writer.Update(collection_, Key(doc), "{}").ok(); }, 20 * kSecond));
    EXPECT_EQ(map()->Find(kB0)->replicas, (std::vector<NodeId>{kN1, kN2}));
  });
}

TEST_F(ReplicationFailoverTest, ANodeBackWithAWipedDirectoryIsResetNeverPromoted) {
  Run(/*auto_balance=*/false, [&] {
    // Every node's store is bound in the map from its first heartbeats.
    ASSERT_TRUE(WaitFor([&] {
      return std::all_of(map()->nodes().begin(), map()->nodes().end(),
                         [](const cluster::NodeInfo& n) { return n.store_id != 0; });
    }));
    const uint64_t old_store = map()->FindNode(kN3)->store_id;
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    ASSERT_TRUE(cluster_->CrashNode(kN3).ok());
    ASSERT_TRUE(sim_.Sleep(50 * kMs).ok());
    std::error_code ec;
    std::filesystem::remove_all(fmt::format("{}/node-3", dir_), ec);
    ASSERT_FALSE(ec) << ec.message();
    ASSERT_TRUE(cluster_->StartNode(kN3).ok());
    // n3 comes back empty under a new store id: it is taken out of every bucket (its primaries
    // fail over first) and its new store is bound.
    ASSERT_TRUE(WaitFor(
        [&] {
          const auto* info = map()->FindNode(kN3);
          return info->store_id != old_store && !Holds(kN3);
        },
        20 * kSecond));
    EXPECT_EQ(map()->FindNode(kN3)->store_id, cluster_->node(kN3)->store()->store_id());
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
  });
}

// The coordinator crashes at each step of a failover and restarts 50 ms later: the new one
// finds the primary still silent and fails over again (the seals it sends are the same).
class CoordinatorCrashDuringFailoverTest : public ReplicationFailoverTest,
                                           public ::testing::WithParamInterface<const char*> {};

TEST_P(CoordinatorCrashDuringFailoverTest, TheFailoverEndsAndNoAcknowledgedWriteIsLost) {
  const std::string failpoint = GetParam();
  bool crashed = false;
  bool restarted = false;
  Status restart_status;
  sim_.SetChaosHook([&](const Address& process, std::string_view name) {
    if (crashed || process != Address::Coordinator() || name != failpoint) return false;
    crashed = true;
    sim_.Spawn(Address::Client(3), "restart-coordinator", [&] {
      if (sim_.Sleep(50 * kMs).ok()) restart_status = cluster_->StartCoordinator();
      restarted = true;
    });
    return true;
  });
  Run(/*auto_balance=*/false, [&] {
    const std::vector<BucketId> lost = PrimariesOf(kN1);
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    ASSERT_TRUE(cluster_->CrashNode(kN1).ok());
    ASSERT_TRUE(WaitFor([&] { return restarted; }, 20 * kSecond)) << failpoint << " not reached";
    ASSERT_TRUE(restart_status.ok()) << restart_status;
    ASSERT_TRUE(WaitFor([&] { return PrimariesOf(kN1).empty(); }, 20 * kSecond));
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
    for (BucketId b : lost) EXPECT_FALSE(map()->Find(b)->HasReplica(kN1)) << b.DebugString();
  });
  sim_.SetChaosHook(nullptr);
}

INSTANTIATE_TEST_SUITE_P(Steps, CoordinatorCrashDuringFailoverTest,
                         ::testing::Values("coordinator.after_seal", "coordinator.before_promote",
                                           "coordinator.after_promote"));

TEST_F(ReplicationFailoverTest, AKOneClusterRunsNoReplicaManager) {
  replication_factor_ = 1;
  Run(/*auto_balance=*/false, [&] {
    EXPECT_EQ(map()->replication_factor(), 1u);
    ASSERT_TRUE(cluster_->CrashNode(kN2).ok());
    ASSERT_TRUE(sim_.Sleep(3 * kSecond).ok());
    // Nothing fails over at K = 1: n2's buckets wait for it.
    EXPECT_FALSE(PrimariesOf(kN2).empty());
    ASSERT_TRUE(cluster_->StartNode(kN2).ok());
    ExpectAllDocumentsReadable();
  });
}

}  // namespace
}  // namespace shoal::coordinator
