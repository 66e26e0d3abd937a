// Splits and merges of replicated buckets in an embedded cluster (docs/design/replication.md §7;
// coordinator/resizer.h): K = 3 copies of every bucket while a writer updates every document in
// rounds. The coordinator quiesces a bucket's primary (its writes queue until every write it
// ordered is on every replica), then commits the split or merge at that same epoch. The upper half
// of a split and a merged bucket start a history of their own under a new term. In every case
// writes go on, no acknowledged write is lost, and once the writer stops every copy of every
// bucket equals its primary's, key by key and position by position. A coordinator that dies
// between the quiesce and the commit leaves the primary quiesced; its heartbeats have the next
// coordinator release it. A primary that dies under the quiesce fails over in both halves.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/coordinator/coordinator.h"
#include "tests/support/coordinator_test_fixture.h"

namespace shoal::coordinator {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fixture

class ReplicationResizeTest : public CoordinatorTest {
 protected:
  ReplicationResizeTest() { replication_factor_ = 3; }

  // Runs a split or merge, again while the map changed under it (kAborted) or the primary did
  // not settle in time (kUnavailable).
  Status Resize(const std::function<Status(Coordinator&)>& fn) {
    Status status;
    for (int attempt = 0; attempt < 20; ++attempt) {
      status = Admin(fn);
      if (status.code() != StatusCode::kAborted && status.code() != StatusCode::kUnavailable) {
        return status;
      }
      if (!sim_.Sleep(100 * kMs).ok()) return status;
    }
    return status;
  }
};

TEST_F(ReplicationResizeTest, SplitsUnderWritesKeepEveryCopyEqual) {
  Run(/*auto_balance=*/false, [&] {
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    std::vector<BucketId> initial;
    for (const auto& bucket : map()->buckets()) initial.push_back(bucket.id);
    for (BucketId bucket : initial) {
      const BucketId upper = map()->NextBucketId();
      const Term term = map()->Find(bucket)->term;
      Status split = Resize([bucket](Coordinator& c) { return c.SplitBucket(bucket); });
      ASSERT_TRUE(split.ok()) << bucket.DebugString() << ": " << split;
      const auto* lower = map()->Find(bucket);
      const auto* upper_half = map()->Find(upper);
      ASSERT_NE(upper_half, nullptr);
      // The lower half goes on in its term; the upper half starts one of its own.
      EXPECT_EQ(lower->term, term);
      EXPECT_GT(upper_half->term, term);
      EXPECT_EQ(upper_half->replicas, lower->replicas);
    }
    EXPECT_EQ(map()->buckets().size(), 2 * initial.size());
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
    ExpectCopiesEqual();
  });
}

TEST_F(ReplicationResizeTest, MergesUnderWritesKeepEveryCopyEqual) {
  Run(/*auto_balance=*/false, [&] {
    std::vector<std::pair<BucketId, BucketId>> halves;
    std::vector<BucketId> initial;
    for (const auto& bucket : map()->buckets()) initial.push_back(bucket.id);
    for (BucketId bucket : initial) {
      const BucketId upper = map()->NextBucketId();
      ASSERT_TRUE(Resize([bucket](Coordinator& c) { return c.SplitBucket(bucket); }).ok());
      halves.emplace_back(bucket, upper);
    }
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    for (const auto& [lower, upper] : halves) {
      const Term term = map()->Find(lower)->term;
      Status merged =
          Resize([lower, upper](Coordinator& c) { return c.MergeBuckets(lower, upper); });
      ASSERT_TRUE(merged.ok()) << lower.DebugString() << ": " << merged;
      // The merged bucket begins a new term where the lower half's history left off.
      EXPECT_GT(map()->Find(lower)->term, term);
    }
    EXPECT_EQ(map()->buckets().size(), initial.size());
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
    ExpectCopiesEqual();
  });
}

// Merged-away ids come back with later splits (ShardMap::NextBucketId): a copy's state left from
// the id's earlier bucket must not pass for the new one's history.
TEST_F(ReplicationResizeTest, AnIdReusedAfterAMergeStartsAFreshHistory) {
  Run(/*auto_balance=*/false, [&] {
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    const BucketId bucket = map()->buckets().back().id;
    for (int round = 0; round < 3; ++round) {
      const BucketId upper = map()->NextBucketId();
      ASSERT_TRUE(Resize([bucket](Coordinator& c) { return c.SplitBucket(bucket); }).ok());
      ExpectWritesGoOn(*w);
      // Every replica of the upper half holds its history alone: one term, begun at rseq 1.
      const auto* placement = map()->Find(upper);
      ASSERT_NE(placement, nullptr);
      for (NodeId replica : placement->replicas) {
        const auto state = cluster_->node(replica)->store()->GetReplicaState(upper);
        ASSERT_FALSE(state.history.empty()) << replica.DebugString();
        EXPECT_EQ(state.history.front().term, placement->term) << replica.DebugString();
        EXPECT_EQ(state.history.front().first_rseq, 1u) << replica.DebugString();
      }
      ASSERT_TRUE(
          Resize([bucket, upper](Coordinator& c) { return c.MergeBuckets(bucket, upper); }).ok());
    }
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
    ExpectCopiesEqual();
  });
}

TEST_F(ReplicationResizeTest, AQuiesceLeftByACrashedCoordinatorIsReleased) {
  bool crashed = false;
  bool restarted = false;
  Status restart_status;
  sim_.SetChaosHook([&](const Address& process, std::string_view name) {
    if (crashed || process != Address::Coordinator() || name != "coordinator.after_quiesce") {
      return false;
    }
    crashed = true;
    sim_.Spawn(Address::Client(3), "restart-coordinator", [&] {
      if (sim_.Sleep(50 * kMs).ok()) restart_status = cluster_->StartCoordinator();
      restarted = true;
    });
    return true;
  });
  Run(/*auto_balance=*/false, [&] {
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    const size_t buckets = map()->buckets().size();
    const BucketId bucket = map()->buckets().front().id;
    (void)Admin([bucket](Coordinator& c) { return c.SplitBucket(bucket); });
    ASSERT_TRUE(WaitFor([&] { return restarted; }, 20 * kSecond));
    ASSERT_TRUE(restart_status.ok()) << restart_status;
    ASSERT_TRUE(WaitFor([&] { return coordinator().recovered(); }));
    // Nothing was split, and the quiesced bucket takes writes again once released.
    EXPECT_EQ(map()->buckets().size(), buckets);
    ExpectWritesGoOn(*w);
    sim_.SetChaosHook(nullptr);
    ASSERT_TRUE(Resize([bucket](Coordinator& c) { return c.SplitBucket(bucket); }).ok());
    EXPECT_EQ(map()->buckets().size(), buckets + 1);
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
    ExpectCopiesEqual();
  });
  sim_.SetChaosHook(nullptr);
}

// The primary dies between its quiesce and the commit: the split commits (its replicas were
// equal at the quiesce), then both halves fail over to a backup.
TEST_F(ReplicationResizeTest, APrimaryCrashedUnderTheQuiesceFailsOverInBothHalves) {
  bool crashed = false;
  NodeId victim;
  sim_.SetChaosHook([&](const Address& process, std::string_view name) {
    if (crashed || process != Address::Coordinator() || name != "coordinator.after_quiesce") {
      return false;
    }
    crashed = true;
    sim_.Spawn(Address::Client(3), "crash-primary", [&] {
      (void)cluster_->CrashNode(victim);
      if (sim_.Sleep(3 * kSecond).ok()) (void)cluster_->StartNode(victim);
    });
    return false;
  });
  Run(/*auto_balance=*/true, [&] {
    auto w = StartRoundWriter(AllDocuments(), 5 * kMs);
    ASSERT_TRUE(WaitFor([&] { return w->acknowledged_writes > 2 * kDocuments; }));
    const BucketId bucket = map()->buckets().front().id;
    victim = map()->Find(bucket)->replicas.front();
    const BucketId upper = map()->NextBucketId();
    (void)Admin([bucket](Coordinator& c) { return c.SplitBucket(bucket); });
    ASSERT_TRUE(crashed);
    ASSERT_TRUE(WaitFor(
        [&] {
          const auto* lower = map()->Find(bucket);
          const auto* high = map()->Find(upper);
          return lower != nullptr && high != nullptr && lower->replicas.front() != victim &&
                 high->replicas.front() != victim;
        },
        20 * kSecond));
    ExpectWritesGoOn(*w);
    // The victim returns and gets its copies back.
    ASSERT_TRUE(WaitFor(
        [&] {
          for (const auto& b : map()->buckets()) {
            if (b.replicas.size() != 3 || b.transition.has_value()) return false;
          }
          return true;
        },
        60 * kSecond));
    ExpectWritesGoOn(*w);
    StopRoundWriter(*w);
    ExpectNoAcknowledgedRoundLost(*w, AllDocuments());
    ExpectCopiesEqual();
  });
  sim_.SetChaosHook(nullptr);
}

}  // namespace
}  // namespace shoal::coordinator
