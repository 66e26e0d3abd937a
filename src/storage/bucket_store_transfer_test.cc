#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/table_properties.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>
#include <vector>

#include "src/storage/bucket_store.h"
#include "src/storage/errors.h"
#include "src/storage/store_options.h"
#include "src/storage/test_support.h"

namespace shoal::storage {
namespace {

constexpr CollectionId kC = kTestCollection;
constexpr uint64_t kHalf = 1ull << 63;
const PointRange kLow = *PointRange::Make(0, kHalf);
const PointRange kHigh = PointRange::From(kHalf);

std::string LowKey(const std::string& prefix) {
  for (int i = 0;; ++i) {
    std::string key = prefix + std::to_string(i);
    if (kLow.Contains(PointOf(kC, key))) return key;
  }
}

// Source holds both halves ReadWrite; destination holds nothing until a test adds a bucket.
class TransferTest : public ::testing::Test {
 protected:
  void SetUp() override {
    source_ = Open(dir_.Sub("source"));
    dest_ = Open(dir_.Sub("dest"));
    SHOAL_ASSERT_OK(source_->AddBucket({.id = BucketId(1), .range = kLow}));
    SHOAL_ASSERT_OK(source_->AddBucket({.id = BucketId(2), .range = kHigh}));
  }
  static std::unique_ptr<BucketStore> Open(const std::string& path) {
    auto store = BucketStore::Open(TestOptions(path));
    EXPECT_TRUE(store.ok()) << store.status();
    EXPECT_TRUE((*store)->CreateCollection({.id = kC, .name = "docs"}).ok());
    return std::move(store).value();
  }
  // Replaces the source with a fresh store in `sub` whose 64 MiB memtable keeps a test's log in
  // one WAL file; both halves ReadWrite as in SetUp.
  void ReopenSourceWithOneWalFile(const std::string& sub) {
    StoreOptions options = TestOptions(dir_.Sub(sub));
    options.write_buffer_bytes = 64u << 20;
    auto opened = BucketStore::Open(options);
    ASSERT_TRUE(opened.ok()) << opened.status();
    source_ = std::move(opened).value();
    SHOAL_ASSERT_OK(source_->CreateCollection({.id = kC, .name = "docs"}));
    SHOAL_ASSERT_OK(source_->AddBucket({.id = BucketId(1), .range = kLow}));
    SHOAL_ASSERT_OK(source_->AddBucket({.id = BucketId(2), .range = kHigh}));
  }
  void Fill(int n) {
    for (int i = 0; i < n; ++i) {
      SHOAL_ASSERT_OK(source_->Upsert(kC, "k" + std::to_string(i), DocBody(i)).status());
    }
  }
  // The logical content of `range` (tombstones included) as pk -> (version, body, tombstone).
  static std::map<std::string, Document> Content(BucketStore& store, const PointRange& range) {
    std::map<std::string, Document> out;
    EXPECT_TRUE(store
                    .ForEach({.range = range, .include_tombstones = true},
                             [&](const Document& d) {
                               out[d.primary_key] = d;
                               return true;
                             })
                    .ok());
    return out;
  }

