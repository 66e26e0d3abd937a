// One WAL sync per batch against one per write: what a storage node's batch of N writes costs
// in its store with SyncPolicy::kEveryWrite: N writes that each sync the WAL, against N writes
// with WalSync::kDeferred, then one SyncWal (what the batch handler does). Upserts of 1 KiB to
// random keys of a store on the working directory's filesystem. The
// two variants alternate run by run (A B A B ...), so that a change of the machine's load hits
// both; prints each run and the median writes/s of each. Not a Google Benchmark: run by hand.
// Results: docs/results/network.md ("Batched writes").
//
// Usage: storage_batch_sync_bench [DIR] [RUNS=5] [SECONDS=2] [BATCH=64]

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "src/storage/bucket_store.h"

namespace shoal::storage {
namespace {

constexpr CollectionId kCollection{1};

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Writes batches for `seconds`; returns writes per second, or a negative value on error.
double RunOnce(BucketStore& store, bool one_sync_per_batch, int batch, double seconds,
               std::mt19937_64& random) {
  const std::string body = fmt::format(R"({{"pad":"{}"}})", std::string(1000, 'x'));
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration<double>(seconds);
  uint64_t written = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    const WalSync wal_sync = one_sync_per_batch ? WalSync::kDeferred : WalSync::kAsConfigured;
    for (int i = 0; i < batch; ++i) {
      const std::string key = fmt::format("key-{}", random() % 100000);
      if (!store.Upsert(kCollection, key, body, wal_sync).ok()) return -1;
    }
    if (one_sync_per_batch && !store.SyncWal().ok()) return -1;
    written += static_cast<uint64_t>(batch);
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(written) / elapsed;
}

int Main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "batch-sync-bench";
  const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  const double seconds = argc > 3 ? std::atof(argv[3]) : 2.0;
  const int batch = argc > 4 ? std::atoi(argv[4]) : 64;
  if (runs < 1 || seconds <= 0 || batch < 1) {
    std::fprintf(stderr, "usage: %s [DIR] [RUNS>=1] [SECONDS>0] [BATCH>=1]\n", argv[0]);
    return 2;
  }
  std::filesystem::remove_all(dir);
  StoreOptions options;
  options.path = dir;
  options.sync = SyncPolicy::kEveryWrite;
  options.check_ownership = false;
  auto store = BucketStore::Open(options);
  if (!store.ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().ToString().c_str());
    return 1;
  }
  if (!(*store)->CreateCollection({.id = kCollection, .name = "docs"}).ok()) return 1;
  std::mt19937_64 random(1);
  std::vector<double> before, after;
  for (int run = 0; run < runs; ++run) {
    const double a = RunOnce(**store, /*one_sync_per_batch=*/false, batch, seconds, random);
    const double b = RunOnce(**store, /*one_sync_per_batch=*/true, batch, seconds, random);
    if (a < 0 || b < 0) {
      std::fprintf(stderr, "a write failed\n");
      return 1;
    }
    before.push_back(a);
    after.push_back(b);
    std::printf("run %d: sync per write %.0f writes/s, one sync per batch %.0f writes/s\n", run + 1,
                a, b);
  }
  std::printf(
      "batch %d, median of %d: sync per write %.0f writes/s, one sync per batch %.0f "
      "writes/s (x%.1f)\n",
      batch, runs, Median(before), Median(after), Median(after) / Median(before));
  const Status closed = (*store)->Close();
  std::filesystem::remove_all(dir);
  return closed.ok() ? 0 : 1;
}

}  // namespace
}  // namespace shoal::storage

int main(int argc, char** argv) { return shoal::storage::Main(argc, argv); }
