// Real-process fault tests (docs/design/network.md, "Fault tests"): a coordinator and storage
// nodes as separate `shoal` processes on loopback, a workload of a network client that records
// every acknowledged write, and a process killed at a named point of a bucket move (by its own
// SHOAL_FAILPOINTS crash, or by SIGKILL from here while it pauses there). The killed process is
// restarted on its data directory; once the coordinator reports the cluster balanced, every key
// must read back its acknowledged state (0 lost writes, 0 resurrected deletes), no move may be
// left in flight (`shoal status --json`), and every node must hold exactly the buckets the
// coordinator's map gives it.
//
// SHOAL_FAULT_LONG=1 adds every other failpoint of both move protocols. SHOAL_FAULT_KEEP keeps
// the directories (data and logs). The `shoal` binary is SHOAL_BINARY, else the one built
// alongside.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "include/shoal/shoal.h"
#include "proto/shoal.pb.h"
#include "src/client/client.h"
#include "src/common/point.h"
#include "src/net/grpc_runtime.h"
#include "tests/cluster/process_cluster.h"
#include "tests/cluster/workload.h"
#include "tests/cluster/workload_check.h"

namespace shoal::cluster_test {
namespace {

using Clock = std::chrono::steady_clock;

bool LongRun() {
  const char* value = std::getenv("SHOAL_FAULT_LONG");
  return value != nullptr && std::string(value) == "1";
}

// Which processes carry the failpoint, and how they die there.
enum class Victim : uint8_t {
  kCoordinator,  // coordinator.*
  kSources,      // source.*: every initial node (whichever is a source first dies)
  kJoiner,       // destination.*: the node being added
};
enum class Death : uint8_t {
  kCrash,         // crash:1 in the process itself
  kExternalKill,  // pause there, SIGKILL from the test when its log shows the hit
};

struct FaultCase {
  std::string point;
  Victim victim = Victim::kCoordinator;
  Death death = Death::kCrash;
  // The cluster: 3 nodes with 12 buckets (node 4's moves are copy-then-switch), or 2 nodes with
  // 3 buckets, so that node 1 (2 buckets) is heavy and node 4 pre-bootstraps from it with a
  // switch-then-copy move.
  bool switch_then_copy = false;
  bool long_only = false;
};

std::string CaseName(const testing::TestParamInfo<FaultCase>& info) {
  std::string name = info.param.point;
  for (char& c : name) {
    if (c == '.') c = '_';
  }
  if (info.param.switch_then_copy) name += "_bootstrap";
  return name + (info.param.death == Death::kExternalKill ? "_sigkill" : "");
}

constexpr uint32_t kInitialNodes = 3;
constexpr uint32_t kJoiner = 4;

class ClusterFaultTest : public testing::Test {
 protected:
  void SetUp() override {
    cluster_ = std::make_unique<ProcessCluster>(ShoalBinary());
    cluster_->SetBetweenAttempts([this] { (void)RestartTheDead(); });
  }
  void TearDown() override {
    if (HasFailure()) std::fprintf(stderr, "%s\n", cluster_->LogTails(15).c_str());
    workload_.reset();
    cluster_.reset();
  }

  // Coordinator and nodes 1..3 (each with the given failpoints), serving.
  void StartCluster(const std::string& coordinator_failpoints, const std::string& node_failpoints,
                    uint32_t nodes = kInitialNodes, uint32_t buckets = 12) {
    ASSERT_TRUE(cluster_->StartCoordinator(nodes, buckets, coordinator_failpoints).ok());
    for (uint32_t id = 1; id <= nodes; ++id) {
      Status started = cluster_->StartNode(id, node_failpoints);
      ASSERT_TRUE(started.ok()) << started;
    }
    Status serving = cluster_->WaitServing(30);
    ASSERT_TRUE(serving.ok()) << serving;
  }

  void StartWorkload() {
    workload_ =
        std::make_unique<Workload>(cluster_->uri(), cluster_->connect_options(), /*threads=*/2,
                                   /*keys_per_thread=*/150);
    Status started = workload_->Start();
    ASSERT_TRUE(started.ok()) << started;
  }