  TempDir dir_;
  std::unique_ptr<BucketStore> source_;
  std::unique_ptr<BucketStore> dest_;
};

TEST_F(TransferTest, StatsExactAndEstimated) {
  Fill(400);
  for (int i = 0; i < 40; ++i)
    SHOAL_ASSERT_OK(source_->Delete(kC, "k" + std::to_string(i)).status());
  SHOAL_ASSERT_OK_AND_ASSIGN(BucketStats low, source_->ComputeStats(kLow));
  SHOAL_ASSERT_OK_AND_ASSIGN(BucketStats high, source_->ComputeStats(kHigh));
  EXPECT_TRUE(low.exact);
  EXPECT_EQ(low.documents + high.documents, 360u);
  EXPECT_EQ(low.tombstones + high.tombstones, 40u);
  EXPECT_GT(low.live_bytes, 0u);
  EXPECT_GE(source_->LastVersion(), std::max(low.max_version, high.max_version));
  SHOAL_ASSERT_OK(source_->Flush());
  SHOAL_ASSERT_OK_AND_ASSIGN(BucketStats estimate, source_->EstimateStats(PointRange::All()));
  EXPECT_FALSE(estimate.exact);
  EXPECT_GT(estimate.documents, 0u);
  EXPECT_GT(estimate.live_bytes, 0u);
}

TEST_F(TransferTest, MoveByExportIngestAndCatchUp) {
  Fill(500);
  SHOAL_ASSERT_OK(source_->Flush());
  SHOAL_ASSERT_OK(source_->SetBucketState(BucketId(1), BucketState::kLeaving));
  std::unique_ptr<Snapshot> snap = source_->GetSnapshot();
  // Pattern 7: deletes, overwrites and a compaction race the snapshot.
  SHOAL_ASSERT_OK(source_->Delete(kC, "k1").status());
  SHOAL_ASSERT_OK(source_->Upsert(kC, "k2", DocBody(-2)).status());
  SHOAL_ASSERT_OK(source_->CompactRange(PointRange::All()));
  SHOAL_ASSERT_OK_AND_ASSIGN(ExportedRange exported,
                             source_->ExportRange(kLow, {.directory = dir_.Sub("ship"),
                                                         .target_file_bytes = 4096,
                                                         .snapshot = snap.get()}));
  EXPECT_GT(exported.files.size(), 1u);
  EXPECT_EQ(exported.sequence, snap->sequence());
  snap.reset();
  SHOAL_ASSERT_OK(source_->Upsert(kC, "k3", DocBody(-3)).status());
  SHOAL_ASSERT_OK(source_->Insert(kC, "fresh", DocBody(-4)).status());

  SHOAL_ASSERT_OK(
      dest_->AddBucket({.id = BucketId(1), .range = kLow, .state = BucketState::kAdding}));
  SHOAL_ASSERT_OK(dest_->IngestRange(exported, {}));
  uint64_t cursor = exported.sequence;
  for (int round = 0; round < 3; ++round) {
    SHOAL_ASSERT_OK_AND_ASSIGN(ChangeBatch changes, source_->ReadChangesSince(kLow, cursor, 2));
    SHOAL_ASSERT_OK(dest_->ApplyChanges(changes.changes).status());
    EXPECT_GE(changes.next_sequence, cursor);
    cursor = changes.next_sequence;
  }
  EXPECT_EQ(Content(*dest_, kLow), Content(*source_, kLow));
  EXPECT_TRUE(Content(*dest_, kHigh).empty());
  // The destination's clock is above everything it received.
  SHOAL_ASSERT_OK(dest_->SetBucketState(BucketId(1), BucketState::kReadWrite));
  EXPECT_GT(dest_->LastVersion(), 0u);
  for (const auto& [pk, doc] : Content(*dest_, kLow)) EXPECT_LE(doc.version, dest_->LastVersion());
  // Source cleanup.
  SHOAL_ASSERT_OK(source_->RemoveBucket(BucketId(1)));
  EXPECT_TRUE(Content(*source_, kLow).empty());
}

TEST_F(TransferTest, CatchUpReturnsOnlyTheRangeInCommitOrder) {
  Fill(20);
  const uint64_t start = source_->LatestSequence();
  std::vector<std::string> expected;
  for (int i = 0; i < 60; ++i) {
    const std::string key = "c" + std::to_string(i % 15);
    SHOAL_ASSERT_OK(source_->Upsert(kC, key, DocBody(i)).status());
    if (kLow.Contains(PointOf(kC, key))) expected.push_back(key + "=" + DocBody(i));
  }
  std::vector<std::string> got;
  uint64_t cursor = start;
  while (true) {
    SHOAL_ASSERT_OK_AND_ASSIGN(ChangeBatch batch, source_->ReadChangesSince(kLow, cursor, 4));
    for (const Document& d : batch.changes) got.push_back(d.primary_key + "=" + d.body);
    if (batch.next_sequence == cursor) break;
    cursor = batch.next_sequence;
  }
  EXPECT_EQ(got, expected);
  SHOAL_ASSERT_OK_AND_ASSIGN(ChangeBatch none, source_->ReadChangesSince(kLow, cursor, 4));
  EXPECT_TRUE(none.changes.empty());
  EXPECT_EQ(none.next_sequence, cursor);
}

TEST_F(TransferTest, CatchUpTailsTheLogWhileWritesGoOn) {
  // Successive reads go on from where the previous one stopped (a parked WAL reader) while
  // writes go on between them, across new WAL files (a flush switches the file), and a read
  // from an older position still starts there. Each round is checked against a read from the
  // same position with no parked reader to continue.
  Fill(10);
  const uint64_t start = source_->LatestSequence();
  std::vector<std::string> expected;
  std::vector<std::string> got;
  uint64_t cursor = start;
  for (int round = 0; round < 12; ++round) {
    for (int i = 0; i < 7; ++i) {
      const std::string key = "t" + std::to_string((round * 7 + i) % 23);
      const std::string body = DocBody(round * 100 + i);
      SHOAL_ASSERT_OK(source_->Upsert(kC, key, body).status());
      if (kLow.Contains(PointOf(kC, key))) expected.push_back(key + "=" + body);
    }
    if (round % 4 == 3) SHOAL_ASSERT_OK(source_->Flush());
    for (int page = 0; page < 3; ++page) {
      SHOAL_ASSERT_OK_AND_ASSIGN(ChangeBatch batch, source_->ReadChangesSince(kLow, cursor, 2));
      for (const Document& d : batch.changes) got.push_back(d.primary_key + "=" + d.body);
      cursor = batch.next_sequence;
    }
  }
  while (true) {
    SHOAL_ASSERT_OK_AND_ASSIGN(ChangeBatch batch, source_->ReadChangesSince(kLow, cursor, 5));
    for (const Document& d : batch.changes) got.push_back(d.primary_key + "=" + d.body);
    if (batch.next_sequence == cursor) break;
    cursor = batch.next_sequence;
  }
  EXPECT_EQ(got, expected);
  // From the start again (no parked reader is there): the same changes.
  std::vector<std::string> again;
  cursor = start;
  while (true) {
    SHOAL_ASSERT_OK_AND_ASSIGN(ChangeBatch batch, source_->ReadChangesSince(kLow, cursor, 1000));
    for (const Document& d : batch.changes) again.push_back(d.primary_key + "=" + d.body);
    if (batch.next_sequence == cursor) break;
    cursor = batch.next_sequence;
  }
  EXPECT_EQ(again, expected);
}

TEST_F(TransferTest, ANewCatchUpGoesOnFromAReaderParkedBehindItsStart) {
  // A finished catch-up leaves its reader parked near the head of the log; the next catch-up,
  // which starts later, reads forward from it instead of seeking the WAL file afresh. A reader
  // parked more than kMaxWalSkipBytes of log behind is not used. Across a WAL switch the
  // result is the same.
  const auto drain = [&](uint64_t from) {
    std::vector<std::string> out;
    uint64_t cursor = from;
    while (true) {
      auto batch = source_->ReadChangesSince(kLow, cursor, 1000);
      EXPECT_TRUE(batch.ok()) << batch.status();
      if (!batch.ok()) return out;
      for (const Document& d : batch->changes) out.push_back(d.primary_key + "=" + d.body);
      if (batch->next_sequence == cursor) return out;
      cursor = batch->next_sequence;
    }
  };
  // Writes `count` keys from `from_id` on; appends the low ones to `low`.
  const auto write = [&](int from_id, int count, size_t pad, std::vector<std::string>* low) {
    for (int i = from_id; i < from_id + count; ++i) {
      const std::string key = "w" + std::to_string(i);
      const std::string body = fmt::format(R"({{"i":{},"pad":"{}"}})", i, std::string(pad, 'x'));
      ASSERT_TRUE(source_->Upsert(kC, key, body).ok());
      if (kLow.Contains(PointOf(kC, key))) low->push_back(key + "=" + body);
    }
  };
  const auto concat = [](std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  Fill(10);
  std::vector<std::string> first, middle, second;
  const uint64_t start = source_->LatestSequence();
  write(0, 200, 10, &first);
  EXPECT_EQ(drain(start), first);  // one seek; its reader is parked at the head
  const uint64_t seeks = source_->wal_seeks();

  // A second catch-up from a later position: forward from the parked reader, no seek.
  write(200, 50, 10, &middle);
  const uint64_t second_start = source_->LatestSequence();
  write(250, 100, 10, &second);
  EXPECT_EQ(drain(second_start), second);
  EXPECT_EQ(source_->wal_seeks(), seeks);
  // From the first start again: nothing is parked behind it, so it seeks; the same changes.
  EXPECT_EQ(drain(start), concat(concat(first, middle), second));
  EXPECT_GT(source_->wal_seeks(), seeks);

  // A WAL switch between the parked reader and the new start: still every change.
  std::vector<std::string> ignored, after_switch;
  SHOAL_ASSERT_OK(source_->Flush());
  write(400, 30, 10, &ignored);
  const uint64_t switch_start = source_->LatestSequence();
  write(430, 30, 10, &after_switch);
  EXPECT_EQ(drain(switch_start), after_switch);

  // More than kMaxWalSkipBytes (16 MiB) of log after the reader parked, all in one WAL file (a
  // 64 MiB memtable): a fresh seek.
  ASSERT_NO_FATAL_FAILURE(ReopenSourceWithOneWalFile("big"));
  write(0, 10, 10, &ignored);
  (void)drain(0);  // park a reader at the head
  const uint64_t parked_seeks = source_->wal_seeks();
  write(1000, 17 * 1024, 1024, &ignored);  // about 17.5 MiB of log
  const uint64_t far_start = source_->LatestSequence();
  std::vector<std::string> far;
  write(100000, 20, 10, &far);
  EXPECT_EQ(drain(far_start), far);
  EXPECT_EQ(source_->wal_seeks(), parked_seeks + 1);
  // Within the limit: no seek.
  std::vector<std::string> near;
  write(200000, 1000, 1024, &ignored);  // about 1 MiB of log
  const uint64_t near_from = source_->LatestSequence();
  write(300000, 20, 10, &near);
  EXPECT_EQ(drain(near_from), near);
  EXPECT_EQ(source_->wal_seeks(), parked_seeks + 1);
}

TEST_F(TransferTest, ATailingReaderIsNeverReplacedWhileWritesGoOn) {
  // A catch-up reads while clients write. Its reader stays on the last batch it consumed when
  // it has caught up, so no read ends it at the head of the log: with no WAL switch, one seek
  // serves the whole catch-up. A reader ended there would be replaced by a fresh seek, which
  // reads the WAL file from its start.
  ASSERT_NO_FATAL_FAILURE(ReopenSourceWithOneWalFile("tail"));
  SHOAL_ASSERT_OK(source_->Upsert(kC, "first", DocBody(0)).status());
  const uint64_t seeks = source_->wal_seeks();
  // Taken before the writers start: every write they make comes after it.
  uint64_t cursor = source_->LatestSequence();
  constexpr int kWriters = 2;
  constexpr int kWritesEach = 4000;
  std::atomic<int> writers_done{0};
  std::atomic<int> failed_writes{0};
  std::vector<std::vector<std::string>> written(kWriters);  // the low keys, in write order
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < kWritesEach; ++i) {
        const std::string key = fmt::format("c{}-{}", w, i);
        if (!source_->Upsert(kC, key, DocBody(i)).ok()) {
          failed_writes.fetch_add(1);
          continue;
        }
        if (kLow.Contains(PointOf(kC, key))) written[w].push_back(key);
      }
      writers_done.fetch_add(1);
    });
  }
  std::vector<std::vector<std::string>> read(kWriters);
  Status read_error = OkStatus();
  while (true) {
    const bool last_round = writers_done.load() == kWriters;
    auto batch = source_->ReadChangesSince(kLow, cursor, 50);
    if (!batch.ok()) {
      read_error = batch.status();
      break;  // the writers are joined below either way
    }
    for (const Document& d : batch->changes) {
      read[d.primary_key[1] - '0'].push_back(d.primary_key);
    }
    if (last_round && batch->next_sequence == cursor) break;
    cursor = batch->next_sequence;
  }
  for (std::thread& t : writers) t.join();
  SHOAL_ASSERT_OK(read_error);
  EXPECT_EQ(failed_writes.load(), 0);
  // Every low write, each writer's in its commit order, and one seek for the whole catch-up.
  for (int w = 0; w < kWriters; ++w) EXPECT_EQ(read[w], written[w]) << "writer " << w;
  EXPECT_EQ(source_->wal_seeks(), seeks + 1);
}

