// Replication between real processes (docs/design/replication.md §9, §10 step 7): a coordinator
// and three or four `shoal node` processes keep K = 3 copies of each of 8 buckets (min_in_sync 2)
// while writer threads of network clients update keys of every bucket, and processes fail under
// them:
//   - the primary of some buckets is SIGKILLed: a backup is promoted and writes go on (the time
//     from the kill to the bucket's next acknowledged write is printed, never asserted);
//   - a backup is SIGKILLed: its primaries remove it and writes go on; restarted, it gets its
//     copies back (`shoal status`), those it held as a backup resumed from their primaries' logs
//     with no snapshot;
//   - two of four nodes die one after the other: buckets left with one live copy refuse writes
//     with NOT_ENOUGH_REPLICAS, the others keep working, and a copy promoted alone serves reads;
//     both come back and every bucket has three copies again;
//   - at the floor (three nodes, two dead one after the other), a primary whose silent backup
//     stays listed refuses writes and still serves reads;
//   - with the split threshold lowered, buckets split under the writers (each quiesced first),
//     and every key reads back from any copy;
//   - a node comes back with its data directory deleted: it is reset and rebuilt (snapshot and
//     catch-up), no read meanwhile misses or goes back on an acknowledged write, and the rebuilt
//     copies end up serving as primaries;
//   - a node's data directory is deleted while it runs: it stops itself (exit status 74), fails
//     over, and is rebuilt when started again (its real file system going read-only or freezing:
//     disk_failure_test.cc);
//   - a primary is stopped (SIGSTOP) past the failover timeout and woken (SIGCONT): clients whose
//     map still names it read the newest acknowledged values, and no write it takes at its old
//     term is acknowledged and then lost;
//   - the coordinator crashes at each failpoint of a failover (after the seals, before and after
//     the promotion edit, which also removes backups that did not answer) and is restarted: the
//     failover ends without loss. replica_manager.cc has no failpoint inside a backup's removal on
//     a primary's report; these are the points of §9's "coordinator dies between removing a
//     backup and the ack, or during the failover CAS".
// Every case ends by reading every key back: each must hold its last acknowledged value, or the
// value of a later write whose outcome the client did not learn.
//
// SHOAL_FAULT_KEEP keeps the processes' directories and logs. The `shoal` binary is
// SHOAL_BINARY, else the one built alongside.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <optional>

#include "proto/shoal.pb.h"
#include "tests/cluster/replication_fixture.h"

namespace shoal::cluster_test {
namespace {

// §4.2: the primary of some buckets dies; once failover_timeout and the lease have passed, the
// most advanced backup of each is promoted under a new term and writes go on.
TEST_F(ReplicationTest, PrimaryKilledUnderWritesFailsOverWithoutLoss) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(3));
  ASSERT_NO_FATAL_FAILURE(StartWriters());
  const cluster::ShardMapPtr before = Map();
  ASSERT_NE(before, nullptr);
  const NodeId victim(1);
  const std::vector<BucketId> led = PrimariesOf(*before, victim);
  ASSERT_FALSE(led.empty());

  cluster_->Kill(victim.value());
  const Clock::time_point killed = Clock::now();
  const Status promoted = AwaitMap(
      "n1 the primary of no bucket",
      [&](const auto& map) { return PrimariesOf(map, victim).empty(); }, 60);
  ASSERT_TRUE(promoted.ok()) << promoted;
  fmt::print("[ measure ] primary SIGKILL -> a backup of each of its buckets promoted: {} ms\n",
             MillisSince(killed));
  MeasureWritesBack("primary SIGKILL", led, killed);
  const Status failed_over = AwaitMap(
      "n1 out of every bucket", [&](const auto& map) { return ListedNowhere(map, victim); }, 60);
  ASSERT_TRUE(failed_over.ok()) << failed_over;
  const cluster::ShardMapPtr after = Map();
  ASSERT_NE(after, nullptr);
  for (BucketId b : led) {
    EXPECT_GT(after->Find(b)->term, before->Find(b)->term) << after->Find(b)->DebugString();
  }
  ASSERT_NO_FATAL_FAILURE(AwaitWrites(AllBuckets(), 50, 60));
  ExpectNothingLost();
}