  // Until every node's statistics show data (the balancer plans with them).
  void WaitForLoad(int seconds) {
    const Status s = cluster_->AwaitLoadReported(std::chrono::seconds(seconds),
                                                 [this] { (void)RestartTheDead(); });
    ASSERT_TRUE(s.ok()) << s;
  }

  // Restarts every child that died (without failpoints); returns the ids that died. Every exit
  // is also kept in exits_.
  std::vector<Exit> RestartTheDead() {
    std::vector<Exit> exits = cluster_->Reap();
    for (const Exit& exit : exits) {
      Status restarted = cluster_->Restart(exit.id);
      EXPECT_TRUE(restarted.ok()) << "restart of " << exit.id << ": " << restarted;
      exits_.push_back(exit);
    }
    return exits;
  }

  // Until the coordinator reports balance (restarting whatever dies meanwhile).
  void WaitBalanced(int seconds) {
    const Status s =
        cluster_->AwaitBalanced(std::chrono::seconds(seconds), [this] { (void)RestartTheDead(); });
    ASSERT_TRUE(s.ok()) << s;
  }

  // The checks after the faults: acknowledged writes, status, map agreement.
  void VerifyEverything() {
    // A process armed with the failpoint may reach it after the loop saw the first victim die,
    // at a later move, and the balancer may call the cluster balanced meanwhile: restart it and
    // wait until it serves, so that no read below waits out a dead node.
    for (const Exit& exit : RestartTheDead()) {
      if (exit.id == kCoordinator) continue;  // clients wait for it by themselves
      const Status back = cluster_->AwaitReachable(exit.id, std::chrono::seconds(30));
      ASSERT_TRUE(back.ok()) << "process " << exit.id << ": " << back;
    }
    workload_->Stop();
    ExpectNoLoss(*workload_, nullptr);

    // `shoal status --json`: no move in flight, every node reachable (eventually: a process
    // that dies late, or a balancer round after balance, may start one more move).
    std::string out;
    bool settled = false;
    for (int i = 0; i < 150 && !settled; ++i) {
      if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
      (void)RestartTheDead();
      if (cluster_->RunCli({"status", "--json"}, &out) != 0) continue;
      auto status = nlohmann::json::parse(out, nullptr, false);
      if (status.is_discarded() || !status["moves_in_flight"].empty()) continue;
      settled = true;
      for (const auto& node : status["nodes"]) settled = settled && node["reachable"].get<bool>();
    }
    EXPECT_TRUE(settled) << "status: " << out;

    // Every node holds exactly its buckets.
    ExpectOneMap(*cluster_);
  }

