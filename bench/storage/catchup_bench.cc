// Catch-up during a move: tail the WAL (GetUpdatesSince, filtered by range: what BucketStore does)
// or keep the node's own change log (a second Put per write into a "changes" column family keyed
// by a sequence, in the same WriteBatch, read back by range filtering).
//   BM_WriteCost:   the price every write pays (1 KiB documents, WAL on, no fsync).
//   BM_ReadChanges: reading the writes of 1/16 of the hash space among 100k writes.
// Results: docs/results/storage.md ("Catch-up").

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench/storage/bench_docs.h"
#include "src/storage/bucket_store.h"
#include "src/storage/codec.h"

namespace shoal::storage {
namespace {

constexpr CollectionId kC{1};
constexpr int kWrites = 100000;
const PointRange kRange = *PointRange::Make(0, 1ull << 60);  // 1/16 of the space

std::string Dir(const std::string& name) {
  const char* env = std::getenv("SHOAL_BENCH_DIR");
  return std::string(env != nullptr ? env : "/tmp/shoal-storage-bench") + "/" + name;
}

// A raw DB with the store's options and a documents and a changes column family.
struct RawDb {
  rocksdb::DB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> cfs;
  rocksdb::WriteOptions write;
  std::string dir;

  explicit RawDb(const std::string& name) : dir(Dir(name)) {
    std::filesystem::remove_all(dir);
    auto engine = BuildEngineOptions(StoreOptions{.path = dir, .sync = SyncPolicy::kPeriodic});
    if (!engine.ok()) std::abort();
    write = engine->write;
    std::vector<rocksdb::ColumnFamilyDescriptor> descriptors = {
        {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
        {kDocumentsColumnFamily, engine->documents},
        {"changes", engine->meta}};
    if (!rocksdb::DB::Open(engine->db, dir, descriptors, &cfs, &db).ok()) std::abort();
  }
  ~RawDb() {
    for (auto* h : cfs) (void)db->DestroyColumnFamilyHandle(h);
    delete db;
    std::filesystem::remove_all(dir);
  }
};

void BM_WriteCost(benchmark::State& state, bool change_log) {
  RawDb raw(change_log ? "changelog-write" : "wal-write");
  const std::string body = bench::MakeJsonDocument(static_cast<size_t>(state.range(0)));
  uint64_t sequence = 0;
  for (auto _ : state) {
    const std::string key = EncodeStoredKey(kC, bench::BenchKey(sequence));
    const std::string value = EncodeStoredValue(sequence + 1, false, body);
    rocksdb::WriteBatch batch;
    batch.Put(raw.cfs[1], key, value);
    if (change_log) {
      std::string log_key;
      AppendBigEndian64(++sequence, &log_key);
      batch.Put(raw.cfs[2], log_key, std::string(1, static_cast<char>(key.size())) + key + value);
    } else {
      ++sequence;
    }
    if (!raw.db->Write(raw.write, &batch).ok()) state.SkipWithError("write");
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(body.size()));
}

void BM_ReadChanges_WalTail(benchmark::State& state) {
  const std::string dir = Dir("wal-read");
  std::filesystem::remove_all(dir);
  auto store = BucketStore::Open(StoreOptions{.path = dir, .sync = SyncPolicy::kPeriodic});
  if (!store.ok()) std::abort();
  if (!(*store)->CreateCollection({.id = kC, .name = "c"}).ok()) std::abort();
  if (!(*store)->AddBucket({.id = BucketId(1), .range = PointRange::All()}).ok()) std::abort();
  const uint64_t start = (*store)->LatestSequence();
  const std::string body = bench::MakeJsonDocument(1024);
  for (int i = 0; i < kWrites; ++i) {
    if (!(*store)->Upsert(kC, bench::BenchKey(i), body).ok()) std::abort();
  }
  size_t found = 0;
  for (auto _ : state) {
    found = 0;
    uint64_t cursor = start;
    while (true) {
      auto batch = (*store)->ReadChangesSince(kRange, cursor, 1000);
      if (!batch.ok()) std::abort();
      found += batch->changes.size();
      if (batch->next_sequence == cursor) break;
      cursor = batch->next_sequence;
    }
  }
  state.counters["changes"] = static_cast<double>(found);
  state.SetItemsProcessed(state.iterations() * kWrites);  // writes examined
  (void)(*store)->Close();
  std::filesystem::remove_all(dir);
}

void BM_ReadChanges_ChangeLog(benchmark::State& state) {
  RawDb raw("changelog-read");
  const std::string body = bench::MakeJsonDocument(1024);
  for (int i = 0; i < kWrites; ++i) {
    const std::string key = EncodeStoredKey(kC, bench::BenchKey(i));
    const std::string value = EncodeStoredValue(i + 1, false, body);
    std::string log_key;
    AppendBigEndian64(i + 1, &log_key);
    rocksdb::WriteBatch batch;
    batch.Put(raw.cfs[1], key, value);
    batch.Put(raw.cfs[2], log_key, std::string(1, static_cast<char>(key.size())) + key + value);
    if (!raw.db->Write(raw.write, &batch).ok()) std::abort();
  }
  size_t found = 0;
  for (auto _ : state) {
    found = 0;
    std::unique_ptr<rocksdb::Iterator> it(raw.db->NewIterator(rocksdb::ReadOptions(), raw.cfs[2]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      // [key length][stored key][stored value]
      const std::string_view entry(it->value().data(), it->value().size());
      const size_t key_size = static_cast<unsigned char>(entry[0]);
      if (kRange.Contains(DecodeBigEndian64(entry.data() + 1))) {
        auto doc = DocumentFromStored(entry.substr(1, key_size), entry.substr(1 + key_size));
        benchmark::DoNotOptimize(doc);
        ++found;
      }
    }
  }
  state.counters["changes"] = static_cast<double>(found);
  state.SetItemsProcessed(state.iterations() * kWrites);
}

BENCHMARK_CAPTURE(BM_WriteCost, wal_tail, false)
    ->Arg(100)
    ->Arg(1024)
    ->Iterations(200000)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_WriteCost, change_log, true)
    ->Arg(100)
    ->Arg(1024)
    ->Iterations(200000)
    ->UseRealTime();
BENCHMARK(BM_ReadChanges_WalTail)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_ReadChanges_ChangeLog)->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace
}  // namespace shoal::storage

BENCHMARK_MAIN();