// §4.1: a dead backup is reported by its primaries after T_ack and removed (three copies are above
// the floor), so writes go on; its primaries fail over. Restarted on its data directory, it gets
// a copy of every bucket back.
TEST_F(ReplicationTest, BackupKilledIsRemovedAndRestartedGetsItsCopiesBack) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(3));
  ASSERT_NO_FATAL_FAILURE(StartWriters());
  const cluster::ShardMapPtr before = Map();
  ASSERT_NE(before, nullptr);
  const NodeId victim(3);
  const std::vector<BucketId> backed = BackupsOf(*before, victim);
  ASSERT_FALSE(backed.empty());

  cluster_->Kill(victim.value());
  const Clock::time_point killed = Clock::now();
  MeasureWritesBack("backup SIGKILL", backed, killed);
  const Status removed = AwaitMap(
      "n3 out of every bucket", [&](const auto& map) { return ListedNowhere(map, victim); }, 60);
  ASSERT_TRUE(removed.ok()) << removed;
  // The primaries reported it, and the coordinator removed it (above the floor).
  EXPECT_TRUE(cluster_->LogShows(kCoordinator, "backup=3 primary="));
  ASSERT_NO_FATAL_FAILURE(AwaitWrites(AllBuckets(), 50, 60));

  ASSERT_TRUE(cluster_->Restart(victim.value()).ok());
  const Clock::time_point restarted = Clock::now();
  ASSERT_NO_FATAL_FAILURE(AwaitFullyReplicated(60));
  fmt::print("[ measure ] backup restart -> 3 copies of every bucket: {} ms\n",
             MillisSince(restarted));
  const cluster::ShardMapPtr after = Map();
  ASSERT_NE(after, nullptr);
  for (const auto& bucket : after->buckets()) {
    EXPECT_TRUE(bucket.HasReplica(victim)) << bucket.DebugString();
  }
  // Log retention (§6): the node came back on its store within seconds, so each copy it held
  // as a backup is a prefix of its primary's history, which the primary's log still holds: it
  // resumes there, with no snapshot. (A copy it led may hold an unacknowledged write of its own
  // and be rebuilt instead.) A repair that began while the node was still down and aborted takes
  // nothing from it: the abort's drop keeps a copy that predates the move (replication.md §6.1).
  for (BucketId b : backed) {
    EXPECT_TRUE(cluster_->LogShows(kCoordinator, fmt::format("move.resume bucket={} destination={}",
                                                             b.value(), victim.value())))
        << b.DebugString() << " was not resumed from its primary's log";
  }
  // Primaries are evened by handoffs once every copy is there: the rebuilt copies serve.
  const Status leads = AwaitMap(
      "n3 the primary of a bucket again",
      [&](const auto& map) { return !PrimariesOf(map, victim).empty(); }, 60);
  EXPECT_TRUE(leads.ok()) << leads;
  ASSERT_NO_FATAL_FAILURE(AwaitWrites(AllBuckets(), 50, 60));
  ExpectNothingLost();
}

