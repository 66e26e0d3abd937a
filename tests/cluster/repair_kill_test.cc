// A repair to a returning node SIGKILLed while it is in flight, between real processes
// (docs/design/replication.md §6.1: "Log retention", "Copies outside the replicas", "An aborted
// move's drop keeps a held copy"). K = 3 on three nodes, writers on every bucket; n3 is killed,
// removed from its buckets and started again, and the coordinator repairs its copies (one move
// per node at a time). n3 is SIGKILLed again in the middle of one repair, and restarted:
//   - held at BEGIN (the coordinator pauses the repair before its first call): the aborted
//     repair took nothing from n3, so every copy n3 held as a backup, the cut one included, is
//     resumed from its primary's log after the second restart;
//   - after the resume (the destination cleared its copy's state, then pauses): the cut
//     bucket's copy vouches for nothing and is rebuilt by a snapshot ("no copy held"), and every
//     other copy n3 held as a backup still resumes;
//   - after a snapshot ingest of a node whose data directory was deleted: the half-built copy
//     is never resumed nor served (a reader of every key never sees an acknowledged write
//     missing), and the bucket is rebuilt by a later repair.
// Each case ends with three copies of every bucket and every key read back with its last
// acknowledged value (or a later write's). Times are printed, never asserted.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "tests/cluster/replication_fixture.h"

namespace shoal::cluster_test {
namespace {

constexpr uint32_t kVictim = 3;

// Where the repair to the returning node is when the node is SIGKILLed.
enum class KillPoint { kHeldAtBegin, kAfterResume };

class RepairKillTest : public ReplicationTest {
 protected:
  // The moves of `map` that add a copy on `node`, by bucket.
  static std::map<BucketId, MoveId> RepairsTo(const cluster::ShardMap& map, NodeId node) {
    std::map<BucketId, MoveId> out;
    for (const auto& bucket : map.buckets()) {
      if (!bucket.transition.has_value()) continue;
      const std::vector<NodeId> incoming = bucket.transition->Incoming();
      if (std::find(incoming.begin(), incoming.end(), node) != incoming.end()) {
        out[bucket.id] = bucket.transition->move;
      }
    }
    return out;
  }