// FAILURE-PATTERNS 7 with the compactions concurrent, not between steps: while a writer
// deletes, overwrites and re-inserts keys of the moving range, one thread on each side flushes
// and compacts that range in a loop, and the catch-up reads the source's changes and applies them
// at the destination. After the writer stops and a read finds nothing more, the destination holds
// the source's logical state key by key: version, tombstone and body.
TEST_F(TransferTest, CompactionsRacingTheCatchUpOnBothSidesLeaveTheSourcesState) {
  std::vector<std::string> keys;    // keys of the moving range, each written many times
  std::vector<std::string> others;  // keys of the other bucket
  for (int i = 0; keys.size() < 64 || others.size() < 64; ++i) {
    const std::string key = "r" + std::to_string(i);
    (kLow.Contains(PointOf(kC, key)) ? keys : others).push_back(key);
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    SHOAL_ASSERT_OK(source_->Upsert(kC, keys[i], DocBody(static_cast<int>(i))).status());
  }
  SHOAL_ASSERT_OK(source_->Flush());
  SHOAL_ASSERT_OK(source_->SetBucketState(BucketId(1), BucketState::kLeaving));
  SHOAL_ASSERT_OK_AND_ASSIGN(ExportedRange exported,
                             source_->ExportRange(kLow, {.directory = dir_.Sub("ship")}));
  SHOAL_ASSERT_OK(
      dest_->AddBucket({.id = BucketId(1), .range = kLow, .state = BucketState::kAdding}));
  SHOAL_ASSERT_OK(dest_->IngestRange(exported, {}));

  std::atomic<bool> writer_done{false};
  std::atomic<bool> catch_up_done{false};
  std::atomic<int> unexpected_errors{0};
  std::atomic<int> source_rounds{0};
  std::atomic<int> dest_rounds{0};
  // The writer works in phases of 300 operations and starts the next one only once both sides
  // have finished a flush and compaction since the phase began, so that every phase's writes,
  // reads and applies overlap compactions on both sides.
  std::thread writer([&] {
    for (int i = 0; i < 3000; ++i) {
      if (i % 300 == 0) {
        const int source_start = source_rounds.load();
        const int dest_start = dest_rounds.load();
        while (source_rounds.load() <= source_start || dest_rounds.load() <= dest_start) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      }
      const std::string& key = keys[(i * 7) % keys.size()];
      Status s;
      switch (i % 4) {
        case 0:
        case 1:
          s = source_->Upsert(kC, key, DocBody(-i)).status();
          break;
        case 2:
          s = source_->Delete(kC, key).status();
          if (ReasonOf(s) == ErrorReason::kNotFound) s = OkStatus();
          break;
        case 3:
          s = source_->Insert(kC, key, DocBody(i)).status();
          if (ReasonOf(s) == ErrorReason::kDuplicate) s = OkStatus();
          break;
      }
      // Writes outside the range move the sequence on without changing the range.
      if (s.ok() && i % 5 == 0) s = source_->Upsert(kC, others[i % others.size()], "{}").status();
      if (!s.ok()) unexpected_errors.fetch_add(1);
    }
    writer_done = true;
  });
  // Each side flushes and compacts the moving range until the catch-up ends; counts its rounds.
  auto compactor = [&](BucketStore& store, std::atomic<int>& rounds) {
    return std::thread([&] {
      while (!catch_up_done.load()) {
        if (!store.Flush().ok() || !store.CompactRange(kLow).ok()) unexpected_errors.fetch_add(1);
        rounds.fetch_add(1);
      }
    });
  };
  std::thread source_compactor = compactor(*source_, source_rounds);
  std::thread dest_compactor = compactor(*dest_, dest_rounds);

  uint64_t cursor = exported.sequence;
  size_t applied = 0;
  Status catch_up = OkStatus();
  while (catch_up.ok()) {
    const bool last_round = writer_done.load();
    StatusOr<ChangeBatch> batch = source_->ReadChangesSince(kLow, cursor, 20);
    if (!batch.ok()) {
      catch_up = batch.status();
      break;
    }
    catch_up = dest_->ApplyChanges(batch->changes).status();
    applied += batch->changes.size();
    if (last_round && batch->changes.empty()) break;
    cursor = batch->next_sequence;
  }
  catch_up_done = true;
  writer.join();
  source_compactor.join();
  dest_compactor.join();
  SHOAL_ASSERT_OK(catch_up);
  EXPECT_EQ(unexpected_errors.load(), 0);
  EXPECT_GT(applied, 1000u);
  EXPECT_GE(source_rounds.load(), 10);
  EXPECT_GE(dest_rounds.load(), 10);
  const std::map<std::string, Document> at_source = Content(*source_, kLow);
  EXPECT_EQ(at_source.size(), keys.size());  // every key: live, or a tombstone
  EXPECT_EQ(Content(*dest_, kLow), at_source);
}

