// Unit tests of the Coordinator: an EmbeddedCluster (coordinator, metadata store, three storage
// nodes) on a SimRuntime without loss. Each test pins one rule of docs/design/cluster.md
// ("Coordinator"); the move log is read back from the metadata store once the cluster is closed.

#include "src/coordinator/coordinator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/storage/collection_name.h"
#include "src/storage/errors.h"
#include "tests/support/coordinator_test_fixture.h"

namespace shoal::coordinator {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fixture

TEST_F(CoordinatorTest, MoveBucketCommitsAndHandsTheBucketToTheDestination) {
  Run(/*auto_balance=*/false, [&] {
    const ShardMapPtr before = map();
    ASSERT_EQ(before->Find(kB0)->replicas, std::vector<NodeId>{kN1});
    const storage::PointRange range = RangeOf(*before->Find(kB0));
    const int documents = DocumentsIn(*before, kB0);
    ASSERT_GT(documents, 0);

    Status moved = Admin([](Coordinator& c) { return c.MoveBucket(kB0, kN2); });
    ASSERT_TRUE(moved.ok()) << moved;

    const ShardMapPtr after = map();
    EXPECT_GT(after->epoch(), before->epoch());
    EXPECT_EQ(after->Find(kB0)->replicas, std::vector<NodeId>{kN2});
    EXPECT_FALSE(after->Find(kB0)->transition.has_value());
    EXPECT_EQ(after->TransitionCount(), 0u);
    const MoveProgress progress = coordinator().progress();
    EXPECT_EQ(progress.started, 1u);
    EXPECT_EQ(progress.committed, 1u);
    EXPECT_EQ(progress.finished, 1u);
    EXPECT_EQ(progress.aborted, 0u);
    EXPECT_EQ(progress.in_flight, 0u);
    EXPECT_GT(progress.bytes_moved, 0u);
    // A MoveBucket call plans 0 bytes; the exported size replaces it, and the snapshot was
    // copied before the commit.
    EXPECT_EQ(progress.bytes_planned, progress.bytes_moved);
    EXPECT_EQ(progress.bytes_copied, progress.bytes_moved);
    // One fence window, each of whose steps took simulated time.
    ASSERT_EQ(progress.fence_windows.size(), 1u);
    const FenceWindow& window = progress.fence_windows.front();
    EXPECT_GT(window.fence_call_micros, 0);
    EXPECT_GT(window.drain_micros, 0);
    EXPECT_GT(window.commit_micros, 0);
    // The destination's own account of the drain (reading and applying the source's changes;
    // none here if it had caught up before the fence) lies within the coordinator's.
    EXPECT_LE(window.drain_read_micros + window.drain_apply_micros, window.drain_micros);

    // The nodes learned the map; the source dropped its copy, the destination holds the data.
    EXPECT_EQ(cluster_->node(kN1)->RoleOf(kB0), node::LocalRole::kNotAssigned);
    EXPECT_EQ(cluster_->node(kN2)->RoleOf(kB0), node::LocalRole::kReadWrite);
    EXPECT_EQ(StoredIn(kN1, range), 0u);
    EXPECT_EQ(StoredIn(kN2, range), static_cast<uint64_t>(documents));
    ExpectAllDocumentsReadable();
  });
  const auto log = MoveLog();
  ASSERT_EQ(log.size(), 1u);
  ASSERT_EQ(log.count(LogKey(1)), 1u);
  EXPECT_EQ(log.at(LogKey(1)).rfind("DONE", 0), 0u) << log.at(LogKey(1));
}

TEST_F(CoordinatorTest, MoveIsRefusedToANodeThatHoldsTheBucketOrIsLeaving) {
  Run(/*auto_balance=*/false, [&] {
    const MapEpoch start = map()->epoch();
    Status to_holder = Admin([](Coordinator& c) { return c.MoveBucket(kB0, kN1); });
    EXPECT_EQ(to_holder.code(), StatusCode::kFailedPrecondition) << to_holder;
    Status to_stranger = Admin([](Coordinator& c) { return c.MoveBucket(kB0, NodeId(9)); });
    EXPECT_EQ(to_stranger.code(), StatusCode::kFailedPrecondition) << to_stranger;
    Status no_bucket = Admin([](Coordinator& c) { return c.MoveBucket(BucketId(99), kN2); });
    EXPECT_EQ(no_bucket.code(), StatusCode::kNotFound) << no_bucket;
    EXPECT_EQ(map()->epoch(), start);

    ASSERT_TRUE(Admin([](Coordinator& c) { return c.RemoveNode(kN3); }).ok());
    const ShardMapPtr leaving = map();
    ASSERT_EQ(leaving->FindNode(kN3)->state, cluster::NodeState::kLeaving);
    Status to_leaving = Admin([](Coordinator& c) { return c.MoveBucket(kB0, kN3); });
    EXPECT_EQ(to_leaving.code(), StatusCode::kFailedPrecondition) << to_leaving;
    EXPECT_EQ(map()->epoch(), leaving->epoch());
    EXPECT_EQ(map()->TransitionCount(), 0u);
    EXPECT_EQ(coordinator().progress().started, 0u);
    // Without the balancer the leaving node keeps its buckets.
    EXPECT_FALSE(map()->BucketsOf(kN3).empty());
    ExpectAllDocumentsReadable();
  });
  EXPECT_TRUE(MoveLog().empty());
}

TEST_F(CoordinatorTest, SplitAndMergeChangeTheMap) {
  Run(/*auto_balance=*/false, [&] {
    const ShardMapPtr before = map();
    const cluster::BucketPlacement original = *before->Find(kB0);
    const BucketId upper = before->NextBucketId();

    ASSERT_TRUE(Admin([](Coordinator& c) { return c.SplitBucket(kB0); }).ok());
    const ShardMapPtr split = map();
    EXPECT_EQ(split->epoch().value(), before->epoch().value() + 1);
    EXPECT_EQ(split->buckets().size(), before->buckets().size() + 1);
    ASSERT_NE(split->Find(upper), nullptr);
    EXPECT_EQ(split->Find(kB0)->range.begin(), original.range.begin());
    EXPECT_EQ(split->Find(kB0)->range.end(), original.range.Midpoint());
    EXPECT_EQ(split->Find(upper)->range.begin(), original.range.Midpoint());
    EXPECT_EQ(split->Find(upper)->range.end(), original.range.end());
    EXPECT_EQ(split->Find(upper)->replicas, original.replicas);
    ExpectAllDocumentsReadable();

    // At a chosen point.
    const uint64_t at = split->Find(upper)->range.begin() + 12345;
    ASSERT_TRUE(Admin([upper, at](Coordinator& c) { return c.SplitBucket(upper, at); }).ok());
    const BucketId third = split->NextBucketId();
    ASSERT_NE(map()->Find(third), nullptr);
    EXPECT_EQ(map()->Find(third)->range.begin(), at);

    // Merges: not adjacent, then back to the original bucket.
    Status not_adjacent = Admin([third](Coordinator& c) { return c.MergeBuckets(kB0, third); });
    EXPECT_FALSE(not_adjacent.ok());
    ASSERT_TRUE(
        Admin([upper, third](Coordinator& c) { return c.MergeBuckets(upper, third); }).ok());
    ASSERT_TRUE(Admin([upper](Coordinator& c) { return c.MergeBuckets(kB0, upper); }).ok());
    const ShardMapPtr merged = map();
    EXPECT_EQ(merged->buckets().size(), before->buckets().size());
    EXPECT_EQ(merged->Find(kB0)->range, original.range);
    EXPECT_EQ(merged->Find(upper), nullptr);
    // Buckets on different nodes cannot merge.
    const BucketId right = merged->buckets()[1].id;
    ASSERT_NE(merged->buckets()[1].replicas, original.replicas);
    Status different_nodes = Admin([right](Coordinator& c) { return c.MergeBuckets(kB0, right); });
    EXPECT_EQ(different_nodes.code(), StatusCode::kFailedPrecondition) << different_nodes;
    EXPECT_EQ(map()->epoch(), merged->epoch());
    ExpectAllDocumentsReadable();
  });
}

// The coordinator itself refuses a collection name outside storage::ValidateCollectionName,
// whichever client sends it, before anything reaches the metadata store.
TEST_F(CoordinatorTest, CreateCollectionRefusesANameOutsideTheRuleAndRecordsNothing) {
  Run(/*auto_balance=*/false, [&] {
    for (const std::string& name :
         {std::string("bad\nname"), std::string("a\0b", 3), std::string(), std::string(257, 'x'),
          std::string("a b"), std::string("../x")}) {
      auto answer = sim_.Call(Address::Coordinator(),
                              transport::CreateCollectionRequest{.name = name}, kSecond);
      ASSERT_TRUE(answer.ok()) << answer.status();
      EXPECT_EQ(answer->status.code(), StatusCode::kInvalidArgument) << answer->status;
      EXPECT_TRUE(storage::Is(answer->status, storage::ErrorReason::kInvalidArgument));
    }
    auto longest = Admin([](Coordinator& c) {
      return c.CreateCollection(std::string(storage::kMaxCollectionNameBytes, 'x')).status();
    });
    EXPECT_TRUE(longest.ok()) << longest;
    ASSERT_TRUE(
        Admin([](Coordinator& c) { return c.CreateCollection("split-move.v2").status(); }).ok());
    std::vector<std::string> names;
    for (const auto& spec : coordinator().State().collections) names.push_back(spec.name);
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names,
              (std::vector<std::string>{"docs", "split-move.v2",
                                        std::string(storage::kMaxCollectionNameBytes, 'x')}));
  });
  EXPECT_EQ(
      MetadataEntries("cluster/collections/"),
      (std::map<std::string, std::string>{
          {"cluster/collections/docs", "1"},
          {"cluster/collections/split-move.v2", "3"},
          {"cluster/collections/" + std::string(storage::kMaxCollectionNameBytes, 'x'), "2"}}));
}

