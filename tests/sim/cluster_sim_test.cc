// The deterministic cluster simulation over many seeds (tests/sim/cluster_sim.h). A failure
// prints its seed; `shoal sim --seed N` or SHOAL_SIM_FIRST_SEED=N with SHOAL_SIM_SEEDS=1 replays
// it exactly.

#include "tests/sim/cluster_sim.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "src/storage/test_support.h"
#include "tests/sim/sim_seeds.h"

namespace shoal::sim {
namespace {

// This process's scratch directory, removed with what the runs leave in it when the process exits.
std::string ScratchDir() {
  static const storage::TempDir dir;
  return dir.path();
}

TEST(ClusterSimTest, SameSeedReplaysTheSameRun) {
  ClusterSimOptions options{.seed = 42, .dir = ScratchDir(), .duration_us = 2'000'000};
  const ClusterSimResult a = RunClusterSim(options);
  const ClusterSimResult b = RunClusterSim(options);
  ASSERT_TRUE(a.ok) << a.failure;
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.operations, b.operations);
  EXPECT_EQ(a.moves, b.moves);
  EXPECT_EQ(a.crashes, b.crashes);
}

// Seeds that reach rare failure paths, each run on its own so that a regression names its seed.
// 125: a write forwarded by the destination of a switch-then-copy move before it crashes runs at
// the source after the restart; the destination must not answer reads from its own, older copy.
// 161: the source's change log reader, resumed from its parked position across a sequence an
// ingest consumed, must not skip it: the catch-up of a move would lose an acknowledged write.
TEST(ClusterSimTest, RegressionSeeds) {
  for (uint64_t seed : {uint64_t{125}, uint64_t{161}}) {
    ClusterSimOptions options;
    options.seed = seed;
    options.dir = ScratchDir();
    const ClusterSimResult result = RunClusterSim(options);
    EXPECT_TRUE(result.ok) << "seed " << seed << ": " << result.failure;
  }
}

// K = 3 seeds that found liveness bugs of replicated moves, each run on its own.
// 42, 64: a backup replaced by a move refused the primary's stream once it had the commit, before
// the primary did; the primary abandoned the bucket's pending writes, which froze its watermark
// for the rest of the term, and every read of the bucket waited for good. (Seed 3 of the main
// range found the failover left after its seals, replication.md §4.8.)
// 77, 122, 125 (with link partitions): a failover sealed a backup and never finished (the sealed
// backup restarted and forgot the seal, or left the bucket); the primary, refused as sealed, had
// abandoned its pending writes, so its watermark froze for the rest of the term while nobody
// reported the term closed (ReplicationSimTest.APrimaryWhoseSealedBackupForgotTheSealClosesTheTerm
// is the deterministic version).
TEST(ClusterSimTest, ReplicationRegressionSeeds) {
  for (uint64_t seed : {uint64_t{42}, uint64_t{64}, uint64_t{77}, uint64_t{122}, uint64_t{125}}) {
    ClusterSimOptions options{.seed = seed, .dir = ScratchDir(), .replication_factor = 3};
    const ClusterSimResult result = RunClusterSim(options);
    EXPECT_TRUE(result.ok) << "seed " << seed << ": " << result.failure;
  }
}

// K = 3 on three nodes: every node holds every bucket; nodes and the coordinator crash and
// restart, links are cut and healed (one way or both), every clock drifts within 3%; primaries
// fail over, silent backups are removed, restarted primaries are fenced.
TEST(ClusterSimTest, ReplicationSeeds) {
  const auto [first, seeds] = SimSeedRange(40);
  uint64_t operations = 0, crashes = 0, failovers = 0, moves = 0, partitions = 0, failures = 0;
  // Copies resumed from a primary's log (replication.md §6.1), and crashes in that path.
  uint64_t resumed = 0, resume_crashes = 0;
  for (uint64_t seed = first; seed < first + seeds; ++seed) {
    ClusterSimOptions options{.seed = seed, .dir = ScratchDir(), .replication_factor = 3};
    // To tell which fault a failing seed needs: SHOAL_SIM_NO_PARTITIONS, SHOAL_SIM_CLOCK_DRIFT=d.
    if (std::getenv("SHOAL_SIM_NO_PARTITIONS") != nullptr) options.partitions = false;
    if (const char* drift = std::getenv("SHOAL_SIM_CLOCK_DRIFT")) {
      options.clock_drift = std::strtod(drift, nullptr);
    }
    const ClusterSimResult result = RunClusterSim(options);
    operations += result.operations;
    moves += result.moves;
    crashes += result.crashes;
    failovers += result.failovers;
    partitions += result.partitions;
    const auto count = [](const std::map<std::string, uint64_t>& counts, const char* name) {
      auto it = counts.find(name);
      return it == counts.end() ? uint64_t{0} : it->second;
    };
    resumed += count(result.failpoint_hits, "coordinator.after_resume");
    resume_crashes += count(result.failpoint_crashes, "coordinator.after_resume") +
                      count(result.failpoint_crashes, "destination.after_resume");
    if (!result.ok) {
      ++failures;
      ADD_FAILURE() << result.failure;
    }
  }
  std::printf(
      "K=3 seeds %llu: operations %llu, crashes %llu, buckets failed over %llu, moves %llu, "
      "copies resumed from a log %llu (crashes there %llu), partitions %llu, failures %llu\n",
      static_cast<unsigned long long>(seeds), static_cast<unsigned long long>(operations),
      static_cast<unsigned long long>(crashes), static_cast<unsigned long long>(failovers),
      static_cast<unsigned long long>(moves), static_cast<unsigned long long>(resumed),
      static_cast<unsigned long long>(resume_crashes), static_cast<unsigned long long>(partitions),
      static_cast<unsigned long long>(failures));
  EXPECT_EQ(failures, 0u);
  if (seeds >= 10) {
    EXPECT_GT(failovers, 0u);
    EXPECT_GT(partitions, 0u);
    EXPECT_GT(resumed, 0u);
  }
}

TEST(ClusterSimTest, ManySeeds) {
  const auto [first, seeds] = SimSeedRange(200);
  uint64_t operations = 0, moves = 0, crashes = 0, failures = 0;
  std::map<std::string, uint64_t> hits, crashed_at;
  for (uint64_t seed = first; seed < first + seeds; ++seed) {
    ClusterSimOptions options{.seed = seed, .dir = ScratchDir()};
    if (std::getenv("SHOAL_SIM_NO_CRASH") != nullptr) options.crashes = false;
    const ClusterSimResult result = RunClusterSim(options);
    operations += result.operations;
    moves += result.moves;
    crashes += result.crashes;
    for (const auto& [name, n] : result.failpoint_hits) hits[name] += n;
    for (const auto& [name, n] : result.failpoint_crashes) crashed_at[name] += n;
    if (!result.ok) {
      ++failures;
      ADD_FAILURE() << result.failure;
    }
  }
  std::printf("seeds %llu: operations %llu, committed moves %llu, crashes %llu, failures %llu\n",
              static_cast<unsigned long long>(seeds), static_cast<unsigned long long>(operations),
              static_cast<unsigned long long>(moves), static_cast<unsigned long long>(crashes),
              static_cast<unsigned long long>(failures));
  for (const auto& [name, n] : hits) {
    std::printf("  failpoint %-28s reached %6llu, crashed at %4llu\n", name.c_str(),
                static_cast<unsigned long long>(n),
                static_cast<unsigned long long>(crashed_at[name]));
  }
  EXPECT_EQ(failures, 0u);
  // Every four seeds, two copy move files chunk by chunk (RunClusterSim).
  if (seeds >= 4) {
    EXPECT_GT(hits["destination.after_fetch_chunk"], 0u);
  }
  if (seeds >= 50) {
    // Every named step of a move was reached, and crashed at, somewhere in the run.
    for (const char* name :
         {"coordinator.after_begin", "coordinator.after_export", "coordinator.after_ingest",
          "coordinator.before_fence", "coordinator.before_commit", "coordinator.after_commit",
          "coordinator.before_done", "source.after_fence", "destination.after_ingest",
          "destination.after_apply", "coordinator.before_switch", "coordinator.after_switch",
          "destination.after_transfer_page", "destination.after_fetch_chunk",
          "coordinator.after_seal"}) {
      EXPECT_GT(crashed_at[name], 0u) << name;
    }
  }
  EXPECT_GT(moves, 0u);  // chaos and the balancer really move buckets
}

// K = 3 with half of the clients' gets reading any copy (ReadMode::kAnyReplica): those reads
// are checked for phantoms and for staleness beyond the nodes' max_staleness (stale_reads.h),
// the rest of the history for linearizability as usual.
TEST(ClusterSimTest, ReplicationAnyReplicaSeeds) {
  const auto [first, seeds] = SimSeedRange(10);
  uint64_t reads = 0, partitions = 0, failures = 0;
  for (uint64_t seed = first; seed < first + seeds; ++seed) {
    ClusterSimOptions options{
        .seed = seed, .dir = ScratchDir(), .replication_factor = 3, .any_replica_reads = true};
    const ClusterSimResult result = RunClusterSim(options);
    reads += result.any_replica_reads;
    partitions += result.partitions;
    if (!result.ok) {
      ++failures;
      ADD_FAILURE() << result.failure;
    }
  }
  std::printf(
      "K=3 any-replica seeds %llu: any-replica reads %llu, partitions %llu, failures %llu\n",
      static_cast<unsigned long long>(seeds), static_cast<unsigned long long>(reads),
      static_cast<unsigned long long>(partitions), static_cast<unsigned long long>(failures));
  EXPECT_EQ(failures, 0u);
  EXPECT_GT(reads, 0u);
}

// Clients that also send batches of writes (ClusterSimOptions::batch_writes): a storage node
// applies a batch in one store call when it serves every bucket of it at once, and write by write
// otherwise (fenced, moved, switched buckets), under the same chaos and the same checks.
TEST(ClusterSimTest, BatchWriteSeeds) {
  const auto [first, seeds] = SimSeedRange(50);
  uint64_t operations = 0, moves = 0, failures = 0;
  for (uint64_t seed = first; seed < first + seeds; ++seed) {
    ClusterSimOptions options{.seed = seed, .dir = ScratchDir(), .batch_writes = true};
    const ClusterSimResult result = RunClusterSim(options);
    operations += result.operations;
    moves += result.moves;
    if (!result.ok) {
      ++failures;
      ADD_FAILURE() << "batch writes, " << result.failure;
    }
  }
  std::printf("batch-write seeds %llu: operations %llu, committed moves %llu, failures %llu\n",
              static_cast<unsigned long long>(seeds), static_cast<unsigned long long>(operations),
              static_cast<unsigned long long>(moves), static_cast<unsigned long long>(failures));
  EXPECT_EQ(failures, 0u);
  EXPECT_GT(moves, 0u);
}

}  // namespace
}  // namespace shoal::sim