// §4.1 step 3 and §4.8: of four nodes, two die one after the other (the repairs that the first
// death starts are held at their BEGIN, so that no copy is rebuilt in between). A bucket that held
// both keeps one live copy: writes to it are refused with NOT_ENOUGH_REPLICAS, whether its last
// copy was promoted alone or its silent backup stays listed at the floor; the buckets with two
// live copies take writes, and a bucket promoted alone still serves reads. Both nodes come back
// and every bucket has three copies again, with nothing lost.
TEST_F(ReplicationTest, TwoNodesKilledLeaveOneCopyThatRefusesWrites) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(4));
  ASSERT_NO_FATAL_FAILURE(StartWriters());
  // Long enough for the checks below; the held moves end (most abort) soon after. Set before
  // the map is read: a move that began earlier (the balancer evens bytes while the writers
  // run) would add a copy meanwhile, so the map is read once every such move has ended.
  const Status held =
      cluster_->SetCoordinatorFailpoints(kCoordinator, "coordinator.after_begin=pause:30000");
  ASSERT_TRUE(held.ok()) << held;
  std::set<uint64_t> unheld;  // moves past their BEGIN when the failpoint was set
  {
    const cluster::ShardMapPtr now = Map();
    ASSERT_NE(now, nullptr);
    for (const auto& bucket : now->buckets()) {
      if (bucket.transition.has_value()) unheld.insert(bucket.transition->move.value());
    }
  }
  const Status quiet = AwaitMap(
      "every move begun before the failpoint ended",
      [&](const cluster::ShardMap& map) {
        return std::none_of(map.buckets().begin(), map.buckets().end(), [&](const auto& b) {
          return b.transition.has_value() && unheld.contains(b.transition->move.value());
        });
      },
      60);
  ASSERT_TRUE(quiet.ok()) << quiet;
  const cluster::ShardMapPtr before = Map();
  ASSERT_NE(before, nullptr);
  // Two nodes that both hold some buckets, but not every bucket.
  NodeId first;
  NodeId second;
  std::vector<BucketId> one_left;  // held by both
  for (uint32_t a = 1; a <= 4 && first == NodeId(); ++a) {
    for (uint32_t b = a + 1; b <= 4 && first == NodeId(); ++b) {
      std::vector<BucketId> both;
      for (const auto& bucket : before->buckets()) {
        if (bucket.HasReplica(NodeId(a)) && bucket.HasReplica(NodeId(b))) both.push_back(bucket.id);
      }
      if (!both.empty() && both.size() < before->buckets().size()) {
        first = NodeId(a);
        second = NodeId(b);
        one_left = std::move(both);
      }
    }
  }
  ASSERT_NE(first, NodeId()) << "no two nodes share some buckets but not all: "
                             << before->DebugString();
  fmt::print("n{} and n{} die; they share {} buckets\n", first.value(), second.value(),
             one_left.size());
  cluster_->Kill(first.value());
  const Status out = AwaitMap(
      "the first out of every bucket", [&](const auto& map) { return ListedNowhere(map, first); },
      60);
  ASSERT_TRUE(out.ok()) << out;
  cluster_->Kill(second.value());
  const Clock::time_point killed = Clock::now();
  // The second's buckets fail over, and it leaves those where it is a backup above the floor.
  const Status settled = AwaitMap(
      "the second the primary of no bucket, and a backup only at the floor",
      [&](const cluster::ShardMap& map) {
        return std::all_of(map.buckets().begin(), map.buckets().end(), [&](const auto& b) {
          return !b.HasReplica(second) ||
                 (b.replicas.front() != second && b.replicas.size() <= kMinInSync);
        });
      },
      60);
  ASSERT_TRUE(settled.ok()) << settled;
  const cluster::ShardMapPtr now = Map();
  ASSERT_NE(now, nullptr);
  // Which buckets have fewer than min_in_sync live copies: those that held both dead nodes (and
  // any that a slow machine took a copy from, e.g. a backup that answered no seal in time).
  std::vector<BucketId> short_of_copies;
  std::vector<BucketId> serving;
  for (const auto& bucket : now->buckets()) {
    const bool whole = bucket.replicas.size() >= kMinInSync && !bucket.HasReplica(first) &&
                       !bucket.HasReplica(second);
    (whole ? serving : short_of_copies).push_back(bucket.id);
  }
  for (BucketId b : one_left) {
    EXPECT_NE(std::find(short_of_copies.begin(), short_of_copies.end(), b), short_of_copies.end())
        << now->Find(b)->DebugString();
  }
  EXPECT_FALSE(serving.empty());

  std::vector<BucketId> alone;  // promoted alone: one listed replica
  for (BucketId b : short_of_copies) {
    const Status refused = AwaitNotEnoughReplicas(*before, b, 30);
    EXPECT_TRUE(NotEnoughReplicas(refused)) << b.DebugString() << ": " << refused;
    fmt::print("{} {} ms after the second kill: {}; writes: {}\n", b.DebugString(),
               MillisSince(killed), now->Find(b)->DebugString(), refused.ToString());
    if (now->Find(b)->replicas.size() == 1) alone.push_back(b);
  }
  ASSERT_NO_FATAL_FAILURE(AwaitWrites(serving, 20, 60));
  // Keys written once before the kills read back from a copy promoted alone (a bucket whose
  // silent backup stays listed at the floor: ReadsGoOnAtTheFloorWhileASilentBackupStaysListed).
  for (BucketId b : alone) {
    client::Client reader(*runtime_);
    ExpectReadsCurrent(reader, KeysIn(*before, b, "s", kStableKeysPerBucket), 20, b.DebugString());
  }

  ASSERT_TRUE(cluster_->SetCoordinatorFailpoints(kCoordinator, "").ok());
  ASSERT_TRUE(cluster_->Restart(first.value()).ok());
  ASSERT_TRUE(cluster_->Restart(second.value()).ok());
  const Clock::time_point restarted = Clock::now();
  ASSERT_NO_FATAL_FAILURE(AwaitFullyReplicated(90));
  fmt::print("[ measure ] both restarted -> 3 copies of every bucket: {} ms\n",
             MillisSince(restarted));
  ASSERT_NO_FATAL_FAILURE(AwaitWrites(AllBuckets(), 50, 60));
  ExpectNothingLost();
}

