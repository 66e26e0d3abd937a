// ReplicationLog and ReplicaStreamQueue: the primary's bookkeeping between ordering a replicated
// write and acknowledging it, and the batching of one primary-to-backup stream.

#include "src/node/replication_log.h"

#include <gtest/gtest.h>

#include "src/node/replica_stream_queue.h"

namespace shoal::node {
namespace {

constexpr BucketId kB(3);
constexpr NodeId kN2(2);
constexpr NodeId kN3(3);

TEST(ReplicationLogTest, AWriteCommitsOnceEveryReplicaHoldsItDurably) {
  ReplicationLog log;
  log.Configure(kB, {kN2, kN3}, /*ordered_rseq=*/10, /*joined_rseq=*/10);
  EXPECT_EQ(log.Watermark(kB), 10u);
  EXPECT_EQ(log.StateOf(kB, 10), WriteState::kCommitted);
  log.Ordered(kB, 11);
  log.Ordered(kB, 12);
  EXPECT_EQ(log.StateOf(kB, 11), WriteState::kPending);
  log.Acked(kB, kN2, 12);
  log.Acked(kB, kN3, 11);
  EXPECT_EQ(log.StateOf(kB, 11), WriteState::kPending) << "the primary's own WAL is not synced";
  log.LocalSynced(kB, 12);
  EXPECT_EQ(log.Watermark(kB), 11u);
  EXPECT_EQ(log.StateOf(kB, 11), WriteState::kCommitted);
  EXPECT_EQ(log.StateOf(kB, 12), WriteState::kPending);
  EXPECT_EQ(log.Lagging(kB, 12), std::vector<NodeId>{kN3});
  log.Acked(kB, kN3, 5);  // a late, older ack never moves a backup back
  log.Acked(kB, kN3, 12);
  EXPECT_EQ(log.StateOf(kB, 12), WriteState::kCommitted);
  log.Acked(kB, NodeId(9), 100);  // not a backup of the configuration: ignored
  EXPECT_EQ(log.Watermark(kB), 12u);
}

// A watcher's wakeup is set once its write is decided (committed, abandoned or forgotten), and
// at once for a write decided already; never for a write still pending.
TEST(ReplicationLogTest, AWatchedWriteWakesItsWaiterOnceDecided) {
  ReplicationLog log;
  log.Configure(kB, {kN2, kN3}, /*ordered_rseq=*/10, /*joined_rseq=*/10);
  auto done = std::make_shared<transport::Wakeup>();
  log.Watch(kB, 10, done);
  EXPECT_TRUE(done->IsSet()) << "committed before the watch";
  log.Ordered(kB, 11);
  log.Ordered(kB, 12);
  auto first = std::make_shared<transport::Wakeup>();
  auto second = std::make_shared<transport::Wakeup>();
  log.Watch(kB, 11, first);
  log.Watch(kB, 12, second);
  log.Acked(kB, kN2, 12);
  log.Acked(kB, kN3, 11);
  EXPECT_FALSE(first->IsSet());
  log.LocalSynced(kB, 12);  // commits 11 only: n3 holds 11
  EXPECT_TRUE(first->IsSet());
  EXPECT_FALSE(second->IsSet());
  log.Unwatch(kB, first.get());
  log.Abandon(kB);
  EXPECT_TRUE(second->IsSet()) << "abandoned";
  log.Unwatch(kB, second.get());
  log.Ordered(kB, 13);
  auto forgotten = std::make_shared<transport::Wakeup>();
  log.Watch(kB, 13, forgotten);
  log.Forget(kB);
  EXPECT_TRUE(forgotten->IsSet());
  log.Unwatch(kB, forgotten.get());
}

TEST(ReplicationLogTest, OnlyARemovalFromTheConfigurationLetsTheWatermarkPassASilentBackup) {
  ReplicationLog log;
  log.Configure(kB, {kN2, kN3}, 0, 0);
  log.Ordered(kB, 1);
  log.LocalSynced(kB, 1);
  log.Acked(kB, kN2, 1);
  EXPECT_EQ(log.StateOf(kB, 1), WriteState::kPending);  // n3 is silent
  log.Configure(kB, {kN2}, 0, 0);                       // the map without n3
  EXPECT_EQ(log.StateOf(kB, 1), WriteState::kCommitted);
  // n3 comes back through a repair and joins holding rseq 1: it counts again from there.
  log.Configure(kB, {kN2, kN3}, 0, /*joined_rseq=*/1);
  log.Ordered(kB, 2);
  log.LocalSynced(kB, 2);
  log.Acked(kB, kN2, 2);
  EXPECT_EQ(log.StateOf(kB, 2), WriteState::kPending);
  log.Acked(kB, kN3, 2);
  EXPECT_EQ(log.StateOf(kB, 2), WriteState::kCommitted);
}

TEST(ReplicationLogTest, AbandonedWritesNeverCommitAndForgettingKeepsTheOutcomes) {
  ReplicationLog log;
  log.Configure(kB, {kN2}, 0, 0);
  for (uint64_t rseq = 1; rseq <= 3; ++rseq) log.Ordered(kB, rseq);
  log.LocalSynced(kB, 3);
  log.Acked(kB, kN2, 1);
  log.Abandon(kB);  // a backup answered with a newer term
  log.Acked(kB, kN2, 3);
  EXPECT_EQ(log.StateOf(kB, 1), WriteState::kCommitted);
  EXPECT_EQ(log.StateOf(kB, 2), WriteState::kAbandoned);
  EXPECT_EQ(log.StateOf(kB, 3), WriteState::kAbandoned);
  log.Forget(kB);
  EXPECT_FALSE(log.Tracks(kB));
  EXPECT_EQ(log.StateOf(kB, 1), WriteState::kCommitted);
  EXPECT_EQ(log.StateOf(kB, 2), WriteState::kAbandoned);
  EXPECT_EQ(log.StateOf(BucketId(99), 1), WriteState::kAbandoned);
  // Tracked again (a new term here): a fresh start at the store's position.
  log.Configure(kB, {}, 7, 7);
  log.Ordered(kB, 8);
  log.LocalSynced(kB, 8);
  EXPECT_EQ(log.StateOf(kB, 8), WriteState::kCommitted) << "no backup: the local sync commits";
}

storage::ReplicatedEntry Entry(BucketId bucket, uint64_t rseq, size_t body_bytes) {
  storage::ReplicatedEntry e{.bucket = bucket, .position = {Term(1), rseq}, .documents = {}};
  e.documents.push_back({.collection = CollectionId(1),
                         .primary_key = "k",
                         .body = std::string(body_bytes, 'x'),
                         .version = rseq,
                         .tombstone = false});
  return e;
}

TEST(ReplicaStreamQueueTest, OneMessageInFlightCarriesWhatQueuedMeanwhile) {
  ReplicaStreamQueue queue({.max_writes = 3, .max_bytes = 1000});
  EXPECT_FALSE(queue.Take(0).has_value());
  queue.Push(Entry(kB, 1, 10));
  auto first = queue.Take(0);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->size(), 1u);
  for (uint64_t rseq = 2; rseq <= 6; ++rseq) queue.Push(Entry(kB, rseq, 10));
  EXPECT_FALSE(queue.Take(0).has_value()) << "window 1";
  queue.Delivered();
  auto second = queue.Take(0);
  ASSERT_TRUE(second.has_value());
  ASSERT_EQ(second->size(), 3u) << "max_writes";
  EXPECT_EQ((*second)[0].position.rseq, 2u);
  queue.Failed();  // resent from its first entry, in order
  auto again = queue.Take(0);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ((*again)[0].position.rseq, 2u);
  EXPECT_EQ(again->size(), 3u);
  queue.Delivered();
  EXPECT_EQ(queue.queued(), 2u);
}

TEST(ReplicaStreamQueueTest, ByteLimitAndDroppedBuckets) {
  ReplicaStreamQueue queue({.max_writes = 100, .max_bytes = 100});
  queue.Push(Entry(kB, 1, 500));  // larger than the limit: goes alone
  queue.Push(Entry(kB, 2, 60));
  queue.Push(Entry(BucketId(4), 1, 30));
  queue.Push(Entry(kB, 3, 60));
  auto big = queue.Take(0);
  ASSERT_EQ(big->size(), 1u);
  queue.Delivered();
  auto next = queue.Take(0);
  ASSERT_EQ(next->size(), 2u);  // 60 + 30; the next 60 would pass 100
  queue.DropBucket(kB);         // kB's backup left: its entries go, in flight too
  queue.Failed();
  auto rest = queue.Take(0);
  ASSERT_EQ(rest->size(), 1u);
  EXPECT_EQ((*rest)[0].bucket, BucketId(4));
}

TEST(ReplicaStreamQueueTest, KeepalivesAndClocks) {
  ReplicaStreamQueue queue;
  EXPECT_FALSE(queue.Take(5).has_value());
  EXPECT_EQ(queue.last_answer(7), 7) << "silence counts from the caller's start";
  auto keepalive = queue.Take(10, /*keepalive=*/true);
  ASSERT_TRUE(keepalive.has_value());
  EXPECT_TRUE(keepalive->empty());
  EXPECT_EQ(queue.last_sent(), 10);
  EXPECT_FALSE(queue.Take(11, /*keepalive=*/true).has_value()) << "window 1";
  queue.Answered(12);
  queue.Delivered();
  EXPECT_EQ(queue.last_answer(0), 12);
  queue.Answered(9);  // an older answer never moves the clock back
  EXPECT_EQ(queue.last_answer(0), 12);
}

}  // namespace
}  // namespace shoal::node