TEST_F(TransferTest, CatchUpReadsAcrossAnIngestElsewhere) {
  // The source also receives another bucket by ingest while it is being caught up.
  auto third = Open(dir_.Sub("third"));
  SHOAL_ASSERT_OK(third->AddBucket({.id = BucketId(9), .range = PointRange::All()}));
  for (int i = 0; i < 50; ++i) {
    SHOAL_ASSERT_OK(third->Upsert(kC, "t" + std::to_string(i), DocBody(i)).status());
  }
  const PointRange small = *PointRange::Make(kHalf, kHalf + (1ull << 60));
  SHOAL_ASSERT_OK_AND_ASSIGN(ExportedRange exported,
                             third->ExportRange(small, {.directory = dir_.Sub("ship3")}));
  ASSERT_FALSE(exported.files.empty());
  SHOAL_ASSERT_OK(source_->SetBucketState(BucketId(2), BucketState::kLeaving));
  SHOAL_ASSERT_OK(source_->RemoveBucket(BucketId(2)));
  SHOAL_ASSERT_OK(
      source_->AddBucket({.id = BucketId(3), .range = small, .state = BucketState::kAdding}));
  const std::string before = LowKey("before"), after = LowKey("after");
  const uint64_t start = source_->LatestSequence();
  SHOAL_ASSERT_OK(source_->Upsert(kC, before, DocBody(1)).status());
  SHOAL_ASSERT_OK(source_->IngestRange(exported, {}));
  SHOAL_ASSERT_OK(source_->Upsert(kC, after, DocBody(2)).status());
  std::vector<std::string> got;
  uint64_t cursor = start;
  while (true) {
    SHOAL_ASSERT_OK_AND_ASSIGN(ChangeBatch batch,
                               source_->ReadChangesSince(PointRange::All(), cursor, 100));
    for (const Document& d : batch.changes) got.push_back(d.primary_key);
    if (batch.next_sequence == cursor) break;
    cursor = batch.next_sequence;
  }
  // Ingested data is not a write: it never appears in catch-up.
  EXPECT_EQ(got, (std::vector<std::string>{before, after}));
}

