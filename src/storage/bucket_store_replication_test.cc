// Replication positions in BucketStore (bucket_store_replica.cc): a primary's stamped writes
// number each bucket's writes with no gap, in the WriteBatch of their documents; a backup applies
// a primary's entries in order, skips resends and refuses gaps, stale terms and divergent
// histories; positions survive a restart and a machine crash together with the data they count.

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/storage/bucket_store.h"
#include "src/storage/errors.h"
#include "src/storage/sync_tracking_fs.h"
#include "src/storage/test_support.h"

namespace shoal::storage {
namespace {

constexpr CollectionId kC = kTestCollection;
constexpr BucketId kB = kTestBucket;

Mutation Put(const std::string& key, int n) {
  static std::vector<std::unique_ptr<std::string>> keep;  // views must outlive the call
  keep.push_back(std::make_unique<std::string>(key));
  keep.push_back(std::make_unique<std::string>(DocBody(n)));
  return Mutation{.kind = MutationKind::kUpsert,
                  .collection = kC,
                  .primary_key = *keep[keep.size() - 2],
                  .body = *keep.back()};
}

Mutation Remove(const std::string& key) {
  static std::vector<std::unique_ptr<std::string>> keep;
  keep.push_back(std::make_unique<std::string>(key));
  return Mutation{.kind = MutationKind::kDelete, .collection = kC, .primary_key = *keep.back()};
}

class ReplicationStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    primary_ = OpenTestStore(TestOptions(dir_.Sub("primary")));
    backup_ = OpenTestStore(TestOptions(dir_.Sub("backup")));
    ASSERT_NE(primary_, nullptr);
    ASSERT_NE(backup_, nullptr);
  }

  // Stamped writes at the primary; returns their entries.
  std::vector<ReplicatedEntry> Write(std::vector<Mutation> ms) {
    auto stamped = primary_->ApplyEachStamped(kB, ms);
    EXPECT_TRUE(stamped.ok()) << stamped.status();
    if (!stamped.ok()) return {};
    for (const auto& result : stamped->results) EXPECT_TRUE(result.ok()) << result.status();
    return stamped->entries;
  }

  uint64_t Digest(BucketStore& store) {
    auto digest = store.DigestRange(PointRange::All());
    EXPECT_TRUE(digest.ok()) << digest.status();
    return digest.value_or(0);
  }

  TempDir dir_;
  std::unique_ptr<BucketStore> primary_;
  std::unique_ptr<BucketStore> backup_;
};

TEST_F(ReplicationStoreTest, StampedWritesNumberABucketsWritesWithNoGap) {
  // No term yet: nothing is ordered, nothing written.
  auto refused = primary_->ApplyEachStamped(kB, std::vector<Mutation>{Put("a", 1)});
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(primary_->Get(kC, "a").status().code(), StatusCode::kNotFound);

  SHOAL_ASSERT_OK(primary_->BeginTerm(kB, Term(3)));
  EXPECT_EQ(primary_->BeginTerm(kB, Term(3)).code(), StatusCode::kFailedPrecondition);
  std::vector<ReplicatedEntry> first = Write({Put("a", 1), Put("b", 2)});
  ASSERT_EQ(first.size(), 1u);  // one bucket, one rseq for the whole call
  EXPECT_EQ(first[0].bucket, kB);
  EXPECT_EQ(first[0].position, (ReplicaPosition{Term(3), 1}));
  ASSERT_EQ(first[0].documents.size(), 2u);
  EXPECT_EQ(first[0].documents[0].primary_key, "a");
  EXPECT_EQ(first[0].documents[0].version, primary_->Get(kC, "a")->version);
  std::vector<ReplicatedEntry> second = Write({Remove("a")});
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].position, (ReplicaPosition{Term(3), 2}));
  EXPECT_TRUE(second[0].documents[0].tombstone);

  // A slot that changes nothing (a delete of a missing key) orders no write.
  auto skipped = primary_->ApplyEachStamped(kB, std::vector<Mutation>{Remove("zzz")});
  ASSERT_TRUE(skipped.ok());
  EXPECT_TRUE(skipped->entries.empty());

  SHOAL_ASSERT_OK(primary_->BeginTerm(kB, Term(7)));
  const ReplicaState state = primary_->GetReplicaState(kB);
  EXPECT_EQ(state.position, (ReplicaPosition{Term(3), 2}));
  EXPECT_EQ(state.history, (std::vector<TermStart>{{Term(3), 1}, {Term(7), 3}}));
  EXPECT_EQ(Write({Put("c", 3)})[0].position, (ReplicaPosition{Term(7), 3}));
}