  std::unique_ptr<ProcessCluster> cluster_;
  std::unique_ptr<Workload> workload_;
  std::vector<Exit> exits_;
};

class MoveFaultTest : public ClusterFaultTest, public testing::WithParamInterface<FaultCase> {};

// Adds node 4 under load (a switch-then-copy pre-bootstrap, then copy-then-switch moves) with
// the failpoint armed; the victim dies there, is restarted, and the cluster must end balanced
// with nothing lost.
TEST_P(MoveFaultTest, KilledAtPointRecoversWithoutLoss) {
  const FaultCase& c = GetParam();
  if (c.long_only && !LongRun()) GTEST_SKIP() << "SHOAL_FAULT_LONG=1 runs it";
  const std::string failpoint = c.point + (c.death == Death::kCrash ? "=crash:1" : "=pause:3000");
  const uint32_t nodes = c.switch_then_copy ? 2 : kInitialNodes;
  ASSERT_NO_FATAL_FAILURE(StartCluster(c.victim == Victim::kCoordinator ? failpoint : "",
                                       c.victim == Victim::kSources ? failpoint : "", nodes,
                                       c.switch_then_copy ? 3 : 12));
  ASSERT_TRUE(cluster_->StartNode(kJoiner, c.victim == Victim::kJoiner ? failpoint : "").ok());
  ASSERT_NO_FATAL_FAILURE(StartWorkload());
  ASSERT_NO_FATAL_FAILURE(WaitForLoad(20));  // data in every bucket, and the balancer knows
  // The initial map may be moved a little first (the balancer weighs bytes): let it settle, so
  // that node 4's bootstrap plans with the current loads.
  ASSERT_NO_FATAL_FAILURE(WaitBalanced(30));
  ASSERT_NO_FATAL_FAILURE(WaitForLoad(20));
  Status added = cluster_->AddNode(kJoiner);
  ASSERT_TRUE(added.ok()) << added;

  // Until the victim dies at the point (and is restarted).
  std::set<uint32_t> victims;
  if (c.victim == Victim::kCoordinator) victims = {kCoordinator};
  if (c.victim == Victim::kJoiner) victims = {kJoiner};
  for (uint32_t id = 1; c.victim == Victim::kSources && id <= nodes; ++id) victims.insert(id);
  bool died = false;
  const auto until = Clock::now() + std::chrono::seconds(40);
  auto added_at = Clock::now();
  while (!died && Clock::now() < until) {
    // A bootstrap may be planned as copy-then-switch (the loads did not make a node heavy) or
    // abort before its switch: once balanced without reaching the point, remove node 4 and add
    // it again, for a new bootstrap.
    if (c.switch_then_copy && Clock::now() - added_at > std::chrono::seconds(3)) {
      auto progress = cluster_->Progress();
      if (progress.ok() && progress->balanced()) {
        std::fprintf(stderr, "%s not reached; node 4 joins again\n", c.point.c_str());
        ASSERT_TRUE(cluster_->RemoveNode(kJoiner).ok());
        ASSERT_NO_FATAL_FAILURE(WaitBalanced(30));
        ASSERT_NO_FATAL_FAILURE(WaitForLoad(20));
        ASSERT_TRUE(cluster_->AddNode(kJoiner).ok());
        added_at = Clock::now();
      }
    }
    if (c.death == Death::kExternalKill) {
      for (uint32_t id : victims) {
        if (cluster_->Running(id) && cluster_->LogShowsFailpoint(id, c.point)) {
          died = true;
          break;
        }
      }
      // SIGKILL the one waiting at the point, and the other armed processes too (restarted
      // without failpoints, they stop pausing at every later hit).
      for (uint32_t id : victims) {
        if (!died) break;
        cluster_->Kill(id);
        ASSERT_TRUE(cluster_->Restart(id).ok());
      }
    }
    (void)RestartTheDead();
    for (const Exit& exit : exits_) {
      EXPECT_TRUE(exit.killed) << "process " << exit.id << " exited with " << exit.status;
      if (victims.contains(exit.id) && cluster_->LogShowsFailpoint(exit.id, c.point)) died = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(died) << c.point << " was not reached within 40 s";
  ASSERT_NO_FATAL_FAILURE(WaitBalanced(60));
  // A further moment of load on the recovered cluster, then the checks.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  VerifyEverything();
}

INSTANTIATE_TEST_SUITE_P(
    Points, MoveFaultTest,
    testing::Values(
        // The default set: both protocols, the coordinator, a source and the destination.
        // {point, victim, death, switch_then_copy, long_only}
        FaultCase{"coordinator.after_begin", Victim::kCoordinator, Death::kCrash, false, false},
        FaultCase{"coordinator.before_commit", Victim::kCoordinator, Death::kCrash, false, false},
        FaultCase{"coordinator.after_commit", Victim::kCoordinator, Death::kCrash, false, false},
        // kCleanup stored, the source's drop not sent: the restarted coordinator sends it.
        FaultCase{"coordinator.after_cleanup", Victim::kCoordinator, Death::kCrash, false, false},
        FaultCase{"coordinator.after_switch", Victim::kCoordinator, Death::kCrash, true, false},
        FaultCase{"source.after_fence", Victim::kSources, Death::kCrash, false, false},
        FaultCase{"destination.after_ingest", Victim::kJoiner, Death::kCrash, false, false},
        FaultCase{"destination.after_transfer_page", Victim::kJoiner, Death::kExternalKill, true,
                  false},
        // Mid-way through copying an export file from the source (separate processes, separate
        // data directories: only the chunk transfer reaches them).
        FaultCase{"destination.after_fetch_chunk", Victim::kJoiner, Death::kCrash, false, false},
        // SHOAL_FAULT_LONG=1: the other points.
        FaultCase{"coordinator.after_export", Victim::kCoordinator, Death::kCrash, false, true},
        FaultCase{"coordinator.after_ingest", Victim::kCoordinator, Death::kCrash, false, true},
        FaultCase{"coordinator.before_fence", Victim::kCoordinator, Death::kCrash, false, true},
        FaultCase{"coordinator.before_done", Victim::kCoordinator, Death::kCrash, false, true},
        FaultCase{"coordinator.before_switch", Victim::kCoordinator, Death::kCrash, true, true},
        FaultCase{"coordinator.after_commit", Victim::kCoordinator, Death::kExternalKill, false,
                  true},
        FaultCase{"destination.after_apply", Victim::kJoiner, Death::kCrash, false, true},
        FaultCase{"source.after_fence", Victim::kSources, Death::kExternalKill, false, true},
        FaultCase{"source.after_fence", Victim::kSources, Death::kCrash, true, true}),
    CaseName);

// remove-node of a node that holds data: it drains, leaves the map, and every document is still
// readable, also through a client opened before the move and idle during it (a stale map).
TEST_F(ClusterFaultTest, RemoveNodeKeepsEveryDocumentAndStaleClientWorks) {
  ASSERT_NO_FATAL_FAILURE(StartCluster("", ""));
  auto stale = Database::Connect(cluster_->uri(), cluster_->connect_options());
  ASSERT_TRUE(stale.ok()) << stale.status();
  {
    auto warm = (*stale)->GetCollection("faults");  // caches the map before the move
    ASSERT_TRUE(warm.ok());
    (void)warm->Get("t0-k0");
  }
  ASSERT_NO_FATAL_FAILURE(StartWorkload());
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  std::string out;
  ASSERT_EQ(cluster_->RunCli({"remove-node", "--id", "3", "--json", "--timeout", "60"}, &out), 0)
      << out;
  ASSERT_NO_FATAL_FAILURE(WaitBalanced(30));
  ASSERT_EQ(cluster_->RunCli({"status", "--json"}, &out), 0);
  auto status = nlohmann::json::parse(out, nullptr, false);
  for (const auto& node : status["nodes"]) EXPECT_NE(node["id"].get<uint32_t>(), 3u) << out;
  // Node 3 is out of the map: stop it, so that only the map's nodes can answer.
  cluster_->Kill(3);
  workload_->Stop();
  ExpectNoLoss(*workload_, stale->get());  // through the stale client
  // The stale client also writes.
  auto collection = (*stale)->GetCollection("faults");
  ASSERT_TRUE(collection.ok());
  for (int i = 0; i < 50; ++i) {
    auto written = collection->Upsert(fmt::format("stale-{}", i), R"({"seq": 0})");
    EXPECT_TRUE(written.ok()) << written.status();
  }
  VerifyEverything();
}

// A node down (SIGKILL) while two moves commit elsewhere comes back on its data directory and
// catches up with the map: the cluster ends balanced and nothing is lost.
TEST_F(ClusterFaultTest, NodeDownAcrossTwoMovesRejoins) {
  ASSERT_NO_FATAL_FAILURE(StartCluster("", ""));
  ASSERT_TRUE(cluster_->StartNode(kJoiner).ok());
  ASSERT_TRUE(cluster_->StartNode(kJoiner + 1).ok());
  ASSERT_NO_FATAL_FAILURE(StartWorkload());
  ASSERT_NO_FATAL_FAILURE(WaitForLoad(20));
  ASSERT_NO_FATAL_FAILURE(WaitBalanced(30));
  auto before = cluster_->Progress();
  ASSERT_TRUE(before.ok());
  cluster_->Kill(2);
  // Node 4 joins, then node 5: each takes buckets of nodes 1 and 3 while node 2 is down.
  uint64_t committed = 0;
  for (uint32_t joiner : {kJoiner, kJoiner + 1}) {
    ASSERT_TRUE(cluster_->AddNode(joiner).ok());
    const uint64_t goal = committed + 1;
    const auto until = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < until && committed < goal) {
      auto now = cluster_->Progress();
      if (now.ok()) committed = now->moves_committed() - before->moves_committed();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  ASSERT_GE(committed, 2u) << "moves committed while node 2 was down";
  auto epoch_while_down = cluster_->Progress();
  ASSERT_TRUE(cluster_->Restart(2).ok());
  ASSERT_NO_FATAL_FAILURE(WaitBalanced(60));
  auto after = cluster_->Progress();
  ASSERT_TRUE(after.ok() && epoch_while_down.ok());
  EXPECT_GE(after->epoch(), epoch_while_down->epoch());
  VerifyEverything();
}

// FAILURE-PATTERNS 4 between processes with the old owner running: clients whose map predates a
// move (bare clients, no map watch) read, write and page the moved buckets after node 4 took
// them. Each first reaches an old owner, which is up and must refuse with WRONG_SHARD and its
// map; the client follows to node 4. Nothing is read from or written to an old owner's copy: a
// fresh client then reads every stale write, and the stale walk returns every key once.
TEST_F(ClusterFaultTest, RunningOldOwnerRefusesStaleClients) {
  ASSERT_NO_FATAL_FAILURE(StartCluster("", ""));
  ASSERT_TRUE(cluster_->StartNode(kJoiner).ok());
  ASSERT_NO_FATAL_FAILURE(StartWorkload());
  ASSERT_NO_FATAL_FAILURE(WaitForLoad(20));
  ASSERT_NO_FATAL_FAILURE(WaitBalanced(30));

  constexpr int kKeys = 120;
  auto db = Database::Connect(cluster_->uri(), cluster_->connect_options());
  ASSERT_TRUE(db.ok()) << db.status();
  auto fresh = (*db)->GetCollection("stale");
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(fresh->Upsert(fmt::format("s{}", i), fmt::format(R"({{"v":{}}})", i)).ok());
  }
  // Three clients that learn the map now and never watch it: for gets, writes and the walk.
  auto runtime = cluster_->ClientRuntime();
  ASSERT_TRUE(runtime.ok()) << runtime.status();
  client::Client reader(**runtime);
  client::Client writer(**runtime);
  client::Client walker(**runtime);
  for (client::Client* stale : {&reader, &writer, &walker}) ASSERT_TRUE(stale->Refresh().ok());
  auto collection = reader.OpenCollection("stale");
  ASSERT_TRUE(collection.ok()) << collection.status();
  auto before = cluster_->State();
  ASSERT_TRUE(before.ok()) << before.status();

  ASSERT_TRUE(cluster_->AddNode(kJoiner).ok());
  ASSERT_NO_FATAL_FAILURE(WaitBalanced(60));
  auto after = cluster_->State();
  ASSERT_TRUE(after.ok()) << after.status();
  std::vector<int> moved;  // keys whose owner changed, from a node that still runs
  for (int i = 0; i < kKeys; ++i) {
    const Point point = PointOf(*collection, fmt::format("s{}", i));
    if (before->map->Lookup(point).replicas != after->map->Lookup(point).replicas) {
      moved.push_back(i);
    }
  }
  ASSERT_FALSE(moved.empty()) << "node 4 took no bucket holding a test key";
  for (uint32_t id = 1; id <= kInitialNodes; ++id) ASSERT_TRUE(cluster_->Running(id));

  for (int i : moved) {
    auto got = reader.Get(*collection, fmt::format("s{}", i));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->body, fmt::format(R"({{"v":{}}})", i));
    auto written = writer.Upsert(*collection, fmt::format("s{}", i), R"({"v":"stale"})");
    EXPECT_TRUE(written.ok()) << written.status();
  }
  EXPECT_GE(reader.counters().wrong_shard, 1u);
  EXPECT_GE(writer.counters().wrong_shard, 1u);
  for (int i : moved) {
    auto got = fresh->Get(fmt::format("s{}", i));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->json, R"({"v":"stale"})") << "s" << i;
  }
  std::map<std::string, int> seen;
  client::QueryOptions page{.collection = *collection, .filter = {}, .limit = 7, .cursor = {}};
  do {
    auto read = walker.Query(page);
    ASSERT_TRUE(read.ok()) << read.status();
    for (const auto& document : read->documents) ++seen[document.primary_key];
    page.cursor = read->next_cursor;
  } while (!page.cursor.empty());
  EXPECT_GE(walker.counters().wrong_shard, 1u);
  EXPECT_EQ(seen.size(), static_cast<size_t>(kKeys));
  for (const auto& [key, times] : seen) EXPECT_EQ(times, 1) << key;
  VerifyEverything();
}

}  // namespace
}  // namespace shoal::cluster_test