// A catch-up read whose fresh log reader found no WAL file at all (here: the store keeps no
// archived WAL, and the only live one is empty after a flush) must not park that reader, which has
// no log file open: the next read would resume it with Next(), and the engine asserts (or
// dereferences null) there. Nor may it answer "no changes": the upsert it asks for is gone with its
// WAL file, so every read is refused as not retained (a move then restarts from a fresh export).
TEST_F(TransferTest, AReadFromAWalThatIsGoneIsRefusedAndLeavesNoReaderBehind) {
  StoreOptions options = TestOptions(dir_.Sub("no-archive"));
  options.wal_ttl_seconds = 0;  // obsolete WAL files are deleted, not archived
  options.wal_size_limit_mb = 0;
  auto opened = BucketStore::Open(options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<BucketStore> store = std::move(opened).value();
  SHOAL_ASSERT_OK(store->CreateCollection({.id = kC, .name = "docs"}));
  SHOAL_ASSERT_OK(store->AddBucket({.id = BucketId(1), .range = PointRange::All()}));
  SHOAL_ASSERT_OK(store->Upsert(kC, "k", DocBody(1)).status());
  SHOAL_ASSERT_OK(store->Flush());  // the WAL with the upsert is deleted; the new one is empty
  const uint64_t latest = store->LatestSequence();
  ASSERT_GT(latest, 0u);
  for (int read = 0; read < 3; ++read) {
    StatusOr<ChangeBatch> batch = store->ReadChangesSince(PointRange::All(), latest - 1, 100);
    ASSERT_FALSE(batch.ok()) << "read " << read << " answered " << batch->changes.size()
                             << " changes from a WAL that is gone";
    EXPECT_EQ(ReasonOf(batch.status()), ErrorReason::kUnavailable) << batch.status();
  }
  SHOAL_ASSERT_OK(store->Close());
}

TEST_F(TransferTest, IngestRefusesServedOrNonEmptyRangesAndForeignFiles) {
  Fill(200);
  SHOAL_ASSERT_OK_AND_ASSIGN(ExportedRange exported,
                             source_->ExportRange(kLow, {.directory = dir_.Sub("ship")}));
  EXPECT_TRUE(Is(dest_->IngestRange(exported, {}), ErrorReason::kBucketState));  // not held
  SHOAL_ASSERT_OK(dest_->AddBucket({.id = BucketId(1), .range = kLow}));
  EXPECT_TRUE(Is(dest_->IngestRange(exported, {}), ErrorReason::kBucketState));  // served
  ExportedRange mislabelled = exported;
  mislabelled.range = kHigh;
  SHOAL_ASSERT_OK(
      dest_->AddBucket({.id = BucketId(2), .range = kHigh, .state = BucketState::kAdding}));
  EXPECT_TRUE(Is(dest_->IngestRange(mislabelled, {}), ErrorReason::kInvalidArgument));
  // Non-empty staged range: an aborted attempt must be dropped before a retry.
  SHOAL_ASSERT_OK_AND_ASSIGN(ExportedRange high,
                             source_->ExportRange(kHigh, {.directory = dir_.Sub("ship2")}));
  SHOAL_ASSERT_OK(dest_->IngestRange(high, {}));
  EXPECT_TRUE(Is(dest_->IngestRange(high, {}), ErrorReason::kBucketState));
  SHOAL_ASSERT_OK(dest_->DropRange(kHigh));
  SHOAL_ASSERT_OK(dest_->IngestRange(high, {}));
  EXPECT_EQ(Content(*dest_, kHigh), Content(*source_, kHigh));
}

TEST_F(TransferTest, CatchUpFailsCleanlyWhenTheRangeIsDropped) {
  Fill(20);
  SHOAL_ASSERT_OK(source_->SetBucketState(BucketId(1), BucketState::kLeaving));
  const uint64_t start = source_->LatestSequence();
  SHOAL_ASSERT_OK(source_->RemoveBucket(BucketId(1)));
  EXPECT_TRUE(Is(source_->ReadChangesSince(kLow, start, 10), ErrorReason::kBucketState));
}

// The compression an export file was written with (RocksDB's name for it).
std::string CompressionOf(const std::string& path) {
  rocksdb::SstFileReader reader{rocksdb::Options()};
  EXPECT_TRUE(reader.Open(path).ok()) << path;
  return reader.GetTableProperties()->compression_name;
}

// 2,000 characters of 64 symbols, uniformly random: LZ4 cannot save an eighth of them.
std::string NoiseBody(uint64_t seed) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string body = R"({"noise":")";
  for (int i = 0; i < 2000; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    body.push_back(kAlphabet[seed >> 58]);
  }
  return body + "\"}";
}

