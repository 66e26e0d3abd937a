// ZooKeeper failures under a live cluster of real processes (docs/design/zookeeper.md,
// "ZooKeeper down"):
//   - MemberKilledUnderLoad: the cluster's metadata is in a 3-member ZooKeeper ensemble; the
//     ensemble's leader is SIGKILLed under a client workload. The other two elect a new leader,
//     the coordinator's writes go on through them: node 4 is added and the cluster balances
//     while the member is down. The member restarts and rejoins.
//   - MoveAcrossZooKeeperOutage: one ZooKeeper server; a bucket move (node 3 being drained)
//     waits at coordinator.before_commit, after the source fenced the bucket; the server is
//     SIGKILLed there, the move goes on into its commit while the server stays down, and the
//     server restarts. The move ends committed or aborted, never half: the map in ZooKeeper,
//     the coordinator and every node agree on the owner; writes to the other buckets are
//     acknowledged throughout the outage.
//   - ALeaderStalledPastItsSessionsLeadsAgain: the leading coordinator stalled past its store's
//     session opens a new one once woken, and leads again when the standby that took over dies.
// All end with 0 lost acknowledged writes and every node holding exactly the buckets of the
// one map.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "proto/shoal.pb.h"
#include "src/cluster/shard_map_codec.h"
#include "src/common/point.h"
#include "src/metadata/zookeeper_metadata_store.h"
#include "src/metadata/zookeeper_test_server.h"
#include "tests/cluster/process_cluster.h"
#include "tests/cluster/workload.h"
#include "tests/cluster/workload_check.h"

namespace shoal::cluster_test {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kElectionSessionMs = 1'500;
constexpr char kPoint[] = "coordinator.before_commit";
// How long the move waits at kPoint: the window in which the test kills ZooKeeper (generous, so
// that a slow test process still kills it in time).
constexpr int kPauseMs = 5'000;
// How long ZooKeeper stays down after the move's commit (and its abort) failed.
constexpr int kDownAfterCommitMs = 2'000;

long long MillisSince(Clock::time_point start) {
  return static_cast<long long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
}

// A cluster of processes on ZooKeeper (the test starts ZooKeeper) and a workload.
class ZooKeeperOutageTest : public testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure() && cluster_ != nullptr) {
      std::fprintf(stderr, "%s\n", cluster_->LogTails(20).c_str());
    }
    workload_.reset();
    cluster_.reset();
  }

  void StartCluster(const std::string& hosts, uint32_t nodes, bool standby) {
    cluster_ = std::make_unique<ProcessCluster>(ShoalBinary());
    cluster_->UseZooKeeper(fmt::format("zk://{}{}", hosts, kRoot), kElectionSessionMs);
    ASSERT_TRUE(cluster_->StartCoordinator(3, 12).ok());
    if (standby) {
      ASSERT_TRUE(cluster_->StartStandbyCoordinator(3, 12).ok());
    }
    for (uint32_t id = 1; id <= nodes; ++id) {
      Status started = cluster_->StartNode(id);
      ASSERT_TRUE(started.ok()) << started;
    }
    Status serving = cluster_->WaitServing(60);
    ASSERT_TRUE(serving.ok()) << serving;
    workload_ = std::make_unique<Workload>(cluster_->uri(), cluster_->connect_options(),
                                           /*threads=*/2, /*keys_per_thread=*/150);
    ASSERT_TRUE(workload_->Start().ok());
    for (int i = 0; i < 400 && workload_->acknowledged() < 300; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_NO_FATAL_FAILURE(WaitBalanced(60));
  }

  void WaitBalanced(int seconds) {
    const Status s = cluster_->AwaitBalanced(std::chrono::seconds(seconds));
    ASSERT_TRUE(s.ok()) << s;
  }

  // Expects that node `id` is (or is not) in the leader's map.
  void ExpectMember(uint32_t id, bool member) {
    auto state = cluster_->State();
    ASSERT_TRUE(state.ok()) << state.status();
    EXPECT_EQ(state->map->HasNode(NodeId(id)), member) << state->map->DebugString();
  }

  // The end of every test: nothing lost, one map, no process died.
  void ExpectHealthyEnd() {
    workload_->Stop();
    ExpectNoLoss(*workload_, nullptr);
    ExpectOneMap(*cluster_);
    for (const Exit& exit : cluster_->Reap()) {
      ADD_FAILURE() << "process " << exit.id << " exited with " << exit.status;
    }
  }

  static constexpr char kRoot[] = "/shoal/outage";
  std::unique_ptr<ProcessCluster> cluster_;
  std::unique_ptr<Workload> workload_;
};