// §4.1 step 3: at the floor writes are refused and reads go on. A primary whose silent backup the
// coordinator keeps listed (removing it would undercut min_in_sync) takes its read lease from
// the coordinator's heartbeat answers instead of that backup's renewals, and a read of a key
// waits only for pending writes of that key (StorageNode::AwaitReadable). With three nodes
// nothing can be repaired: n3 dies and leaves every bucket, then n2 dies; the buckets n1 leads
// with n2 as their backup refuse writes and serve reads.
TEST_F(ReplicationTest, ReadsGoOnAtTheFloorWhileASilentBackupStaysListed) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(3));
  ASSERT_NO_FATAL_FAILURE(StartWriters());
  const cluster::ShardMapPtr before = Map();
  ASSERT_NE(before, nullptr);
  cluster_->Kill(3);
  const Status out = AwaitMap(
      "n3 out of every bucket", [&](const auto& map) { return ListedNowhere(map, NodeId(3)); }, 60);
  ASSERT_TRUE(out.ok()) << out;
  const cluster::ShardMapPtr two = Map();
  ASSERT_NE(two, nullptr);
  const std::vector<BucketId> floor_held = PrimariesOf(*two, NodeId(1));
  ASSERT_FALSE(floor_held.empty());
  cluster_->Kill(2);
  for (BucketId b : floor_held) {
    const Status refused = AwaitNotEnoughReplicas(*before, b, 30);
    EXPECT_TRUE(NotEnoughReplicas(refused)) << b.DebugString() << ": " << refused;
    const cluster::ShardMapPtr now = Map();
    ASSERT_NE(now, nullptr);
    EXPECT_EQ(now->Find(b)->replicas, (std::vector<NodeId>{NodeId(1), NodeId(2)}))
        << now->Find(b)->DebugString();
    client::Client reader(*runtime_);
    ExpectReadsCurrent(reader, KeysIn(*before, b, "s", kStableKeysPerBucket), 20,
                       b.DebugString() + " at the floor");
  }
}