TEST_F(ReplicationStoreTest, ABackupAppliesEntriesInOrderAndEndsEqual) {
  SHOAL_ASSERT_OK(primary_->BeginTerm(kB, Term(1)));
  std::vector<ReplicatedEntry> log;
  for (int i = 0; i < 20; ++i) {
    for (ReplicatedEntry& e : Write({Put("k" + std::to_string(i % 7), i)})) log.push_back(e);
    if (i % 5 == 4) {
      for (ReplicatedEntry& e : Write({Remove("k" + std::to_string(i % 7))})) log.push_back(e);
    }
  }
  ASSERT_EQ(log.size(), 24u);
  // Out of order: the gap is refused and nothing of it is applied.
  auto gap = backup_->ApplyReplicated(std::vector<ReplicatedEntry>{log[1]});
  ASSERT_TRUE(gap.ok());
  EXPECT_EQ((*gap)[0].status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(backup_->GetReplicaState(kB).position, ReplicaPosition());

  auto applied = backup_->ApplyReplicated(std::span(log).subspan(0, 10));
  ASSERT_TRUE(applied.ok()) << applied.status();
  for (size_t i = 0; i < 10; ++i)
    EXPECT_EQ((*applied)[i].value_or(ReplicaPosition()), log[i].position);
  // A resend of what it holds is skipped; the rest follows.
  applied = backup_->ApplyReplicated(std::span(log).subspan(5));
  ASSERT_TRUE(applied.ok()) << applied.status();
  for (const auto& result : *applied) EXPECT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(backup_->GetReplicaState(kB), primary_->GetReplicaState(kB));
  EXPECT_EQ(Digest(*backup_), Digest(*primary_));
  EXPECT_EQ(backup_->LastVersion(), primary_->LastVersion()) << "versions observed";

  // A reopened backup has the same position and data.
  SHOAL_ASSERT_OK(backup_->Close());
  backup_ = OpenTestStore(TestOptions(dir_.Sub("backup")));
  ASSERT_NE(backup_, nullptr);
  EXPECT_EQ(backup_->GetReplicaState(kB), primary_->GetReplicaState(kB));
  EXPECT_EQ(Digest(*backup_), Digest(*primary_));
}

TEST_F(ReplicationStoreTest, StaleTermsAndDivergentHistoriesAreRefused) {
  SHOAL_ASSERT_OK(primary_->BeginTerm(kB, Term(2)));
  std::vector<ReplicatedEntry> log = Write({Put("a", 1)});
  auto more = Write({Put("b", 2)});
  log.insert(log.end(), more.begin(), more.end());
  SHOAL_ASSERT_OK(backup_->ApplyReplicated(log).status());

  // A new primary under term 5 goes on at rseq 3: the backup starts term 5 there.
  ReplicatedEntry next = log[1];
  next.position = {Term(5), 3};
  next.documents[0].version = primary_->LastVersion() + 10;
  auto result = backup_->ApplyReplicated(std::vector<ReplicatedEntry>{next});
  ASSERT_TRUE(result.ok());
  EXPECT_EQ((*result)[0].value_or(ReplicaPosition()), next.position);
  EXPECT_EQ(backup_->GetReplicaState(kB).history,
            (std::vector<TermStart>{{Term(2), 1}, {Term(5), 3}}));

  // The old primary's next write, term 2 rseq 4: stale.
  ReplicatedEntry stale = log[1];
  stale.position = {Term(2), 4};
  result = backup_->ApplyReplicated(std::vector<ReplicatedEntry>{stale});
  EXPECT_EQ((*result)[0].status().code(), StatusCode::kFailedPrecondition);
  // The old primary's write 3 under term 2, which this copy has under term 5: divergence.
  ReplicatedEntry divergent = log[1];
  divergent.position = {Term(2), 3};
  result = backup_->ApplyReplicated(std::vector<ReplicatedEntry>{divergent});
  EXPECT_EQ((*result)[0].status().code(), StatusCode::kAborted);
  EXPECT_EQ(backup_->GetReplicaState(kB).position, next.position) << "nothing changed";
}

TEST_F(ReplicationStoreTest, SplitKeepsThePositionOnBothHalvesAndRemoveForgetsIt) {
  SHOAL_ASSERT_OK(primary_->BeginTerm(kB, Term(4)));
  Write({Put("a", 1)});
  const ReplicaState before = primary_->GetReplicaState(kB);
  SHOAL_ASSERT_OK(primary_->SplitBucket(kB, uint64_t{1} << 63, BucketId(9)).status());
  EXPECT_EQ(primary_->GetReplicaState(kB), before);
  EXPECT_EQ(primary_->GetReplicaState(BucketId(9)), before);
  SHOAL_ASSERT_OK(primary_->Close());
  primary_ = OpenTestStore(TestOptions(dir_.Sub("primary")));
  ASSERT_NE(primary_, nullptr);
  EXPECT_EQ(primary_->GetReplicaState(BucketId(9)), before);
  SHOAL_ASSERT_OK(primary_->SetBucketState(BucketId(9), BucketState::kLeaving));
  SHOAL_ASSERT_OK(primary_->RemoveBucket(BucketId(9)));
  EXPECT_EQ(primary_->GetReplicaState(BucketId(9)), ReplicaState());
  SHOAL_ASSERT_OK(primary_->Close());
  primary_ = OpenTestStore(TestOptions(dir_.Sub("primary")));
  ASSERT_NE(primary_, nullptr);
  EXPECT_EQ(primary_->GetReplicaState(BucketId(9)), ReplicaState());
  EXPECT_EQ(primary_->GetReplicaState(kB), before);
}

TEST_F(ReplicationStoreTest, SetReplicaStateIsDurableAndChecked) {
  ReplicaState state{.position = {Term(3), 10}, .history = {{Term(1), 1}, {Term(3), 8}}};
  SHOAL_ASSERT_OK(backup_->SetReplicaState(kB, state));
  EXPECT_EQ(backup_->GetReplicaState(kB), state);
  ReplicaState bad{.position = {Term(3), 10}, .history = {{Term(3), 1}, {Term(1), 8}}};
  EXPECT_FALSE(backup_->SetReplicaState(kB, bad).ok());
  EXPECT_EQ(backup_->GetReplicaState(kB), state);
}

// Log retention (rseq_index.h, replication.md §6): a copy that stopped at rseq x catches up from
// the sequence the primary's index names for x, reading the primary's WAL: it ends equal without
// a snapshot. A backup indexes what it applies, so that it can do the same once promoted. The
// index is lost with a restart, and starts afresh where SetReplicaState puts the copy.
TEST_F(ReplicationStoreTest, TheIndexNamesWhereTheLogHoldsTheWritesAfterAPosition) {
  SHOAL_ASSERT_OK(primary_->BeginTerm(kB, Term(1)));
  std::vector<ReplicatedEntry> log;
  for (int i = 0; i < 30; ++i) {
    for (ReplicatedEntry& e : Write({Put("k" + std::to_string(i % 9), i)})) log.push_back(e);
    if (i % 4 == 3) {
      for (ReplicatedEntry& e : Write({Remove("k" + std::to_string(i % 9))})) log.push_back(e);
    }
  }
  // The backup holds the first 11 writes, then misses the rest.
  SHOAL_ASSERT_OK(backup_->ApplyReplicated(std::span(log).subspan(0, 11)).status());
  const ReplicaState copy = backup_->GetReplicaState(kB);
  ASSERT_EQ(copy.position.rseq, 11u);
  ASSERT_TRUE(IsPrefixOf(copy, primary_->GetReplicaState(kB)));
  EXPECT_FALSE(primary_->RetainedLogStart(kB, 0).has_value()) << "a copy that holds no write";
  const std::optional<uint64_t> start = primary_->RetainedLogStart(kB, copy.position.rseq);
  ASSERT_TRUE(start.has_value());
  uint64_t after = *start;
  for (;;) {
    auto batch = primary_->ReadChangesSince(PointRange::All(), after, 5);
    ASSERT_TRUE(batch.ok()) << batch.status();
    if (batch->changes.empty()) break;
    SHOAL_ASSERT_OK(backup_->ApplyChanges(batch->changes).status());
    after = batch->next_sequence;
  }
  EXPECT_EQ(Digest(*backup_), Digest(*primary_));
  // The backup indexed what it applied (from its first entry on).
  EXPECT_FALSE(backup_->RetainedLogStart(kB, 0).has_value());
  EXPECT_TRUE(backup_->RetainedLogStart(kB, 5).has_value());
  // Taking the primary's state starts its index there.
  SHOAL_ASSERT_OK(backup_->SetReplicaState(kB, primary_->GetReplicaState(kB)));
  EXPECT_FALSE(backup_->RetainedLogStart(kB, 5).has_value());
  EXPECT_FALSE(backup_->RetainedLogStart(kB, log.back().position.rseq).has_value());
  // Forgotten: vouches for nothing.
  primary_->ForgetRetainedLog(kB);
  EXPECT_FALSE(primary_->RetainedLogStart(kB, copy.position.rseq).has_value());
  Write({Put("z", 99)});
  EXPECT_FALSE(primary_->RetainedLogStart(kB, copy.position.rseq).has_value());
  // Restarted: the index is empty.
  SHOAL_ASSERT_OK(backup_->Close());
  backup_ = OpenTestStore(TestOptions(dir_.Sub("backup")));
  ASSERT_NE(backup_, nullptr);
  EXPECT_FALSE(backup_->RetainedLogStart(kB, 5).has_value());
}

// Concurrent writers to one bucket: every rseq from 1 to the number of writes is taken once, and
// a backup that applies the entries in rseq order ends equal to the primary.
TEST_F(ReplicationStoreTest, ConcurrentWritersGetEveryRseqOnce) {
  SHOAL_ASSERT_OK(primary_->BeginTerm(kB, Term(1)));
  constexpr int kThreads = 4;
  constexpr int kPerThread = 100;
  std::mutex mu;
  std::vector<ReplicatedEntry> log;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        // Shared keys, so that the writers also race on the same documents.
        const std::string key = "k" + std::to_string((t * 7 + i) % 13);
        const std::string body = DocBody(t * 1000 + i);
        const Mutation m{
            .kind = MutationKind::kUpsert, .collection = kC, .primary_key = key, .body = body};
        auto stamped = primary_->ApplyEachStamped(kB, std::span(&m, 1), WalSync::kDeferred);
        ASSERT_TRUE(stamped.ok());
        std::lock_guard<std::mutex> lock(mu);
        for (ReplicatedEntry& e : stamped->entries) log.push_back(std::move(e));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_EQ(log.size(), static_cast<size_t>(kThreads * kPerThread));
  std::sort(log.begin(), log.end(), [](const ReplicatedEntry& a, const ReplicatedEntry& b) {
    return a.position < b.position;
  });
  for (size_t i = 0; i < log.size(); ++i) ASSERT_EQ(log[i].position.rseq, i + 1);
  auto applied = backup_->ApplyReplicated(log);
  ASSERT_TRUE(applied.ok()) << applied.status();
  for (const auto& result : *applied) ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(Digest(*backup_), Digest(*primary_));
}

// A machine crash keeps positions and documents together: the recovered position counts exactly
// the stamped writes whose documents survived.
TEST(ReplicationCrashTest, ThePositionSurvivesExactlyWithItsWrites) {
  TempDir dir;
  auto fs = std::make_shared<SyncTrackingFileSystem>();
  std::unique_ptr<rocksdb::Env> env = SyncTrackingFileSystem::NewEnv(fs);
  StoreOptions options = TestOptions(dir.Sub("db"));
  options.sync = SyncPolicy::kEveryWrite;
  options.env = env.get();
  std::unique_ptr<BucketStore> store = OpenTestStore(options);
  ASSERT_NE(store, nullptr);
  SHOAL_ASSERT_OK(store->BeginTerm(kB, Term(1)));
  constexpr int kSynced = 12;
  constexpr int kWrites = 30;
  for (int i = 0; i < kWrites; ++i) {
    auto stamped = store->ApplyEachStamped(
        kB, std::vector<Mutation>{Put("k" + std::to_string(i), i)}, WalSync::kDeferred);
    ASSERT_TRUE(stamped.ok());
    ASSERT_EQ(stamped->entries.size(), 1u);
    if (i + 1 == kSynced) SHOAL_ASSERT_OK(store->SyncWal());
  }
  SHOAL_ASSERT_OK(fs->CopyDurable(dir.Sub("db"), dir.Sub("crash")));
  SHOAL_ASSERT_OK(store->Close());
  StoreOptions crash_options = TestOptions(dir.Sub("crash"));
  crash_options.create_if_missing = false;
  std::unique_ptr<BucketStore> crashed = OpenTestStore(crash_options);
  ASSERT_NE(crashed, nullptr);
  const ReplicaPosition position = crashed->GetReplicaState(kB).position;
  EXPECT_GE(position.rseq, static_cast<uint64_t>(kSynced));
  for (int i = 0; i < kWrites; ++i) {
    const bool present = crashed->Get(kC, "k" + std::to_string(i)).ok();
    EXPECT_EQ(present, static_cast<uint64_t>(i) < position.rseq) << i;
  }
}

// Seals (replication.md §4.8) survive a machine crash the moment RecordSeals returns: the store
// runs with periodic syncs, so only RecordSeals' own sync can have made them durable. A lower
// term never lowers a seal; ForgetSeals drops one for good.
TEST(ReplicationCrashTest, SealsAreDurableWhenRecorded) {
  TempDir dir;
  auto fs = std::make_shared<SyncTrackingFileSystem>();
  std::unique_ptr<rocksdb::Env> env = SyncTrackingFileSystem::NewEnv(fs);
  StoreOptions options = TestOptions(dir.Sub("db"));
  options.sync = SyncPolicy::kPeriodic;
  options.env = env.get();
  std::unique_ptr<BucketStore> store = OpenTestStore(options);
  ASSERT_NE(store, nullptr);
  const std::vector<std::pair<BucketId, Term>> first = {{kB, Term(5)}, {BucketId(7), Term(2)}};
  SHOAL_ASSERT_OK(store->RecordSeals(first));
  const std::vector<std::pair<BucketId, Term>> lower = {{kB, Term(4)}};
  SHOAL_ASSERT_OK(store->RecordSeals(lower));
  const std::map<BucketId, Term> expected = {{kB, Term(5)}, {BucketId(7), Term(2)}};
  EXPECT_EQ(store->Seals(), expected);
  SHOAL_ASSERT_OK(fs->CopyDurable(dir.Sub("db"), dir.Sub("crash")));
  const std::vector<BucketId> moot = {BucketId(7)};
  SHOAL_ASSERT_OK(store->ForgetSeals(moot));
  SHOAL_ASSERT_OK(store->Close());

  StoreOptions crash_options = TestOptions(dir.Sub("crash"));
  crash_options.create_if_missing = false;
  std::unique_ptr<BucketStore> crashed = OpenTestStore(crash_options);
  ASSERT_NE(crashed, nullptr);
  EXPECT_EQ(crashed->Seals(), expected);
  SHOAL_ASSERT_OK(crashed->Close());
  StoreOptions reopen_options = TestOptions(dir.Sub("db"));
  reopen_options.create_if_missing = false;
  reopen_options.env = env.get();
  std::unique_ptr<BucketStore> reopened = OpenTestStore(reopen_options);
  ASSERT_NE(reopened, nullptr);
  const std::map<BucketId, Term> kept = {{kB, Term(5)}};
  EXPECT_EQ(reopened->Seals(), kept);
}

}  // namespace
}  // namespace shoal::storage