TEST_F(TransferTest, ExportCountsItsLivePartAsAScanWould) {
  Fill(300);
  for (int i = 0; i < 30; ++i) {
    SHOAL_ASSERT_OK(source_->Delete(kC, "k" + std::to_string(i)).status());
  }
  std::unique_ptr<Snapshot> snap = source_->GetSnapshot();
  SHOAL_ASSERT_OK(source_->Delete(kC, "k40").status());  // after the snapshot: not counted
  SHOAL_ASSERT_OK_AND_ASSIGN(
      ExportedRange exported,
      source_->ExportRange(kLow, {.directory = dir_.Sub("ship"), .snapshot = snap.get()}));
  SHOAL_ASSERT_OK_AND_ASSIGN(BucketStats scanned, source_->ComputeStats(kLow, snap.get()));
  EXPECT_EQ(exported.live_documents, scanned.documents);
  EXPECT_EQ(exported.live_bytes, scanned.live_bytes);
  EXPECT_EQ(exported.entries, scanned.documents + scanned.tombstones);
  EXPECT_EQ(exported.bytes, scanned.live_bytes + scanned.tombstone_bytes);
  EXPECT_GT(scanned.tombstones, 0u);
}

TEST_F(TransferTest, ExportCompressesOnlyDataTheEngineFoundCompressible) {
  SHOAL_ASSERT_OK_AND_ASSIGN(EngineOptions engine, BuildEngineOptions(TestOptions(dir_.Sub("x"))));
  const bool engine_compresses = engine.documents.compression != rocksdb::kNoCompression;
  // Repetitive documents: the engine's tables compress them, and so does the export.
  for (int i = 0; i < 400; ++i) {
    SHOAL_ASSERT_OK(
        source_->Upsert(kC, "k" + std::to_string(i), R"({"pad":")" + std::string(2000, 'a') + "\"}")
            .status());
  }
  SHOAL_ASSERT_OK(source_->CompactRange(PointRange::All()));
  SHOAL_ASSERT_OK_AND_ASSIGN(ExportedRange repetitive,
                             source_->ExportRange(kLow, {.directory = dir_.Sub("repetitive")}));
  ASSERT_FALSE(repetitive.files.empty());
  EXPECT_EQ(CompressionOf(repetitive.files.front()) != "NoCompression", engine_compresses);
  // The same keys rewritten with noise and compacted: the engine kept every block raw, so the
  // export does not try to compress them.
  for (int i = 0; i < 400; ++i) {
    SHOAL_ASSERT_OK(source_->Upsert(kC, "k" + std::to_string(i), NoiseBody(i)).status());
  }
  SHOAL_ASSERT_OK(source_->CompactRange(PointRange::All()));
  SHOAL_ASSERT_OK_AND_ASSIGN(ExportedRange noise,
                             source_->ExportRange(kLow, {.directory = dir_.Sub("noise")}));
  ASSERT_FALSE(noise.files.empty());
  EXPECT_EQ(CompressionOf(noise.files.front()), "NoCompression");
  // Either way the destination takes the files and serves the same documents.
  SHOAL_ASSERT_OK(
      dest_->AddBucket({.id = BucketId(1), .range = kLow, .state = BucketState::kAdding}));
  SHOAL_ASSERT_OK(dest_->IngestRange(noise, {}));
  EXPECT_EQ(Content(*dest_, kLow), Content(*source_, kLow));
}

TEST_F(TransferTest, EmptyRangeExportsNoFiles) {
  SHOAL_ASSERT_OK_AND_ASSIGN(ExportedRange exported,
                             source_->ExportRange(kLow, {.directory = dir_.Sub("ship")}));
  EXPECT_TRUE(exported.files.empty());
  EXPECT_EQ(exported.entries, 0u);
  SHOAL_ASSERT_OK(dest_->IngestRange(exported, {}));
}

}  // namespace
}  // namespace shoal::storage