// §7 and §5 over the network: with the split threshold lowered, the balancer splits buckets of
// the replicated map under the writers (each split quiesces the primary by QuiesceRequest over
// gRPC, then commits at that epoch); writes go on, every key reads back, and reads of any copy
// (GetRequest.any_replica) return what was written, at most max_staleness behind.
TEST_F(ReplicationTest, BucketsSplitUnderWritersAndAnyCopyServesReads) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(3));
  ASSERT_NO_FATAL_FAILURE(StartWriters());
  // About 200 KiB per bucket, above the 64 KiB threshold set below.
  const std::string padding(4096, 'x');
  std::map<std::string, std::string> bulk;
  for (int i = 0; i < 400; ++i) {
    const std::string key = fmt::format("bulk-{}", i);
    const std::string body = fmt::format(R"({{"i":{},"pad":"{}"}})", i, padding);
    ASSERT_TRUE(client_->Upsert(collection_, key, body).ok()) << key;
    bulk[key] = body;
  }
  const size_t buckets = Map()->buckets().size();
  wire::AdminRequest thresholds;
  thresholds.mutable_set_thresholds()->set_split_bytes(64 << 10);
  thresholds.mutable_set_thresholds()->set_merge_bytes(0);  // 2 x merge must stay below split
  const auto set = runtime_->Admin(thresholds, 5'000'000);
  ASSERT_TRUE(set.ok()) << set.status();
  const Clock::time_point lowered = Clock::now();
  const Status split = AwaitMap(
      "buckets split", [&](const auto& map) { return map.buckets().size() >= 2 * buckets; }, 90);
  ASSERT_TRUE(split.ok()) << split;
  fmt::print("[ measure ] {} buckets split into {} in {} ms\n", buckets, Map()->buckets().size(),
             MillisSince(lowered));
  ASSERT_NO_FATAL_FAILURE(AwaitWrites(AllBuckets(), 30, 60));
  // Every bulk key from any copy: the copies take turns, a lagging one passes the read on.
  for (const auto& [key, body] : bulk) {
    auto got = client_->GetAnyReplica(collection_, key);
    ASSERT_TRUE(got.ok()) << key << ": " << got.status();
    EXPECT_EQ(got->body, body) << key;
  }
  ExpectNothingLost();
}

// §4.6: a node comes back at once with its data directory deleted. Its new store id does not
// match the map's: it serves no bucket from its empty store, its primaries fail over, it is reset
// out of every bucket and rebuilt by repairs (snapshot and catch-up). A reader meanwhile never
// sees an acknowledged write missing or older than acknowledged; at the end the rebuilt node is
// the primary of some buckets again and every key reads back.
TEST_F(ReplicationTest, NodeBackWithItsDataDeletedIsRebuiltAndNeverServesOldData) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(3));
  ASSERT_NO_FATAL_FAILURE(StartWriters());
  const NodeId victim(3);
  const cluster::ShardMapPtr before = Map();
  ASSERT_NE(before, nullptr);
  const uint64_t old_store = before->FindNode(victim)->store_id;
  ASSERT_FALSE(PrimariesOf(*before, victim).empty());

  // Reads of every key, judged against what was acknowledged before each began.
  const std::unique_ptr<StaleReads> reader = StartStaleReader(*before);

  cluster_->Kill(victim.value());
  std::error_code ec;
  std::filesystem::remove_all(fmt::format("{}/node-{}", cluster_->dir(), victim.value()), ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(cluster_->Restart(victim.value()).ok());
  const Clock::time_point restarted = Clock::now();
  const Status reset = AwaitNewStore(victim, old_store);
  EXPECT_TRUE(reset.ok()) << reset;
  ASSERT_NO_FATAL_FAILURE(AwaitFullyReplicated(90));
  fmt::print("[ measure ] wiped node restart -> 3 copies of every bucket: {} ms\n",
             MillisSince(restarted));
  EXPECT_TRUE(cluster_->LogShows(kCoordinator, "replica.reset_node node=3"));
  // Rebuilt by copies from the primaries: an exported snapshot, then catch-up rounds.
  EXPECT_TRUE(cluster_->LogShows(kCoordinator, "destination=3 mode=copy-then-switch"));
  // Primaries are evened by handoffs once every copy is there: the rebuilt copies serve.
  const Status evened = AwaitMap(
      "n3 the primary of a bucket again",
      [&](const auto& map) { return !PrimariesOf(map, victim).empty(); }, 60);
  EXPECT_TRUE(evened.ok()) << evened;
  ASSERT_NO_FATAL_FAILURE(AwaitWrites(AllBuckets(), 50, 60));
  reader->ExpectNoneStale();
  ExpectNothingLost();
}

