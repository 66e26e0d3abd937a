// Single-document operations of BucketStore against raw RocksDB with the same engine options
// (BuildEngineOptions) and the same key and value bytes (the store's encoding), in the same run:
// insert, get, update and delete of 100 B and 1 KiB documents from 1 and 2 threads.
//   BM_Store: the BucketStore operation (validation, locks, read-decide-write, version).
//   BM_Raw:   the blind engine call (Put, Get, Put, Delete).
//   BM_RawRmw: what the same semantics cost on the raw engine without any checks: Get then Put
//             (insert, update) or Get then Put of a tombstone (delete).
// Reports throughput (items_per_second) and per-thread p50/p99 latency in microseconds.
// Results and commands: docs/results/storage.md.

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench/storage/bench_docs.h"
#include "src/common/random.h"
#include "src/storage/bucket_store.h"
#include "src/storage/codec.h"

namespace shoal::storage {
namespace {

constexpr CollectionId kC{1};
constexpr int64_t kOpsPerThread = 100000;

enum class Op { kInsert, kGet, kUpdate, kDelete };

std::string BenchDir() {
  const char* env = std::getenv("SHOAL_BENCH_DIR");
  return env != nullptr ? env : "/tmp/shoal-storage-bench";
}

StoreOptions BenchOptions(const std::string& path, bool sync) {
  return StoreOptions{.path = path,
                      .sync = sync ? SyncPolicy::kEveryWrite : SyncPolicy::kPeriodic,
                      .sync_interval = std::chrono::milliseconds(0)};
}

// Latencies of one thread, reported as p50/p99 (averaged over threads).
class Latencies {
 public:
  void Add(std::chrono::nanoseconds d) { samples_.push_back(d.count()); }
  void Report(benchmark::State& state) {
    if (samples_.empty()) return;
    std::sort(samples_.begin(), samples_.end());
    auto at = [&](double q) {
      return samples_[static_cast<size_t>(q * (samples_.size() - 1))] / 1e3;
    };
    state.counters["p50_us"] = benchmark::Counter(at(0.50), benchmark::Counter::kAvgThreads);
    state.counters["p99_us"] = benchmark::Counter(at(0.99), benchmark::Counter::kAvgThreads);
  }

