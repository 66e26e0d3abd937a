// Unit tests of the Coordinator: an EmbeddedCluster (coordinator, metadata store, three storage
// nodes) on a SimRuntime without loss. Each test pins one rule of docs/design/cluster.md
// ("Coordinator"); the move log is read back from the metadata store once the cluster is closed.

#include "src/coordinator/coordinator.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/client/client.h"
#include "src/common/point.h"
#include "src/metadata/embedded_metadata_store.h"
#include "src/server/embedded_cluster.h"
#include "src/storage/errors.h"
#include "src/transport/sim_runtime.h"

namespace shoal::coordinator {
namespace {

using cluster::ShardMapPtr;
using transport::Address;
using transport::Micros;

constexpr Micros kMs = 1000;
constexpr Micros kSecond = 1'000'000;
constexpr NodeId kN1{1};
constexpr NodeId kN2{2};
constexpr NodeId kN3{3};
constexpr BucketId kB0{0};
constexpr int kDocuments = 40;

std::string Key(int i) { return fmt::format("d{}", i); }
std::string Body(int i) { return fmt::format(R"({{"i":{}}})", i); }

storage::PointRange RangeOf(const cluster::BucketPlacement& bucket) {
  if (bucket.range.end_is_max()) return storage::PointRange::From(bucket.range.begin());
  return *storage::PointRange::Make(bucket.range.begin(), bucket.range.end());
}

class CoordinatorTest : public ::testing::Test {
 protected:
  CoordinatorTest()
      : sim_(transport::SimOptions{.seed = 11, .min_delay = 100, .max_delay = 300, .loss = 0}) {
    static std::atomic<int> counter{0};
    dir_ = (std::filesystem::temp_directory_path() /
            fmt::format("shoal-coordinator-test-{}-{}", getpid(), counter++))
               .string();
  }