// A node's data directory deleted while the node runs (a cleaner of /tmp, an rm -rf of the wrong
// directory): the engine would go on acknowledging writes into files that are gone, and the
// copy would vanish at its next start. The node sees its directory gone and stops itself
// (node.storage_failed, exit status 74); its buckets fail over to their other copies, and,
// started again, it is rebuilt like a wiped node. No read is stale, nothing acknowledged is lost.
TEST_F(ReplicationTest, NodeWhoseDataDirectoryIsDeletedWhileItRunsStopsItselfAndIsRebuilt) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(3));
  ASSERT_NO_FATAL_FAILURE(StartWriters());
  const NodeId victim(3);
  const cluster::ShardMapPtr before = Map();
  ASSERT_NE(before, nullptr);
  const uint64_t old_store = before->FindNode(victim)->store_id;
  const std::vector<BucketId> led = PrimariesOf(*before, victim);
  ASSERT_FALSE(led.empty());
  const std::unique_ptr<StaleReads> reader = StartStaleReader(*before);

  std::error_code ec;
  std::filesystem::remove_all(fmt::format("{}/node-{}", cluster_->dir(), victim.value()), ec);
  ASSERT_FALSE(ec) << ec.message();
  const Clock::time_point removed = Clock::now();
  std::optional<Exit> stopped;
  const auto until = Clock::now() + std::chrono::seconds(30);
  while (!stopped.has_value() && Clock::now() < until) {
    for (const Exit& exit : cluster_->Reap()) {
      ASSERT_EQ(exit.id, victim.value()) << "process " << exit.id << " exited: " << exit.status;
      stopped = exit;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(stopped.has_value()) << "n3 still runs 30 s after its directory was deleted";
  fmt::print("[ measure ] data directory deleted -> the node stopped itself: {} ms\n",
             MillisSince(removed));
  EXPECT_TRUE(WIFEXITED(stopped->status) && WEXITSTATUS(stopped->status) == 74)
      << "wait status " << stopped->status;
  EXPECT_TRUE(cluster_->LogShows(victim.value(), "node.storage_failed"));
  EXPECT_TRUE(cluster_->LogShows(victim.value(), "was removed while this process had its files"));
  MeasureWritesBack("data directory deleted", led, removed);

  ASSERT_NO_FATAL_FAILURE(RestartAndAwaitRebuilt(victim, old_store));
  reader->ExpectNoneStale();
  ExpectNothingLost();
}

// §4.2, §4.7 and §5: a primary stops (SIGSTOP) without dying. Its buckets fail over once the
// lease it may hold has run out, and writes go on at the new primaries. Woken (SIGCONT), it still
// holds its old map: clients whose map names it (learned before the stop, no map watch) read
// every key written during the stop at its newest acknowledged value, and whatever they write
// through it reads back later (no write it took at its old term was acknowledged and lost).
TEST_F(ReplicationTest, StoppedPrimaryWakesWithoutServingStaleReadsOrWrites) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(3));
  ASSERT_NO_FATAL_FAILURE(StartWriters());
  const cluster::ShardMapPtr before = Map();
  ASSERT_NE(before, nullptr);
  const NodeId victim(1);
  const std::vector<BucketId> led = PrimariesOf(*before, victim);
  ASSERT_FALSE(led.empty());
  client::Client stale_reader(*runtime_);
  client::Client stale_writer(*runtime_);
  ASSERT_TRUE(stale_reader.Refresh().ok());
  ASSERT_TRUE(stale_writer.Refresh().ok());

  cluster_->Pause(victim.value());
  const Clock::time_point paused = Clock::now();
  const Status failed_over = AwaitMap(
      "n1 out of every bucket", [&](const auto& map) { return ListedNowhere(map, victim); }, 60);
  if (!failed_over.ok()) cluster_->Resume(victim.value());
  ASSERT_TRUE(failed_over.ok()) << failed_over;
  fmt::print("[ measure ] primary SIGSTOP -> out of every bucket in the map: {} ms\n",
             MillisSince(paused));
  MeasureWritesBack("primary SIGSTOP", led, paused);
  // Every bucket takes writes without n1; its former ones are written well past the failover.
  ASSERT_NO_FATAL_FAILURE(AwaitWrites(AllBuckets(), 50, 60));
  fmt::print("n1 stopped for {} ms\n", MillisSince(paused));

  cluster_->Resume(victim.value());
  std::vector<std::string> written_through_old;
  Background writer([&](const std::atomic<bool>&) {
    for (BucketId b : led) {
      const std::string key = fmt::format("stale{}", b.value());
      const int64_t seq = history_.Next();
      history_.Sent(key, seq);
      auto written = stale_writer.Upsert(collection_, key, ValueOf(key, seq));
      if (written.ok()) {
        history_.Acknowledged(key, seq);
        written_through_old.push_back(key);
      }
    }
  });
  std::vector<std::string> keys;
  for (BucketId b : led) {
    keys.insert(keys.end(), writers_.at(b)->keys().begin(), writers_.at(b)->keys().end());
  }
  ExpectReadsCurrent(stale_reader, keys, 30, "stale reader after SIGCONT");
  writer.Join();
  // The stale reader did ask n1 first, and was sent on (WRONG_SHARD, or a retry after NOT_SERVING
  // or a lost call).
  EXPECT_GE(stale_reader.counters().wrong_shard + stale_reader.counters().retries, 1u);
  fmt::print("stale reader: {} WRONG_SHARD, {} retries\n", stale_reader.counters().wrong_shard,
             stale_reader.counters().retries);
  fmt::print("{} of {} writes through a stale map acknowledged after SIGCONT\n",
             written_through_old.size(), led.size());
  ExpectReadsCurrent(*client_, written_through_old, 30, "after the stale writes");
  // The woken node's copies are rebuilt.
  ASSERT_NO_FATAL_FAILURE(AwaitFullyReplicated(90));
  ASSERT_NO_FATAL_FAILURE(AwaitWrites(AllBuckets(), 50, 60));
  ExpectNothingLost();
}