 private:
  std::vector<int64_t> samples_;
};

std::string Key(int thread, int64_t i) { return fmt::format("t{}-{}", thread, bench::BenchKey(i)); }
// The raw engine stores exactly what the store stores.
std::string RawKey(int thread, int64_t i) { return EncodeStoredKey(kC, Key(thread, i)); }

// --- BucketStore ---

struct StoreFixture {
  std::unique_ptr<BucketStore> store{};
  std::string dir{};
};
StoreFixture* g_store = nullptr;

void SetUpStore(const benchmark::State& state, Op op, size_t doc_bytes, bool sync) {
  auto* f = new StoreFixture{.dir = BenchDir() + "/store"};
  std::filesystem::remove_all(f->dir);
  auto store = BucketStore::Open(BenchOptions(f->dir, sync));
  if (!store.ok()) std::abort();
  f->store = std::move(store).value();
  if (!f->store->CreateCollection({.id = kC, .name = "bench"}).ok()) std::abort();
  if (!f->store->AddBucket({.id = BucketId(1), .range = PointRange::All()}).ok()) std::abort();
  if (op != Op::kInsert) {
    for (int t = 0; t < state.threads(); ++t) {
      for (int64_t i = 0; i < kOpsPerThread; i += 1000) {
        std::vector<std::string> keys, bodies;
        std::vector<Mutation> batch;
        for (int64_t j = i; j < i + 1000; ++j) {
          keys.push_back(Key(t, j));
          bodies.push_back(bench::MakeJsonDocument(doc_bytes, j));
        }
        for (size_t j = 0; j < keys.size(); ++j) {
          batch.push_back({.kind = MutationKind::kUpsert,
                           .collection = kC,
                           .primary_key = keys[j],
                           .body = bodies[j]});
        }
        if (!f->store->ApplyBatch(batch).ok()) std::abort();
      }
    }
  }
  g_store = f;
}

void TearDownStore() {
  (void)g_store->store->Close();
  std::filesystem::remove_all(g_store->dir);
  delete g_store;
  g_store = nullptr;
}

void BM_Store(benchmark::State& state, Op op, bool sync) {
  const size_t doc_bytes = static_cast<size_t>(state.range(0));
  if (state.thread_index() == 0) SetUpStore(state, op, doc_bytes, sync);
  const int t = state.thread_index();
  const std::string body = bench::MakeJsonDocument(doc_bytes, 7 + t);
  Random rng(t + 1);
  Latencies lat;
  int64_t i = 0;
  for (auto _ : state) {
    const std::string key = Key(t, op == Op::kGet || op == Op::kUpdate
                                       ? static_cast<int64_t>(rng.Uniform(kOpsPerThread))
                                       : i);
    const auto start = std::chrono::steady_clock::now();
    bool ok = false;
    switch (op) {
      case Op::kInsert:
        ok = g_store->store->Insert(kC, key, body).ok();
        break;
      case Op::kGet:
        ok = g_store->store->Get(kC, key).ok();
        break;
      case Op::kUpdate:
        ok = g_store->store->Update(kC, key, body).ok();
        break;
      case Op::kDelete:
        ok = g_store->store->Delete(kC, key).ok();
        break;
    }
    lat.Add(std::chrono::steady_clock::now() - start);
    if (!ok) state.SkipWithError("operation failed");
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
  lat.Report(state);
  if (state.thread_index() == 0) TearDownStore();
}

// --- raw RocksDB with the store's engine options ---

struct RawFixture {
  rocksdb::DB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles{};
  rocksdb::WriteOptions write{};
  std::string dir{};
};
RawFixture* g_raw = nullptr;

void SetUpRaw(const benchmark::State& state, Op op, size_t doc_bytes, bool sync) {
  auto* f = new RawFixture{.dir = BenchDir() + "/raw"};
  std::filesystem::remove_all(f->dir);
  auto engine = BuildEngineOptions(BenchOptions(f->dir, sync));
  if (!engine.ok()) std::abort();
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
      {kDocumentsColumnFamily, engine->documents}};
  if (!rocksdb::DB::Open(engine->db, f->dir, cfs, &f->handles, &f->db).ok()) std::abort();
  f->write = engine->write;
  if (op != Op::kInsert) {
    for (int t = 0; t < state.threads(); ++t) {
      for (int64_t i = 0; i < kOpsPerThread; i += 1000) {
        rocksdb::WriteBatch batch;
        for (int64_t j = i; j < i + 1000; ++j) {
          batch.Put(f->handles[1], RawKey(t, j),
                    EncodeStoredValue(j + 1, false, bench::MakeJsonDocument(doc_bytes, j)));
        }
        if (!f->db->Write(f->write, &batch).ok()) std::abort();
      }
    }
  }
  g_raw = f;
}

void TearDownRaw() {
  for (auto* h : g_raw->handles) (void)g_raw->db->DestroyColumnFamilyHandle(h);
  (void)g_raw->db->Close();
  delete g_raw->db;
  std::filesystem::remove_all(g_raw->dir);
  delete g_raw;
  g_raw = nullptr;
}

void BM_Raw(benchmark::State& state, Op op, bool sync, bool read_modify_write) {
  const size_t doc_bytes = static_cast<size_t>(state.range(0));
  if (state.thread_index() == 0) SetUpRaw(state, op, doc_bytes, sync);
  const int t = state.thread_index();
  const std::string body = bench::MakeJsonDocument(doc_bytes, 7 + t);
  Random rng(t + 1);
  Latencies lat;
  std::string value;
  int64_t i = 0;
  for (auto _ : state) {
    const std::string key = RawKey(t, op == Op::kGet || op == Op::kUpdate
                                          ? static_cast<int64_t>(rng.Uniform(kOpsPerThread))
                                          : i);
    rocksdb::ColumnFamilyHandle* cf = g_raw->handles[1];
    const auto start = std::chrono::steady_clock::now();
    rocksdb::Status s;
    if (read_modify_write && op != Op::kGet) {
      s = g_raw->db->Get(rocksdb::ReadOptions(), cf, key, &value);
      if (s.ok() || s.IsNotFound()) {
        s = g_raw->db->Put(g_raw->write, cf, key,
                           EncodeStoredValue(i + 1, op == Op::kDelete, body));
      }
    } else {
      switch (op) {
        case Op::kInsert:
        case Op::kUpdate:
          s = g_raw->db->Put(g_raw->write, cf, key, EncodeStoredValue(i + 1, false, body));
          break;
        case Op::kGet:
          s = g_raw->db->Get(rocksdb::ReadOptions(), cf, key, &value);
          break;
        case Op::kDelete:
          s = g_raw->db->Delete(g_raw->write, cf, key);
          break;
      }
    }
    lat.Add(std::chrono::steady_clock::now() - start);
    if (!s.ok()) state.SkipWithError("operation failed");
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
  lat.Report(state);
  if (state.thread_index() == 0) TearDownRaw();
}

#define SHOAL_OPS_ARGS \
  Arg(100)->Arg(1024)->Threads(1)->Threads(2)->Iterations(kOpsPerThread)->UseRealTime()
#define SHOAL_OPS_BENCH(name, op)                               \
  BENCHMARK_CAPTURE(BM_Store, name, op, false)->SHOAL_OPS_ARGS; \
  BENCHMARK_CAPTURE(BM_Raw, name, op, false, false)->SHOAL_OPS_ARGS

SHOAL_OPS_BENCH(insert, Op::kInsert);
BENCHMARK_CAPTURE(BM_Raw, insert_rmw, Op::kInsert, false, true)->SHOAL_OPS_ARGS;
SHOAL_OPS_BENCH(get, Op::kGet);
SHOAL_OPS_BENCH(update, Op::kUpdate);
BENCHMARK_CAPTURE(BM_Raw, update_rmw, Op::kUpdate, false, true)->SHOAL_OPS_ARGS;
SHOAL_OPS_BENCH(delete, Op::kDelete);
BENCHMARK_CAPTURE(BM_Raw, delete_rmw, Op::kDelete, false, true)->SHOAL_OPS_ARGS;

// With an fsync per acknowledged write: concurrent writers share fsyncs (group commit).
BENCHMARK_CAPTURE(BM_Store, insert_sync, Op::kInsert, true)
    ->Arg(1024)
    ->Threads(1)
    ->Threads(2)
    ->Iterations(2000)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Raw, insert_sync, Op::kInsert, true, false)
    ->Arg(1024)
    ->Threads(1)
    ->Threads(2)
    ->Iterations(2000)
    ->UseRealTime();

}  // namespace
}  // namespace shoal::storage

BENCHMARK_MAIN();