TEST(ThresholdsTest, BoundsAndGapAreCheckedToTheByte) {
  const auto valid = [](uint64_t split, uint64_t merge) {
    return ValidateThresholds({.split_bytes = split, .merge_bytes = merge}).ok();
  };
  EXPECT_TRUE(valid(0, 0));
  EXPECT_TRUE(valid(kMinThresholdBytes, 0));
  EXPECT_FALSE(valid(kMinThresholdBytes - 1, 0));
  EXPECT_TRUE(valid(kMaxThresholdBytes, 0));
  EXPECT_FALSE(valid(kMaxThresholdBytes + 1, 0));
  EXPECT_TRUE(valid(0, kMinThresholdBytes));  // merging alone cannot oscillate
  EXPECT_FALSE(valid(0, kMinThresholdBytes - 1));
  EXPECT_FALSE(valid(0, kMaxThresholdBytes + 1));
  // 2 * merge < split.
  EXPECT_TRUE(valid(4 * kMinThresholdBytes + 1, 2 * kMinThresholdBytes));
  EXPECT_FALSE(valid(4 * kMinThresholdBytes, 2 * kMinThresholdBytes));
  EXPECT_FALSE(valid(kMaxThresholdBytes, kMaxThresholdBytes));
}

TEST_F(CoordinatorTest, LoweringTheSplitThresholdMakesTheBalancerSplit) {
  Run(/*auto_balance=*/true, [&] {
    // About 1.3 MB over 8 buckets: most buckets hold well above the lowest threshold (64 KiB).
    const std::string big = fmt::format(R"({{"pad":"{}"}})", std::string(32 << 10, 'x'));
    for (int i = 0; i < 40; ++i) {
      ASSERT_TRUE(client_->Insert(collection_, fmt::format("big{}", i), big).ok());
    }
    const size_t buckets = map()->buckets().size();
    EXPECT_EQ(coordinator().thresholds().split_bytes, 0u);
    // Bad values are refused and change nothing: below the bound, and merge too close to split.
    EXPECT_EQ(
        Admin([](Coordinator& c) { return c.SetThresholds(kMinThresholdBytes - 1, {}); }).code(),
        StatusCode::kInvalidArgument);
    EXPECT_EQ(Admin([](Coordinator& c) {
                return c.SetThresholds(kMinThresholdBytes * 2, kMinThresholdBytes);
              }).code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(coordinator().thresholds().split_bytes, 0u);
    EXPECT_EQ(coordinator().thresholds().merge_bytes, 0u);
    EXPECT_EQ(map()->buckets().size(), buckets);

    ASSERT_TRUE(Admin([](Coordinator& c) { return c.SetThresholds(kMinThresholdBytes, {}); }).ok());
    EXPECT_EQ(coordinator().thresholds().split_bytes, kMinThresholdBytes);
    ASSERT_TRUE(WaitFor([&] { return map()->buckets().size() > buckets; }));
    ExpectAllDocumentsReadable();
  });
}

TEST_F(CoordinatorTest, PlanUsesTheThresholdsInForce) {
  Run(/*auto_balance=*/false, [&] {
    auto plan = coordinator().Plan();
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_TRUE(plan->plan.splits.empty());
    EXPECT_TRUE(plan->plan.merges.empty());

    // The loaded documents are tiny: with a merge threshold, neighbours on the same nodes merge.
    ASSERT_TRUE(Admin([](Coordinator& c) { return c.SetThresholds(0, kMinThresholdBytes); }).ok());
    plan = coordinator().Plan();
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_TRUE(plan->plan.splits.empty());
    EXPECT_FALSE(plan->plan.merges.empty());

    // About 1.3 MB over 8 buckets: with the lowest split threshold, buckets split (in several
    // rounds: a split halves a bucket).
    const std::string big = fmt::format(R"({{"pad":"{}"}})", std::string(32 << 10, 'x'));
    for (int i = 0; i < 40; ++i) {
      ASSERT_TRUE(client_->Insert(collection_, fmt::format("big{}", i), big).ok());
    }
    const ShardMapPtr before = map();
    ASSERT_TRUE(Admin([](Coordinator& c) { return c.SetThresholds(kMinThresholdBytes, 0); }).ok());
    plan = coordinator().Plan();
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_GT(plan->plan.splits.size(), before->buckets().size());
    EXPECT_TRUE(plan->plan.merges.empty());
    EXPECT_EQ(map()->epoch(), before->epoch()) << "a plan changes nothing";
  });
}

// The preview plans with the rounds' options: with a floor of 8 buckets (what `shoal coordinator
// --buckets 8` sets), it lists no merge of the 8, as the rounds would make none. It listed some
// when it planned without the floor.
TEST_F(CoordinatorTest, PlanKeepsTheBucketFloorAsTheRoundsDo) {
  min_buckets_ = 8;
  Run(/*auto_balance=*/false, [&] {
    ASSERT_EQ(map()->buckets().size(), 8u);
    ASSERT_TRUE(Admin([](Coordinator& c) { return c.SetThresholds(0, kMinThresholdBytes); }).ok());
    auto plan = coordinator().Plan();
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_TRUE(plan->plan.merges.empty()) << plan->plan.DebugString();
  });
}

TEST_F(CoordinatorTest, RemoveNodeWithTheBalancerDrainsAndRemovesIt) {
  Run(/*auto_balance=*/true, [&] {
    ASSERT_FALSE(map()->BucketsOf(kN3).empty());
    ASSERT_TRUE(Admin([](Coordinator& c) { return c.RemoveNode(kN3); }).ok());
    ASSERT_TRUE(WaitFor([&] { return !map()->HasNode(kN3) && map()->TransitionCount() == 0; }));
    for (const auto& bucket : map()->buckets()) {
      EXPECT_NE(bucket.replicas.front(), kN3) << bucket.DebugString();
    }
    const MoveProgress progress = coordinator().progress();
    EXPECT_GT(progress.committed, 0u);
    // Balancer moves start with the planned size; every committed move copied its bytes first.
    EXPECT_GT(progress.bytes_planned, 0u);
    EXPECT_GE(progress.bytes_copied, progress.bytes_moved);
    EXPECT_EQ(StoredIn(kN3, storage::PointRange::All()), 0u);
    ExpectAllDocumentsReadable();
  });
}

TEST_F(CoordinatorTest, PlanReportsMovesWithoutChangingTheMap) {
  Run(/*auto_balance=*/false, [&] {
    const ShardMapPtr before = map();
    auto plan = coordinator().Plan(NodeId(4));
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_GT(plan->buckets, 0u);
    EXPECT_EQ(plan->buckets, plan->plan.moves.size());
    EXPECT_GT(plan->bytes, 0u);
    EXPECT_GT(plan->estimated_seconds, 0.0);
    for (const auto& move : plan->plan.moves) {
      EXPECT_EQ(move.destination, std::vector<NodeId>{NodeId(4)});
    }

    auto drain = coordinator().Plan(std::nullopt, kN1);
    ASSERT_TRUE(drain.ok()) << drain.status();
    // Every bucket of n1 leaves it (the plan may then balance the rest).
    for (BucketId bucket : before->BucketsOf(kN1)) {
      EXPECT_TRUE(std::any_of(drain->plan.moves.begin(), drain->plan.moves.end(),
                              [&](const cluster::MoveIntent& move) {
                                return move.bucket == bucket &&
                                       move.source == std::vector<NodeId>{kN1};
                              }))
          << bucket.DebugString();
    }
    EXPECT_GE(drain->buckets, before->BucketsOf(kN1).size());
    EXPECT_GT(drain->bytes, 0u);

    EXPECT_EQ(map()->epoch(), before->epoch());
    EXPECT_FALSE(map()->HasNode(NodeId(4)));
    EXPECT_EQ(map()->FindNode(kN1)->state, cluster::NodeState::kActive);
    EXPECT_EQ(coordinator().progress().started, 0u);
  });
}

// FAILURE-PATTERNS 3 at the coordinator: a catch-up round that finds nothing, then writes before
// the fence. Nothing is written after the export, so the first round of b0's move reads an empty
// batch; while the destination holds that answer, a writer changes b0 and other buckets (or, in
// the second case, only other buckets: the drain then reads nothing of b0 yet must reach the
// fence's sequence). The coordinator ends its rounds on the empty one and fences; the drain must
// carry every write to b0, and the move commits.
enum class WritesAfterTheEmptyRound : uint8_t { kInTheMovingBucket, kElsewhereOnly };

class EmptyRoundTest : public CoordinatorTest,
                       public ::testing::WithParamInterface<WritesAfterTheEmptyRound> {};

TEST_P(EmptyRoundTest, WritesAfterAnEmptyRoundReachTheDestinationThroughTheDrain) {
  const bool into_b0 = GetParam() == WritesAfterTheEmptyRound::kInTheMovingBucket;
  Run(/*auto_balance=*/false, [&] {
    std::vector<int> in_b0;
    std::vector<int> elsewhere;
    for (int i = 0; i < kDocuments; ++i) {
      (map()->Lookup(PointOf(collection_, Key(i))).id == kB0 ? in_b0 : elsewhere).push_back(i);
    }
    ASSERT_GE(in_b0.size(), 2u);
    ASSERT_FALSE(elsewhere.empty());
    std::string fresh_in_b0;  // a key that b0 does not hold yet
    for (int j = 0; fresh_in_b0.empty(); ++j) {
      const std::string key = fmt::format("fresh{}", j);
      if (map()->Lookup(PointOf(collection_, key)).id == kB0) fresh_in_b0 = key;
    }

    // What the writer does, and what each document must read afterwards (nullopt: deleted).
    std::map<std::string, std::optional<std::string>> expected;
    for (int i = 0; i < kDocuments; ++i) expected[Key(i)] = Body(i);
    uint64_t writes_to_b0 = 0;
    int hits = 0;
    uint64_t applied_before_the_writes = 1;
    bool written = false;
    Status write_status;
    sim_.SetChaosHook([&](const Address& process, std::string_view failpoint) {
      if (process != Address::Node(kN2) || failpoint != "destination.after_apply") return false;
      if (hits++ > 0) return false;
      applied_before_the_writes = cluster_->node(kN2)->counters().changes_applied;
      sim_.Spawn(Address::Client(5), "writer", [&] {
        client::Client writer(sim_);
        auto check = [&](const Status& s) {
          if (write_status.ok() && !s.ok()) write_status = s;
        };
        if (into_b0) {
          const std::string updated = Key(in_b0[0]);
          const std::string deleted = Key(in_b0[1]);
          check(writer.Update(collection_, updated, Body(1000)).status());
          check(writer.Delete(collection_, deleted).status());
          check(writer.Insert(collection_, fresh_in_b0, Body(1001)).status());
          expected[updated] = Body(1000);
          expected[deleted] = std::nullopt;
          expected[fresh_in_b0] = Body(1001);
          writes_to_b0 = 3;
        }
        for (int i : elsewhere) {
          check(writer.Update(collection_, Key(i), Body(2000 + i)).status());
          expected[Key(i)] = Body(2000 + i);
        }
        written = true;
      });
      // The destination's empty answer waits until the writes are acknowledged.
      while (!written) {
        if (!sim_.Sleep(kMs).ok()) break;
      }
      return false;
    });

    Status moved = Admin([](Coordinator& c) { return c.MoveBucket(kB0, kN2); });
    sim_.SetChaosHook(nullptr);
    ASSERT_TRUE(moved.ok()) << moved;
    ASSERT_TRUE(written);
    ASSERT_TRUE(write_status.ok()) << write_status;
    EXPECT_EQ(applied_before_the_writes, 0u) << "the first catch-up round was not empty";
    // Every change the destination applied came after the empty round, so through the drain.
    EXPECT_EQ(cluster_->node(kN2)->counters().changes_applied, writes_to_b0);
    EXPECT_EQ(map()->Find(kB0)->replicas, std::vector<NodeId>{kN2});
    ExpectOnlyOwnerAcknowledgesB0(kN2);
    client::Client reader(sim_);
    for (const auto& [key, body] : expected) {
      auto got = reader.Get(collection_, key);
      if (body.has_value()) {
        ASSERT_TRUE(got.ok()) << key << ": " << got.status();
        EXPECT_EQ(got->body, *body) << key;
      } else {
        EXPECT_EQ(got.status().code(), StatusCode::kNotFound) << key << ": " << got.status();
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Writes, EmptyRoundTest,
                         ::testing::Values(WritesAfterTheEmptyRound::kInTheMovingBucket,
                                           WritesAfterTheEmptyRound::kElsewhereOnly),
                         [](const ::testing::TestParamInfo<WritesAfterTheEmptyRound>& info) {
                           return info.param == WritesAfterTheEmptyRound::kInTheMovingBucket
                                      ? std::string("InTheMovingBucket")
                                      : std::string("ElsewhereOnly");
                         });

// A coordinator crash at a failpoint of a move, then a new coordinator incarnation: recovery
// ends with no transition in the map, every document readable, and one owner per bucket.
struct CrashCase {
  const char* failpoint;
  bool committed;  // the destination owns the bucket in the end
  cluster::TransitionMode mode = cluster::TransitionMode::kCopyThenSwitch;
};

class CoordinatorCrashTest : public CoordinatorTest,
                             public ::testing::WithParamInterface<CrashCase> {};

TEST_P(CoordinatorCrashTest, RecoveryFinishesOrAbortsTheMove) {
  const CrashCase crash = GetParam();
  bool crashed = false;
  sim_.SetChaosHook([&](const Address& process, std::string_view failpoint) {
    if (crashed || process != Address::Coordinator() || failpoint != crash.failpoint) {
      return false;
    }
    crashed = true;
    return true;
  });
  Run(/*auto_balance=*/false, [&] {
    const MapEpoch start = map()->epoch();
    Status moved = Admin([&](Coordinator& c) { return c.MoveBucket(kB0, kN2, crash.mode); });
    EXPECT_EQ(moved.code(), StatusCode::kCancelled) << moved;
    ASSERT_TRUE(crashed);
    ASSERT_FALSE(sim_.IsAlive(Address::Coordinator()));
    EXPECT_GT(map()->epoch(), start);

    ASSERT_TRUE(cluster_->StartCoordinator().ok());
    ASSERT_TRUE(WaitFor([&] { return coordinator().recovered(); }));
    ASSERT_TRUE(WaitFor([&] { return map()->TransitionCount() == 0; }));
    ExpectB0EndedOn(crash.committed);
    // Recovery finishes the cleanup: the node that lost the bucket keeps none of it.
    const storage::PointRange b0 = RangeOf(*map()->Find(kB0));
    EXPECT_EQ(StoredIn(crash.committed ? kN1 : kN2, b0), 0u);
  });
  sim_.SetChaosHook(nullptr);
  const auto log = MoveLog();
  ASSERT_EQ(log.count(LogKey(1)), 1u);
  EXPECT_EQ(log.at(LogKey(1)).rfind(crash.committed ? "DONE" : "ABORT", 0), 0u)
      << log.at(LogKey(1));
}

INSTANTIATE_TEST_SUITE_P(
    Failpoints, CoordinatorCrashTest,
    ::testing::Values(CrashCase{.failpoint = "coordinator.after_begin", .committed = false},
                      CrashCase{.failpoint = "coordinator.after_export", .committed = false},
                      CrashCase{.failpoint = "coordinator.after_ingest", .committed = false},
                      CrashCase{.failpoint = "coordinator.before_fence", .committed = false},
                      CrashCase{.failpoint = "coordinator.before_commit", .committed = false},
                      CrashCase{.failpoint = "coordinator.after_commit", .committed = true},
                      // kCleanup stored, the source's drop not sent (FAILURE-PATTERNS 5).
                      CrashCase{.failpoint = "coordinator.after_cleanup", .committed = true},
                      CrashCase{.failpoint = "coordinator.before_done", .committed = true},
                      // Switch-then-copy: aborted before the switch, rolled forward after it.
                      CrashCase{.failpoint = "coordinator.after_begin",
                                .committed = false,
                                .mode = cluster::TransitionMode::kSwitchThenCopy},
                      CrashCase{.failpoint = "coordinator.before_switch",
                                .committed = false,
                                .mode = cluster::TransitionMode::kSwitchThenCopy},
                      CrashCase{.failpoint = "coordinator.after_switch",
                                .committed = true,
                                .mode = cluster::TransitionMode::kSwitchThenCopy},
                      CrashCase{.failpoint = "coordinator.after_seal",
                                .committed = true,
                                .mode = cluster::TransitionMode::kSwitchThenCopy},
                      CrashCase{.failpoint = "coordinator.before_commit",
                                .committed = true,
                                .mode = cluster::TransitionMode::kSwitchThenCopy},
                      CrashCase{.failpoint = "coordinator.after_commit",
                                .committed = true,
                                .mode = cluster::TransitionMode::kSwitchThenCopy},
                      CrashCase{.failpoint = "coordinator.after_cleanup",
                                .committed = true,
                                .mode = cluster::TransitionMode::kSwitchThenCopy},
                      CrashCase{.failpoint = "coordinator.before_done",
                                .committed = true,
                                .mode = cluster::TransitionMode::kSwitchThenCopy}),
    [](const ::testing::TestParamInfo<CrashCase>& info) {
      std::string name = info.param.failpoint;
      if (info.param.mode == cluster::TransitionMode::kSwitchThenCopy) name = "switch_" + name;
      std::replace(name.begin(), name.end(), '.', '_');
      return name;
    });

}  // namespace
}  // namespace shoal::coordinator