// §4.5: the coordinator crashes at a step of the failover of a dead primary's buckets (after
// sealing the backups; before the promotion edit; once that edit is stored) and restarts on its
// data directory. The new coordinator finishes the failover; no acknowledged write is lost.
class CoordinatorCrashDuringFailoverTest : public ReplicationTest,
                                           public testing::WithParamInterface<const char*> {};

TEST_P(CoordinatorCrashDuringFailoverTest, FailoverEndsWithoutLoss) {
  const std::string point = GetParam();
  ASSERT_NO_FATAL_FAILURE(StartCluster(3));
  ASSERT_NO_FATAL_FAILURE(StartWriters());
  const cluster::ShardMapPtr before = Map();
  ASSERT_NE(before, nullptr);
  const NodeId victim(1);
  const std::vector<BucketId> led = PrimariesOf(*before, victim);
  ASSERT_FALSE(led.empty());
  const Status armed = cluster_->SetCoordinatorFailpoints(kCoordinator, point + "=crash:1");
  ASSERT_TRUE(armed.ok()) << armed;

  cluster_->Kill(victim.value());
  const Clock::time_point killed = Clock::now();
  bool crashed = false;
  const auto until = Clock::now() + std::chrono::seconds(30);
  while (!crashed && Clock::now() < until) {
    for (const Exit& exit : cluster_->Reap()) {
      ASSERT_EQ(exit.id, kCoordinator) << "process " << exit.id << " exited: " << exit.status;
      crashed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(crashed) << point << " not reached within 30 s";
  ASSERT_TRUE(cluster_->LogShowsFailpoint(kCoordinator, point));
  ASSERT_TRUE(cluster_->Restart(kCoordinator).ok());
  const Status failed_over = AwaitMap(
      "n1 out of every bucket", [&](const auto& map) { return ListedNowhere(map, victim); }, 60);
  ASSERT_TRUE(failed_over.ok()) << failed_over;
  MeasureWritesBack(fmt::format("primary SIGKILL with the coordinator crashed at {}", point), led,
                    killed);
  ASSERT_NO_FATAL_FAILURE(AwaitWrites(AllBuckets(), 50, 60));
  ExpectNothingLost();
}

INSTANTIATE_TEST_SUITE_P(Steps, CoordinatorCrashDuringFailoverTest,
                         testing::Values("coordinator.after_seal", "coordinator.before_promote",
                                         "coordinator.after_promote"),
                         [](const testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '.', '_');
                           return name;
                         });

}  // namespace
}  // namespace shoal::cluster_test
