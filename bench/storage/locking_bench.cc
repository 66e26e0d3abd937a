// How to make read-modify-write atomic per key: a striped mutex around Get + Put on a plain DB
// (what BucketStore does) against RocksDB's pessimistic TransactionDB (GetForUpdate + Put +
// Commit) and OptimisticTransactionDB (Get + Put + Commit, retried on conflict). The operation is
// an insert-if-absent of a 100 B value on fresh keys, from 1 and 2 threads; WAL on, no fsync.
// Results: docs/results/storage.md ("Locking").

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/utilities/optimistic_transaction_db.h>
#include <rocksdb/utilities/transaction_db.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include "bench/storage/bench_docs.h"
#include "src/common/point.h"
#include "src/storage/store_options.h"

namespace shoal::storage {
namespace {

enum class Mode { kStriped, kPessimistic, kOptimistic };

constexpr size_t kStripes = 1024;
struct alignas(64) Stripe {
  std::mutex mu;
};

struct Fixture {
  std::string dir;
  rocksdb::DB* db = nullptr;  // the plain DB, or the base of a transaction DB
  rocksdb::TransactionDB* txn_db = nullptr;
  rocksdb::OptimisticTransactionDB* occ_db = nullptr;
  rocksdb::WriteOptions write;
  std::unique_ptr<Stripe[]> stripes;
};
Fixture* g = nullptr;

void SetUp(Mode mode) {
  g = new Fixture;
  const char* env = std::getenv("SHOAL_BENCH_DIR");
  g->dir = std::string(env != nullptr ? env : "/tmp/shoal-storage-bench") + "/locking";
  std::filesystem::remove_all(g->dir);
  std::filesystem::create_directories(g->dir);
  auto engine = BuildEngineOptions(StoreOptions{.path = g->dir, .sync = SyncPolicy::kPeriodic});
  if (!engine.ok()) std::abort();
  rocksdb::Options options(engine->db, engine->documents);
  g->write = engine->write;
  g->stripes = std::make_unique<Stripe[]>(kStripes);
  rocksdb::Status s;
  switch (mode) {
    case Mode::kStriped:
      s = rocksdb::DB::Open(options, g->dir, &g->db);
      break;
    case Mode::kPessimistic:
      s = rocksdb::TransactionDB::Open(options, rocksdb::TransactionDBOptions(), g->dir,
                                       &g->txn_db);
      g->db = g->txn_db;
      break;
    case Mode::kOptimistic:
      s = rocksdb::OptimisticTransactionDB::Open(options, g->dir, &g->occ_db);
      g->db = g->occ_db;
      break;
  }
  if (!s.ok()) std::abort();
}

void TearDown() {
  delete g->db;
  std::filesystem::remove_all(g->dir);
  delete g;
  g = nullptr;
}

bool InsertStriped(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(g->stripes[Hash64(key, 0) % kStripes].mu);
  std::string existing;
  rocksdb::Status s = g->db->Get(rocksdb::ReadOptions(), key, &existing);
  if (!s.IsNotFound()) return false;
  return g->db->Put(g->write, key, value).ok();
}

bool InsertPessimistic(const std::string& key, const std::string& value) {
  std::unique_ptr<rocksdb::Transaction> txn(g->txn_db->BeginTransaction(g->write));
  std::string existing;
  rocksdb::Status s = txn->GetForUpdate(rocksdb::ReadOptions(), key, &existing);
  if (!s.IsNotFound()) return false;
  return txn->Put(key, value).ok() && txn->Commit().ok();
}

bool InsertOptimistic(const std::string& key, const std::string& value) {
  for (int attempt = 0; attempt < 10; ++attempt) {
    std::unique_ptr<rocksdb::Transaction> txn(g->occ_db->BeginTransaction(g->write));
    std::string existing;
    rocksdb::Status s = txn->GetForUpdate(rocksdb::ReadOptions(), key, &existing);
    if (!s.IsNotFound()) return false;
    if (!txn->Put(key, value).ok()) return false;
    s = txn->Commit();
    if (s.ok()) return true;
    if (!s.IsBusy() && !s.IsTryAgain()) return false;
  }
  return false;
}

void BM_InsertIfAbsent(benchmark::State& state, Mode mode) {
  if (state.thread_index() == 0) SetUp(mode);
  const std::string value = bench::MakeJsonDocument(100);
  int64_t i = 0;
  for (auto _ : state) {
    const std::string key = fmt::format("t{}-{}", state.thread_index(), bench::BenchKey(i++));
    bool ok = false;
    switch (mode) {
      case Mode::kStriped:
        ok = InsertStriped(key, value);
        break;
      case Mode::kPessimistic:
        ok = InsertPessimistic(key, value);
        break;
      case Mode::kOptimistic:
        ok = InsertOptimistic(key, value);
        break;
    }
    if (!ok) state.SkipWithError("insert failed");
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) TearDown();
}

BENCHMARK_CAPTURE(BM_InsertIfAbsent, striped_lock, Mode::kStriped)
    ->Threads(1)
    ->Threads(2)
    ->Iterations(200000)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_InsertIfAbsent, transaction_db, Mode::kPessimistic)
    ->Threads(1)
    ->Threads(2)
    ->Iterations(200000)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_InsertIfAbsent, optimistic_transaction_db, Mode::kOptimistic)
    ->Threads(1)
    ->Threads(2)
    ->Iterations(200000)
    ->UseRealTime();

}  // namespace
}  // namespace shoal::storage

BENCHMARK_MAIN();