  ~CoordinatorTest() override {
    sim_.Shutdown();
    client_.reset();
    cluster_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Starts the cluster on a task, loads kDocuments documents, runs `body`, closes the cluster.
  void Run(bool auto_balance, const std::function<void()>& body) {
    server::EmbeddedClusterOptions options;
    options.data_dir = dir_;
    options.initial_nodes = 3;
    options.buckets = 8;
    options.sync = false;
    options.coordinator.auto_balance = auto_balance;
    options.coordinator.balance_interval = 100 * kMs;
    options.coordinator.call_timeout = 200 * kMs;
    options.coordinator.node_timeout = 2 * kSecond;
    options.node.call_timeout = 200 * kMs;
    options.node.fence_timeout = 500 * kMs;
    options.node.heartbeat_interval = 50 * kMs;
    options.node.store.block_cache_bytes = 1u << 20;
    options.node.store.write_buffer_bytes = 1u << 20;
    options.node.store.background_jobs = 1;
    options.node.store.sync_interval = std::chrono::milliseconds(0);
    cluster_ = std::make_unique<server::EmbeddedCluster>(sim_, options);
    client_ = std::make_unique<client::Client>(sim_);
    bool finished = false;
    sim_.Spawn(Address::Client(1), "test", [&] {
      if (Start()) body();
      EXPECT_TRUE(cluster_->StopAll().ok());
      finished = true;
    });
    sim_.RunUntil(3600 * kSecond);
    EXPECT_TRUE(finished) << "the test task did not finish";
  }

  bool Start() {
    if (Status s = cluster_->Start(); !s.ok()) {
      ADD_FAILURE() << "start: " << s;
      return false;
    }
    if (!WaitFor([&] { return coordinator().recovered(); })) return false;
    auto collection = client_->OpenCollection("docs");
    if (!collection.ok()) {
      ADD_FAILURE() << "collection: " << collection.status();
      return false;
    }
    collection_ = *collection;
    for (int i = 0; i < kDocuments; ++i) {
      auto written = client_->Insert(collection_, Key(i), Body(i));
      if (!written.ok()) {
        ADD_FAILURE() << "insert " << Key(i) << ": " << written.status();
        return false;
      }
    }
    return true;
  }

  Coordinator& coordinator() { return *cluster_->coordinator(); }
  ShardMapPtr map() { return cluster_->coordinator()->map(); }

  // Runs `fn` on a task of the coordinator process (so that a coordinator crash cancels it, as
  // it would a real admin request) and waits for it.
  Status Admin(std::function<Status(Coordinator&)> fn) {
    struct State {
      bool done = false;
      Status status;
    };
    auto state = std::make_shared<State>();
    std::shared_ptr<Coordinator> coordinator = cluster_->coordinator();
    sim_.Spawn(Address::Coordinator(), "admin", [coordinator, fn = std::move(fn), state] {
      state->status = fn(*coordinator);
      state->done = true;
    });
    while (!state->done) {
      if (!sim_.Sleep(kMs).ok()) return CancelledError("test task stopped");
    }
    return state->status;
  }

  // Polls `condition` every 10 ms of simulated time, for at most `limit`.
  bool WaitFor(const std::function<bool()>& condition, Micros limit = 60 * kSecond) {
    const Micros deadline = sim_.Now() + limit;
    while (!condition()) {
      if (sim_.Now() > deadline || !sim_.Sleep(10 * kMs).ok()) {
        ADD_FAILURE() << "condition not reached within " << limit << " us";
        return false;
      }
    }
    return true;
  }

  // Every loaded document reads back with its body (through a fresh client).
  void ExpectAllDocumentsReadable() {
    client::Client reader(sim_);
    for (int i = 0; i < kDocuments; ++i) {
      auto got = reader.Get(collection_, Key(i));
      ASSERT_TRUE(got.ok()) << Key(i) << ": " << got.status();
      EXPECT_EQ(got->body, Body(i)) << Key(i);
    }
  }

  // Documents of the loaded set whose point lies in `bucket` of `map`.
  int DocumentsIn(const cluster::ShardMap& map, BucketId bucket) const {
    int count = 0;
    for (int i = 0; i < kDocuments; ++i) {
      if (map.Lookup(PointOf(collection_, Key(i))).id == bucket) ++count;
    }
    return count;
  }

  // Live documents a node stores in `range` (an exact scan of its store).
  uint64_t StoredIn(NodeId node, const storage::PointRange& range) {
    auto stats = cluster_->node(node)->store()->ComputeStats(range);
    EXPECT_TRUE(stats.ok()) << stats.status();
    return stats.ok() ? stats->documents : 0;
  }

  // The move log (moves/<id> -> record), read from the metadata store once the cluster is gone.
  std::map<std::string, std::string> MoveLog() {
    cluster_.reset();
    metadata::EmbeddedMetadataOptions options;
    options.path = dir_ + "/metadata";
    options.sync = false;
    auto store = metadata::EmbeddedMetadataStore::Open(options);
    EXPECT_TRUE(store.ok()) << store.status();
    if (!store.ok()) return {};
    auto entries = (*store)->List("moves/");
    EXPECT_TRUE(entries.ok()) << entries.status();
    std::map<std::string, std::string> log;
    if (entries.ok()) {
      for (const auto& [key, value] : *entries) log[key] = value.value;
    }
    return log;
  }

  static std::string LogKey(uint64_t move) { return fmt::format("moves/{:020}", move); }

  transport::SimRuntime sim_;
  std::string dir_;
  std::unique_ptr<server::EmbeddedCluster> cluster_;
  std::unique_ptr<client::Client> client_;
  CollectionId collection_;
};

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
    EXPECT_EQ(progress.fence_micros.size(), 1u);

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

TEST_F(CoordinatorTest, RemoveNodeWithTheBalancerDrainsAndRemovesIt) {
  Run(/*auto_balance=*/true, [&] {
    ASSERT_FALSE(map()->BucketsOf(kN3).empty());
    ASSERT_TRUE(Admin([](Coordinator& c) { return c.RemoveNode(kN3); }).ok());
    ASSERT_TRUE(WaitFor([&] { return !map()->HasNode(kN3) && map()->TransitionCount() == 0; }));
    for (const auto& bucket : map()->buckets()) {
      EXPECT_NE(bucket.replicas.front(), kN3) << bucket.DebugString();
    }
    EXPECT_GT(coordinator().progress().committed, 0u);
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

// Switch-then-copy (paper 002 §5.3-5.4): held just after the switch, the destination already
// serves the bucket — reads of documents not yet transferred come from the source, writes are
// applied at the source first — and the transfer that follows keeps every newer version: an
// updated document keeps its update and a deleted one stays deleted.
TEST_F(CoordinatorTest, SwitchThenCopyServesAtOnceAndTransfersWithoutOverwriting) {
  bool hold = true;
  bool held = false;
  sim_.SetChaosHook([&](const Address&, std::string_view failpoint) {
    if (failpoint != "coordinator.after_switch") return false;
    held = true;
    while (hold) {
      if (!sim_.Sleep(kMs).ok()) break;
    }
    return false;
  });
  Run(/*auto_balance=*/false, [&] {
    const ShardMapPtr before = map();
    const storage::PointRange range = RangeOf(*before->Find(kB0));
    std::vector<int> in_bucket;
    for (int i = 0; i < kDocuments; ++i) {
      if (before->Lookup(PointOf(collection_, Key(i))).id == kB0) in_bucket.push_back(i);
    }
    ASSERT_GE(in_bucket.size(), 3u);
    bool moved = false;
    Status move_status;
    std::shared_ptr<Coordinator> c = cluster_->coordinator();
    sim_.Spawn(Address::Coordinator(), "move", [&, c] {
      move_status = c->MoveBucket(kB0, kN2, cluster::TransitionMode::kSwitchThenCopy);
      moved = true;
    });
    ASSERT_TRUE(WaitFor([&] { return held; }));
    ASSERT_TRUE(WaitFor([&] {
      return cluster_->node(kN1)->epoch() == map()->epoch() &&
             cluster_->node(kN2)->epoch() == map()->epoch();
    }));
    const auto& t = *map()->Find(kB0)->transition;
    EXPECT_EQ(t.mode, cluster::TransitionMode::kSwitchThenCopy);
    EXPECT_EQ(t.stage, cluster::TransitionStage::kCopy);
    const Point point(map()->Find(kB0)->range.begin());
    EXPECT_TRUE(cluster_->node(kN2)->CanAcknowledgeWrite(point));
    EXPECT_FALSE(cluster_->node(kN1)->CanAcknowledgeWrite(point));
    EXPECT_EQ(StoredIn(kN2, range), 0u);  // nothing transferred yet

    // A read through the destination comes from the source, and stays at the destination.
    const int read = in_bucket[0], updated = in_bucket[1], deleted = in_bucket[2];
    auto got = client_->Get(collection_, Key(read));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->body, Body(read));
    EXPECT_EQ(StoredIn(kN2, range), 1u);
    // Writes: decided by the source (a duplicate insert is refused), kept at both.
    ASSERT_TRUE(client_->Update(collection_, Key(updated), R"({"i":"new"})").ok());
    ASSERT_TRUE(client_->Delete(collection_, Key(deleted)).ok());
    auto duplicate = client_->Insert(collection_, Key(read), Body(read));
    EXPECT_TRUE(storage::Is(duplicate.status(), storage::ErrorReason::kDuplicate))
        << duplicate.status();
    auto at_source = cluster_->node(kN1)->store()->Get(collection_, Key(updated));
    ASSERT_TRUE(at_source.ok()) << at_source.status();
    EXPECT_EQ(at_source->body, R"({"i":"new"})");
    // A query sees every live document exactly once.
    auto all = client_->Query(
        client::QueryOptions{.collection = collection_, .filter = {}, .limit = 1000, .cursor = {}});
    ASSERT_TRUE(all.ok()) << all.status();
    EXPECT_EQ(all->documents.size(), static_cast<size_t>(kDocuments - 1));

    hold = false;
    ASSERT_TRUE(WaitFor([&] { return moved; }));
    ASSERT_TRUE(move_status.ok()) << move_status;
    EXPECT_EQ(map()->Find(kB0)->replicas, std::vector<NodeId>{kN2});
    EXPECT_FALSE(map()->Find(kB0)->transition.has_value());
    EXPECT_EQ(StoredIn(kN1, range), 0u);
    EXPECT_EQ(StoredIn(kN2, range), in_bucket.size() - 1);
    client::Client reader(sim_);
    auto after_update = reader.Get(collection_, Key(updated));
    ASSERT_TRUE(after_update.ok()) << after_update.status();
    EXPECT_EQ(after_update->body, R"({"i":"new"})");
    auto after_delete = reader.Get(collection_, Key(deleted));
    EXPECT_TRUE(storage::Is(after_delete.status(), storage::ErrorReason::kNotFound))
        << after_delete.status();
    const MoveProgress progress = coordinator().progress();
    EXPECT_EQ(progress.committed, 1u);
    EXPECT_EQ(progress.finished, 1u);
    EXPECT_EQ(progress.aborted, 0u);
    EXPECT_EQ(progress.in_flight, 0u);
  });
  sim_.SetChaosHook(nullptr);
  const auto log = MoveLog();
  ASSERT_EQ(log.count(LogKey(1)), 1u);
  EXPECT_EQ(log.at(LogKey(1)).rfind("DONE", 0), 0u) << log.at(LogKey(1));
}

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
    const NodeId owner = crash.committed ? kN2 : kN1;
    const NodeId other = crash.committed ? kN1 : kN2;
    EXPECT_EQ(map()->Find(kB0)->replicas, std::vector<NodeId>{owner});
    // Once the nodes hold the final map, exactly one of them acknowledges writes to b0.
    ASSERT_TRUE(WaitFor([&] {
      return cluster_->node(kN1)->epoch() == map()->epoch() &&
             cluster_->node(kN2)->epoch() == map()->epoch();
    }));
    const Point point(map()->Find(kB0)->range.begin());
    EXPECT_TRUE(cluster_->node(owner)->CanAcknowledgeWrite(point));
    EXPECT_FALSE(cluster_->node(other)->CanAcknowledgeWrite(point));
    ExpectAllDocumentsReadable();
    // And the bucket takes writes again.
    client::Client writer(sim_);
    for (int i = 0; i < kDocuments; ++i) {
      auto written = writer.Update(collection_, Key(i), Body(i));
      EXPECT_TRUE(written.ok()) << Key(i) << ": " << written.status();
    }
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
                      CrashCase{.failpoint = "coordinator.after_ingest", .committed = false},
                      CrashCase{.failpoint = "coordinator.before_commit", .committed = false},
                      CrashCase{.failpoint = "coordinator.after_commit", .committed = true},
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
                      CrashCase{.failpoint = "coordinator.before_commit",
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