  // Until the log of `id` past byte `from` has a line holding every one of `parts`.
  Status AwaitLog(uint32_t id, size_t from, const std::vector<std::string>& parts, int seconds) {
    const auto until = Clock::now() + std::chrono::seconds(seconds);
    while (Clock::now() < until) {
      if (!LogLines(id, from, parts).empty()) return OkStatus();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return DeadlineExceededError(
        fmt::format("no line with {} in the log within {} s", fmt::join(parts, ", "), seconds));
  }
  Status AwaitFailpointHit(uint32_t id, size_t from, const std::string& name, int seconds) {
    return AwaitLog(id, from, {fmt::format("failpoint {}: hit", name)}, seconds);
  }

  // Until none of `moves` is in the coordinator's map (each ended: aborted, as its destination
  // is dead).
  Status AwaitMovesEnded(const std::map<BucketId, MoveId>& moves, int seconds) {
    return AwaitMap(
        "the cut repairs ended",
        [&](const cluster::ShardMap& map) {
          return std::none_of(moves.begin(), moves.end(), [&](const auto& entry) {
            const auto* bucket = map.Find(entry.first);
            return bucket != nullptr && bucket->transition.has_value() &&
                   bucket->transition->move == entry.second;
          });
        },
        seconds);
  }

  // The lines of the log of `id` past byte `from` that hold every one of `parts`.
  std::vector<std::string> LogLines(uint32_t id, size_t from,
                                    const std::vector<std::string>& parts) const {
    std::vector<std::string> lines;
    const std::string log = cluster_->Log(id, from);
    size_t begin = 0;
    while (begin < log.size()) {
      size_t end = log.find('\n', begin);
      if (end == std::string::npos) end = log.size();
      std::string line = log.substr(begin, end - begin);
      if (std::all_of(parts.begin(), parts.end(), [&](const std::string& part) {
            return line.find(part) != std::string::npos;
          })) {
        lines.push_back(std::move(line));
      }
      begin = end + 1;
    }
    return lines;
  }

  // The repairs to n3 in the coordinator's map (none when it does not answer).
  std::map<BucketId, MoveId> RepairsToVictim() {
    const cluster::ShardMapPtr map = Map();
    return map != nullptr ? RepairsTo(*map, NodeId(kVictim)) : std::map<BucketId, MoveId>();
  }

  static std::string Resumed(BucketId b) {
    return fmt::format("move.resume bucket={} destination={}", b.value(), kVictim);
  }
  static std::string Snapshot(BucketId b) {
    return fmt::format("move.snapshot bucket={} destination={}", b.value(), kVictim);
  }

  // Prints how the copies of n3 came back after byte `from` of the coordinator's log.
  void PrintRepairs(const std::string& event, size_t from) const {
    const size_t resumed = LogLines(kCoordinator, from, {"move.resume ", "destination=3"}).size();
    const size_t snapshots =
        LogLines(kCoordinator, from, {"move.snapshot ", "destination=3"}).size();
    const size_t aborted = LogLines(kCoordinator, from, {"move.abort "}).size();
    const size_t kept = LogLines(kVictim, 0, {"node.drop_kept_copy"}).size();
    fmt::print(
        "[ measure ] {}: repairs to n3 resumed {}, by snapshot {}; moves aborted {}; aborted "
        "repairs' drops that kept a held copy at n3 {}\n",
        event, resumed, snapshots, aborted, kept);
    std::fflush(stdout);
  }
};

class ReturningNodeKilledTest : public RepairKillTest,
                                public testing::WithParamInterface<KillPoint> {};

// Item 1: n3 returns on its store, its repairs begin, and it is SIGKILLed in one of them.
TEST_P(ReturningNodeKilledTest, RepairAbortsAndTheCopiesComeBack) {
  const KillPoint point = GetParam();
  const NodeId victim(kVictim);
  cluster_->KeepNodePorts();
  ASSERT_NO_FATAL_FAILURE(StartCluster(3));
  ASSERT_NO_FATAL_FAILURE(StartWriters());
  const cluster::ShardMapPtr before = Map();
  ASSERT_NE(before, nullptr);
  const std::vector<BucketId> backed = BackupsOf(*before, victim);
  ASSERT_FALSE(backed.empty());

  cluster_->Kill(kVictim);
  const Status removed = AwaitMap(
      "n3 out of every bucket", [&](const auto& map) { return ListedNowhere(map, victim); }, 60);
  ASSERT_TRUE(removed.ok()) << removed;
  ASSERT_NO_FATAL_FAILURE(AwaitWrites(AllBuckets(), 20, 60));
  // A repair planned while n3 was down (it is called down only after node_timeout) fails at its
  // first call and aborts; the cut repair below is one that reaches the restarted node.
  const Status quiet = AwaitMap(
      "no repair to the dead n3", [&](const auto& map) { return RepairsTo(map, victim).empty(); },
      60);
  ASSERT_TRUE(quiet.ok()) << quiet;

  const size_t coordinator_from = cluster_->LogSize(kCoordinator);
  const size_t node_from = cluster_->LogSize(kVictim);
  std::map<BucketId, MoveId> cut;
  switch (point) {
    case KillPoint::kHeldAtBegin: {
      const Status held =
          cluster_->SetCoordinatorFailpoints(kCoordinator, "coordinator.after_begin=pause:4000");
      ASSERT_TRUE(held.ok()) << held;
      ASSERT_TRUE(cluster_->Restart(kVictim).ok());
      const Status begun = AwaitMap(
          "a repair to n3 begun", [&](const auto& map) { return !RepairsTo(map, victim).empty(); },
          60);
      ASSERT_TRUE(begun.ok()) << begun;
      const Status paused =
          AwaitFailpointHit(kCoordinator, coordinator_from, "coordinator.after_begin", 10);
      ASSERT_TRUE(paused.ok()) << paused;
      cut = RepairsToVictim();
      break;
    }
    case KillPoint::kAfterResume: {
      ASSERT_TRUE(cluster_->StartNode(kVictim, "destination.after_resume=pause:20000").ok());
      const Status resumed = AwaitFailpointHit(kVictim, node_from, "destination.after_resume", 60);
      ASSERT_TRUE(resumed.ok()) << resumed;
      // The repair waits for n3's answer: its transition stays in the map.
      cut = RepairsToVictim();
      break;
    }
  }
  ASSERT_FALSE(cut.empty());
  // Each cut repair fails at its call to the dead n3 and aborts; its drop then waits 5 s, in
  // which n3 is restarted on its port, so that the drop of the aborted repair reaches the
  // restarted node (unless a new repair of the bucket to n3 began first: n3 then refuses it).
  const Status late_drop =
      cluster_->SetCoordinatorFailpoints(kCoordinator, "coordinator.after_abort=pause:5000");
  ASSERT_TRUE(late_drop.ok()) << late_drop;
  const size_t kill_from = cluster_->LogSize(kCoordinator);
  const size_t restart_from = cluster_->LogSize(kVictim);
  cluster_->Kill(kVictim);
  const Clock::time_point killed = Clock::now();
  for (const auto& [bucket, move] : cut) {
    fmt::print("n3 SIGKILLed in {} to it, of {} ({})\n", move.DebugString(), bucket.DebugString(),
               std::find(backed.begin(), backed.end(), bucket) != backed.end()
                   ? "a copy it held as a backup"
                   : "a copy it led");
    const Status aborted = AwaitLog(kCoordinator, kill_from,
                                    {"move.abort ", fmt::format("move={} ", move.value())}, 60);
    ASSERT_TRUE(aborted.ok()) << move.DebugString() << " of " << bucket.DebugString() << ": "
                              << aborted;
  }
  ASSERT_TRUE(cluster_->Restart(kVictim).ok());
  const Clock::time_point restarted = Clock::now();
  ASSERT_TRUE(cluster_->SetCoordinatorFailpoints(kCoordinator, "").ok());
  ASSERT_NO_FATAL_FAILURE(AwaitFullyReplicated(90));
  fmt::print(
      "[ measure ] second restart -> 3 copies of every bucket: {} ms ({} ms after the kill)\n",
      MillisSince(restarted), MillisSince(killed));
  PrintRepairs("after the kill in a repair", coordinator_from);
  for (const auto& [b, move] : cut) {
    const bool kept = !LogLines(kVictim, restart_from,
                                {"node.drop_kept_copy", fmt::format("bucket={} ", b.value()),
                                 fmt::format("move={}", move.value())})
                           .empty();
    fmt::print("[ measure ] the aborted {}'s drop of {} at the restarted n3: {}\n",
               move.DebugString(), b.DebugString(),
               kept ? "kept the held copy" : "did not keep a copy (not reached, refused or taken)");
    // The resume had cleared the copy's state: nothing vouches for it, so no drop keeps it.
    if (point == KillPoint::kAfterResume) {
      EXPECT_FALSE(kept) << b.DebugString();
    }
  }
  const cluster::ShardMapPtr after = Map();
  ASSERT_NE(after, nullptr);
  for (const auto& bucket : after->buckets()) {
    EXPECT_TRUE(bucket.HasReplica(victim)) << bucket.DebugString();
  }
  for (BucketId b : backed) {
    if (point == KillPoint::kAfterResume && cut.contains(b)) continue;
    // Untouched by the kill: still the copy n3 held, resumed from its primary's log.
    EXPECT_FALSE(LogLines(kCoordinator, coordinator_from, {Resumed(b)}).empty())
        << b.DebugString() << " was not resumed from its primary's log";
  }
  if (point == KillPoint::kAfterResume) {
    // The resume cleared the cut copy's state before its catch-up: whatever that copy holds
    // vouches for nothing, so it is rebuilt, never resumed.
    for (const auto& [b, move] : cut) {
      EXPECT_FALSE(LogLines(kCoordinator, kill_from, {Snapshot(b), "no copy held"}).empty())
          << b.DebugString() << " was not rebuilt by a snapshot";
      EXPECT_TRUE(LogLines(kCoordinator, coordinator_from, {Resumed(b)}).empty())
          << b.DebugString() << " was resumed from a copy its resume had cleared";
    }
  }
  ASSERT_NO_FATAL_FAILURE(AwaitWrites(AllBuckets(), 50, 60));
  ExpectNothingLost();
}

INSTANTIATE_TEST_SUITE_P(Points, ReturningNodeKilledTest,
                         testing::Values(KillPoint::kHeldAtBegin, KillPoint::kAfterResume),
                         [](const testing::TestParamInfo<KillPoint>& info) {
                           switch (info.param) {
                             case KillPoint::kHeldAtBegin:
                               return std::string("held_at_begin");
                             case KillPoint::kAfterResume:
                               return std::string("after_resume");
                           }
                           return std::string("unknown");
                         });

// Item 2: n3 returns with its data directory deleted, so every copy is rebuilt by a snapshot;
// it is SIGKILLed once a snapshot is ingested and before that repair's end, and restarted. The
// ingested copy has no stored position: it is never resumed, never serves, and its bucket is
// rebuilt by a later repair.
TEST_F(RepairKillTest, WipedNodeKilledAfterASnapshotIngestIsRebuilt) {
  const NodeId victim(kVictim);
  ASSERT_NO_FATAL_FAILURE(StartCluster(3));
  ASSERT_NO_FATAL_FAILURE(StartWriters());
  const cluster::ShardMapPtr before = Map();
  ASSERT_NE(before, nullptr);
  const uint64_t old_store = before->FindNode(victim)->store_id;

  // Reads of every key from the primaries, judged against what was acknowledged before each.
  const std::unique_ptr<StaleReads> reader = StartStaleReader(*before);

  cluster_->Kill(kVictim);
  std::error_code ec;
  std::filesystem::remove_all(fmt::format("{}/node-{}", cluster_->dir(), kVictim), ec);
  ASSERT_FALSE(ec) << ec.message();
  const size_t node_from = cluster_->LogSize(kVictim);
  ASSERT_TRUE(cluster_->StartNode(kVictim, "destination.after_ingest=pause:20000").ok());
  // A repair that began before the coordinator saw n3's new store loses its transition to the
  // ResetNode edit while it ingests; the repairs to the reset node hit the same point: wait for
  // a hit while its repair is in the map.
  std::map<BucketId, MoveId> cut;
  size_t hits_seen = 0;
  const std::vector<std::string> hit = {"failpoint destination.after_ingest: hit"};
  for (const auto until = Clock::now() + std::chrono::seconds(90);
       cut.empty() && Clock::now() < until;) {
    if (const size_t hits = LogLines(kVictim, node_from, hit).size(); hits > hits_seen) {
      hits_seen = hits;
      cut = RepairsToVictim();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ASSERT_GT(hits_seen, 0u) << "no snapshot ingested on n3 within 90 s";
  ASSERT_FALSE(cut.empty()) << hits_seen << " ingests, none of a repair still in the map";
  const size_t coordinator_from = cluster_->LogSize(kCoordinator);
  cluster_->Kill(kVictim);
  const Clock::time_point killed = Clock::now();
  for (const auto& [bucket, move] : cut) {
    fmt::print("n3 SIGKILLed after ingesting {} of {}\n", move.DebugString(), bucket.DebugString());
  }
  const Status ended = AwaitMovesEnded(cut, 60);
  ASSERT_TRUE(ended.ok()) << ended;
  // Never committed, so the copy never counted. The repair either aborted (its call to the dead
  // n3 failed), or, when it began before the coordinator saw n3's new store, the ResetNode edit
  // took its transition out of the map (an uncommitted transition involving the node is
  // dropped there, with no ABORT record and no drop call).
  for (const auto& [bucket, move] : cut) {
    EXPECT_TRUE(LogLines(kCoordinator, 0,
                         {fmt::format("CommitTransition({}, {})", bucket.DebugString(),
                                      move.DebugString())})
                    .empty())
        << move.DebugString() << " of " << bucket.DebugString() << " committed";
    const bool aborted =
        !LogLines(kCoordinator, 0, {"move.abort ", fmt::format("move={} ", move.value())}).empty();
    fmt::print("[ measure ] {} of {} ended by {}\n", move.DebugString(), bucket.DebugString(),
               aborted ? "an ABORT" : "the ResetNode of n3");
  }

  const size_t restart_from = cluster_->LogSize(kVictim);
  ASSERT_TRUE(cluster_->Restart(kVictim).ok());
  const Clock::time_point restarted = Clock::now();
  ASSERT_NO_FATAL_FAILURE(AwaitFullyReplicated(90));
  fmt::print(
      "[ measure ] restart after the kill -> 3 copies of every bucket: {} ms ({} ms after "
      "the kill)\n",
      MillisSince(restarted), MillisSince(killed));
  PrintRepairs("after the kill past an ingest", coordinator_from);
  const cluster::ShardMapPtr after = Map();
  ASSERT_NE(after, nullptr);
  EXPECT_NE(after->FindNode(victim)->store_id, old_store);
  for (const auto& bucket : after->buckets()) {
    EXPECT_TRUE(bucket.HasReplica(victim)) << bucket.DebugString();
  }
  for (const auto& [b, move] : cut) {
    // Rebuilt by a later repair, never resumed from the half-built copy.
    EXPECT_FALSE(LogLines(kCoordinator, coordinator_from,
                          {"move.begin ", fmt::format("bucket={} ", b.value()), "destination=3"})
                     .empty())
        << b.DebugString() << " was not repaired again";
    EXPECT_TRUE(LogLines(kCoordinator, coordinator_from, {Resumed(b)}).empty())
        << b.DebugString() << " was resumed from a half-built copy";
    EXPECT_TRUE(
        LogLines(kVictim, restart_from, {"node.copy_resumed", fmt::format("bucket={} ", b.value())})
            .empty())
        << b.DebugString();
  }
  ASSERT_NO_FATAL_FAILURE(AwaitWrites(AllBuckets(), 50, 60));
  reader->ExpectNoneStale();
  ExpectNothingLost();
}

}  // namespace
}  // namespace shoal::cluster_test