TEST_F(ZooKeeperOutageTest, MemberKilledUnderLoad) {
  auto ensemble = metadata::ZooKeeperTestEnsemble::Start(3);
  ASSERT_TRUE(ensemble.ok()) << ensemble.status();  // fails (never skips) without ZooKeeper
  ASSERT_NO_FATAL_FAILURE(StartCluster((*ensemble)->hosts(), 4, /*standby=*/true));

  StatusOr<int> leader = NotFoundError("not asked");
  for (int i = 0; i < 100 && !leader.ok(); ++i) {
    leader = (*ensemble)->Leader();
    if (!leader.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(leader.ok()) << leader.status();
  (*ensemble)->member(*leader).Kill();
  const auto killed_at = Clock::now();
  const uint64_t acknowledged_at_kill = workload_->acknowledged();

  // The two others elect a leader among themselves.
  StatusOr<int> next = NotFoundError("not asked");
  while (MillisSince(killed_at) < 60'000) {
    next = (*ensemble)->Leader();
    if (next.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_NE(*next, *leader);
  const long long elected_ms = MillisSince(killed_at);

  // A map change commits through the remaining majority, and the cluster balances.
  auto before = cluster_->Progress();
  ASSERT_TRUE(before.ok()) << before.status();
  Status added = cluster_->AddNode(4);
  ASSERT_TRUE(added.ok()) << added;
  ASSERT_NO_FATAL_FAILURE(WaitBalanced(90));
  EXPECT_FALSE((*ensemble)->member(*leader).running());  // all of it while the member was down
  auto after = cluster_->Progress();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_GT(after->epoch(), before->epoch());
  EXPECT_GT(after->moves_committed(), 0u);
  ASSERT_NO_FATAL_FAILURE(ExpectMember(4, true));
  const uint64_t acknowledged_while_down = workload_->acknowledged() - acknowledged_at_kill;
  std::fprintf(stderr,
               "zookeeper member %d (leader) killed: member %d leads after %lld ms; node 4 added "
               "and balanced after %lld ms (%llu moves committed), %llu writes acknowledged; "
               "coordinator %s at leader epoch %llu\n",
               *leader + 1, *next + 1, elected_ms, MillisSince(killed_at),
               static_cast<unsigned long long>(after->moves_committed()),
               static_cast<unsigned long long>(acknowledged_while_down), after->leader().c_str(),
               static_cast<unsigned long long>(after->leader_epoch()));
  EXPECT_GT(acknowledged_while_down, 50u);

  // The member comes back on its data directory and rejoins the quorum (Restart waits for it).
  Status restarted = (*ensemble)->member(*leader).Restart();
  ASSERT_TRUE(restarted.ok()) << restarted;
  auto mode = (*ensemble)->member(*leader).Mode();
  ASSERT_TRUE(mode.ok()) << mode.status();
  EXPECT_TRUE(*mode == "follower" || *mode == "leader") << *mode;
  ExpectHealthyEnd();
}

// The leading coordinator stalls (SIGSTOP, as a long pause of its machine) for longer than its
// store's own ZooKeeper session (10 s): ZooKeeper expires every session of it, and the standby
// takes over. Woken, the old leader opens a new store session by itself (`zookeeper.reconnected`)
// instead of failing every read "session expired" for good, so when the new leader dies it leads
// again: an add-node goes through. The workload is acknowledged throughout; nothing is lost.
TEST_F(ZooKeeperOutageTest, ALeaderStalledPastItsSessionsLeadsAgain) {
  auto zk = metadata::ZooKeeperTestServer::Start();
  ASSERT_TRUE(zk.ok()) << zk.status();  // fails (never skips) without ZooKeeper
  ASSERT_NO_FATAL_FAILURE(StartCluster((*zk)->hosts(), 3, /*standby=*/true));
  cluster_->Pause(kCoordinator);
  std::this_thread::sleep_for(std::chrono::seconds(12));
  cluster_->Resume(kCoordinator);
  auto until = Clock::now() + std::chrono::seconds(30);
  while (!cluster_->LogShows(kCoordinator, "zookeeper.reconnected") && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(cluster_->LogShows(kCoordinator, "zookeeper.reconnected"));
  const uint64_t acknowledged = workload_->acknowledged();
  cluster_->Kill(kStandbyCoordinator);
  ASSERT_TRUE(cluster_->StartNode(4).ok());
  Status added = UnavailableError("not tried");
  until = Clock::now() + std::chrono::seconds(60);
  while (!added.ok() && Clock::now() < until) {
    added = cluster_->AddNode(4);
    if (!added.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(added.ok()) << "the woken coordinator did not lead again: " << added;
  ASSERT_NO_FATAL_FAILURE(WaitBalanced(60));
  ExpectMember(4, true);
  EXPECT_GT(workload_->acknowledged(), acknowledged);
  ExpectHealthyEnd();
}

TEST_F(ZooKeeperOutageTest, MoveAcrossZooKeeperOutage) {
  auto zk = metadata::ZooKeeperTestServer::Start();
  ASSERT_TRUE(zk.ok()) << zk.status();  // fails (never skips) without ZooKeeper
  ASSERT_NO_FATAL_FAILURE(StartCluster((*zk)->hosts(), 3, /*standby=*/false));
  Status armed = cluster_->SetCoordinatorFailpoints(kCoordinator,
                                                    fmt::format("{}=pause:{}", kPoint, kPauseMs));
  ASSERT_TRUE(armed.ok()) << armed;
  // Draining node 3: one copy-then-switch move at a time, each from node 3.
  Status removed = cluster_->RemoveNode(3);
  ASSERT_TRUE(removed.ok()) << removed;
  const auto until = Clock::now() + std::chrono::seconds(60);
  while (!cluster_->LogShowsFailpoint(kCoordinator, kPoint) && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(cluster_->LogShowsFailpoint(kCoordinator, kPoint)) << kPoint << " not reached";
  const auto paused_at = Clock::now();
  (*zk)->Kill();
  const long long killed_after_ms = MillisSince(paused_at);
  // Later moves do not pause (the one paused now goes on after its kPauseMs).
  Status disarmed = cluster_->SetCoordinatorFailpoints(kCoordinator, "");
  ASSERT_TRUE(disarmed.ok()) << disarmed;

  // The coordinator answers from memory: the moving bucket, and the collection's id.
  auto state = cluster_->State();
  ASSERT_TRUE(state.ok()) << state.status();
  std::map<BucketId, MoveId> moving;
  for (const auto& bucket : state->map->buckets()) {
    if (bucket.transition.has_value()) moving.emplace(bucket.id, bucket.transition->move);
  }
  ASSERT_FALSE(moving.empty()) << state->map->DebugString();
  std::optional<CollectionId> collection;
  for (const auto& spec : state->collections) {
    if (spec.name == "faults") collection = spec.id;
  }
  ASSERT_TRUE(collection.has_value());

  // While ZooKeeper is down (through the end of the pause, the failed commit after it and
  // kDownAfterCommitMs more), writes to every other bucket are acknowledged.
  auto db = Database::Connect(cluster_->uri(), cluster_->connect_options());
  ASSERT_TRUE(db.ok()) << db.status();
  auto probe = (*db)->GetCollection("faults");
  ASSERT_TRUE(probe.ok()) << probe.status();
  const uint64_t acknowledged_at_kill = workload_->acknowledged();
  std::vector<std::string> written;
  // The move's task ends once its commit and its abort failed (or, had the coordinator lost its
  // election session, once it stood down).
  const auto commit_failed = [&] {
    return cluster_->LogShows(kCoordinator, "move.abort_failed") ||
           cluster_->LogShows(kCoordinator, "coordinator.standby");
  };
  const auto deadline = paused_at + std::chrono::seconds(60);
  std::optional<Clock::time_point> restart_at;
  for (int i = 0; Clock::now() < restart_at.value_or(deadline); ++i) {
    if (!restart_at.has_value() && commit_failed()) {
      restart_at = Clock::now() + std::chrono::milliseconds(kDownAfterCommitMs);
    }
    const std::string key = fmt::format("outage-{}", i);
    if (moving.contains(state->map->Lookup(PointOf(*collection, key)).id)) continue;
    auto upserted = probe->Upsert(key, fmt::format(R"({{"i": {}}})", i));
    EXPECT_TRUE(upserted.ok()) << key << ": " << upserted.status();
    if (upserted.ok()) written.push_back(key);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const uint64_t acknowledged_while_down = workload_->acknowledged() - acknowledged_at_kill;
  const long long down_ms = MillisSince(paused_at) - killed_after_ms;
  EXPECT_GT(written.size(), 20u);
  ASSERT_TRUE(restart_at.has_value()) << "the move did not reach its commit in 60 s";

  Status restarted = (*zk)->Restart();
  ASSERT_TRUE(restarted.ok()) << restarted;
  ASSERT_NO_FATAL_FAILURE(WaitBalanced(120));
  auto progress = cluster_->Progress();
  ASSERT_TRUE(progress.ok()) << progress.status();
  std::fprintf(stderr,
               "zookeeper down %lld ms (killed %lld ms into the pause): %zu probe writes and %llu "
               "workload writes acknowledged; after the restart: balanced, leader epoch %llu, "
               "%llu moves committed, %llu aborted\n",
               down_ms, killed_after_ms, written.size(),
               static_cast<unsigned long long>(acknowledged_while_down),
               static_cast<unsigned long long>(progress->leader_epoch()),
               static_cast<unsigned long long>(progress->moves_committed()),
               static_cast<unsigned long long>(progress->moves_aborted()));
  ASSERT_NO_FATAL_FAILURE(ExpectMember(3, false));

  // Never half: the map in ZooKeeper is the coordinator's, the interrupted move's log record is
  // DONE or ABORT, and (ExpectOneMap below) every node holds exactly its buckets of that map.
  auto options =
      metadata::ZooKeeperMetadataOptions::FromUri(fmt::format("zk://{}{}", (*zk)->hosts(), kRoot));
  ASSERT_TRUE(options.ok()) << options.status();
  auto store = metadata::ZooKeeperMetadataStore::Open(*options);
  ASSERT_TRUE(store.ok()) << store.status();
  auto stored = (*store)->Get("cluster/map");
  ASSERT_TRUE(stored.ok()) << stored.status();
  auto stored_map = cluster::DecodeShardMap(stored->value);
  ASSERT_TRUE(stored_map.ok()) << stored_map.status();
  auto final_state = cluster_->State();
  ASSERT_TRUE(final_state.ok()) << final_state.status();
  EXPECT_EQ(stored_map->epoch(), final_state->map->epoch());
  EXPECT_EQ(stored_map->TransitionCount(), 0u);
  for (const auto& [bucket, move] : moving) {
    auto record = (*store)->Get(fmt::format("moves/{:020}", move.value()));
    ASSERT_TRUE(record.ok()) << record.status();
    EXPECT_TRUE(record->value.starts_with("DONE") || record->value.starts_with("ABORT"))
        << record->value;
    std::fprintf(stderr, "the interrupted move: %s\n", record->value.c_str());
  }
  store->reset();

  for (const std::string& key : written) {
    auto doc = probe->Get(key);
    EXPECT_TRUE(doc.ok()) << key << ": " << doc.status();
  }
  ExpectHealthyEnd();
}

}  // namespace
}  // namespace shoal::cluster_test
