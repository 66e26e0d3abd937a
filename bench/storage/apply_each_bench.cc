// What a storage node's batch of upserts costs in its store, per write: BucketStore::ApplyEach
// (validation, ownership, stripe locks, one MultiGet of the stored versions, the decisions,
// versions, one WriteBatch) against the raw engine with the same options and the same key and
// value bytes, in the same run:
//   raw:  one WriteBatch of N blind Puts (the engine's floor for these bytes);
//   rmw:  one MultiGet of the N keys, then the WriteBatch (what an upsert that must know the
//         stored version costs on the raw engine, with no checks);
//   store: BucketStore::ApplyEach of the N upserts (what a node's batch call runs).
// Upserts of 1 KiB JSON documents to K random keys, as bench/net/net_load sends them; the WAL is
// written but not synced per write (SyncPolicy::kPeriodic, as a node with --no-sync). The three
// arms alternate run by run, so a change of the machine's speed hits all of them. Prints each
// run and the median microseconds per write of each arm. Not a Google Benchmark: run by hand.
// Results: docs/results/network.md ("A put's cost in the store"). WRITE_BUFFER_MIB=N sets the
// memtable size (default 64).
//
// Usage: storage_apply_each_bench [DIR] [RUNS=5] [SECONDS=2] [BATCH=16] [KEYS=10000]

#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "bench/storage/bench_docs.h"
#include "src/storage/bucket_store.h"
#include "src/storage/codec.h"

namespace shoal::storage {
namespace {

constexpr CollectionId kCollection{1};

using bench::FlatValue;
using bench::Median;

StoreOptions Options(const std::string& path) {
  StoreOptions options{
      .path = path, .sync = SyncPolicy::kPeriodic, .sync_interval = std::chrono::milliseconds(100)};
  if (const char* mib = std::getenv("WRITE_BUFFER_MIB"); mib != nullptr) {
    options.write_buffer_bytes = static_cast<size_t>(std::atoi(mib)) << 20;
  }
  return options;
}

// The raw engine, opened with the store's options.
struct RawEngine {
  rocksdb::DB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::WriteOptions write;

  ~RawEngine() {
    for (auto* h : handles) (void)db->DestroyColumnFamilyHandle(h);
    if (db != nullptr) (void)db->Close();
    delete db;
  }
};

enum class Arm { kRaw, kRmw, kStore };

// Writes batches for `seconds`; returns microseconds per write, or a negative value on error.
double RunOnce(Arm arm, BucketStore& store, RawEngine& raw, const std::string& body, int batch,
               int keys, double seconds, std::mt19937_64& random) {
  std::vector<std::string> pks(static_cast<size_t>(batch));
  std::vector<std::string> encoded(static_cast<size_t>(batch));
  std::vector<Mutation> mutations(static_cast<size_t>(batch));
  std::vector<rocksdb::Slice> slices(static_cast<size_t>(batch));
  std::vector<rocksdb::PinnableSlice> values(static_cast<size_t>(batch));
  std::vector<rocksdb::Status> statuses(static_cast<size_t>(batch));
  uint64_t version = 1;
  uint64_t written = 0;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    for (int i = 0; i < batch; ++i) {
      pks[i] = fmt::format("key-{}", random() % static_cast<uint64_t>(keys));
      encoded[i] = EncodeStoredKey(kCollection, pks[i]);
      slices[i] = encoded[i];
      mutations[i] = Mutation{.kind = MutationKind::kUpsert,
                              .collection = kCollection,
                              .primary_key = pks[i],
                              .body = body};
    }
    switch (arm) {
      case Arm::kRmw:
        raw.db->MultiGet(rocksdb::ReadOptions(), raw.handles[1], slices.size(), slices.data(),
                         values.data(), statuses.data());
        for (auto& v : values) v.Reset();
        [[fallthrough]];
      case Arm::kRaw: {
        rocksdb::WriteBatch wb;
        for (int i = 0; i < batch; ++i) {
          wb.Put(raw.handles[1], encoded[i], EncodeStoredValue(version++, false, body));
        }
        if (!raw.db->Write(raw.write, &wb).ok()) return -1;
        break;
      }
      case Arm::kStore: {
        auto results = store.ApplyEach(mutations, WalSync::kDeferred);
        if (!results.ok()) return -1;
        for (const auto& r : *results) {
          if (!r.ok()) return -1;
        }
        break;
      }
    }
    written += static_cast<uint64_t>(batch);
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return elapsed * 1e6 / static_cast<double>(written);
}

int Main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "apply-each-bench";
  const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  const double seconds = argc > 3 ? std::atof(argv[3]) : 2.0;
  const int batch = argc > 4 ? std::atoi(argv[4]) : 16;
  const int keys = argc > 5 ? std::atoi(argv[5]) : 10000;
  if (runs < 1 || seconds <= 0 || batch < 1 || keys < 1) {
    std::fprintf(stderr, "usage: %s [DIR] [RUNS>=1] [SECONDS>0] [BATCH>=1] [KEYS>=1]\n", argv[0]);
    return 2;
  }
  std::filesystem::remove_all(dir);
  auto store = BucketStore::Open(Options(dir + "/store"));
  if (!store.ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().ToString().c_str());
    return 1;
  }
  if (!(*store)->CreateCollection({.id = kCollection, .name = "docs"}).ok() ||
      !(*store)->AddBucket({.id = BucketId(1), .range = PointRange::All()}).ok()) {
    return 1;
  }
  auto engine = BuildEngineOptions(Options(dir + "/raw"));
  if (!engine.ok()) return 1;
  RawEngine raw;
  const std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
      {kDocumentsColumnFamily, engine->documents}};
  if (!rocksdb::DB::Open(engine->db, dir + "/raw", cfs, &raw.handles, &raw.db).ok()) return 1;
  raw.write = engine->write;
  const std::string body = FlatValue(1024);
  std::mt19937_64 random(1);
  // Every key exists before the first measured run, in both engines.
  if (RunOnce(Arm::kRmw, **store, raw, body, batch, keys, 1.0, random) < 0 ||
      RunOnce(Arm::kStore, **store, raw, body, batch, keys, 1.0, random) < 0) {
    std::fprintf(stderr, "a write failed\n");
    return 1;
  }
  std::vector<double> raw_us, rmw_us, store_us;
  for (int run = 0; run < runs; ++run) {
    const double a = RunOnce(Arm::kRaw, **store, raw, body, batch, keys, seconds, random);
    const double b = RunOnce(Arm::kRmw, **store, raw, body, batch, keys, seconds, random);
    const double c = RunOnce(Arm::kStore, **store, raw, body, batch, keys, seconds, random);
    if (a < 0 || b < 0 || c < 0) {
      std::fprintf(stderr, "a write failed\n");
      return 1;
    }
    raw_us.push_back(a);
    rmw_us.push_back(b);
    store_us.push_back(c);
    std::printf("run %d: raw %.2f us/write, rmw %.2f, store %.2f\n", run + 1, a, b, c);
  }
  const double a = Median(raw_us), b = Median(rmw_us), c = Median(store_us);
  std::printf(
      "batch %d, %d keys, median of %d: raw %.2f us/write, rmw %.2f, store %.2f "
      "(store/raw x%.2f, store/rmw x%.2f)\n",
      batch, keys, runs, a, b, c, c / a, c / b);
  const Status closed = (*store)->Close();
  std::filesystem::remove_all(dir);
  return closed.ok() ? 0 : 1;
}

}  // namespace
}  // namespace shoal::storage

int main(int argc, char** argv) { return shoal::storage::Main(argc, argv); }
