// What ordering a bucket's writes for replication costs in the store, and what applying them
// costs at a backup (docs/design/replication.md §3, §10 "per-bucket vs store-wide sequencer").
// Arms, alternating run by run so that a change of the machine's speed hits all of them:
//   plain:      BucketStore::ApplyEach of single upserts (today's unreplicated write);
//   stamped-1:  ApplyEachStamped, every key in one bucket (its sequencer serializes the writers);
//   stamped-16: ApplyEachStamped, keys over 16 buckets (one sequencer each);
//   backup:     ApplyReplicated of the entries stamped-1 produced, 16 entries per call (one
//               stream message), at a second store: a backup's cost per replicated write.
// THREADS writers (default 2, the machine's cores) each write single 1 KiB upserts to random
// keys with WalSync::kDeferred (the WAL is synced by the store's periodic sync, as a node
// with --no-sync: this measures CPU, not fsync). Prints each run and the medians. Run by hand;
// results in docs/results/replication.md.
//
// Usage: storage_replica_apply_bench [DIR] [RUNS=5] [SECONDS=2] [THREADS=2] [KEYS=10000]

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/storage/bench_docs.h"
#include "src/common/point.h"
#include "src/storage/bucket_store.h"

namespace shoal::storage {
namespace {

constexpr CollectionId kCollection{1};
constexpr int kBuckets = 16;
constexpr size_t kEntriesPerMessage = 16;

using bench::FlatValue;
using bench::Median;

StoreOptions Options(const std::string& path) {
  return StoreOptions{
      .path = path, .sync = SyncPolicy::kPeriodic, .sync_interval = std::chrono::milliseconds(100)};
}

// A store with `buckets` equal buckets, each at term 1.
std::unique_ptr<BucketStore> OpenStore(const std::string& path, int buckets) {
  auto store = BucketStore::Open(Options(path));
  if (!store.ok()) return nullptr;
  if (!(*store)->CreateCollection({.id = kCollection, .name = "docs"}).ok()) return nullptr;
  if (!(*store)->AddBucket({.id = BucketId(0), .range = PointRange::All()}).ok()) return nullptr;
  const uint64_t step = ~uint64_t{0} / static_cast<uint64_t>(buckets) + 1;
  for (int b = 1; b < buckets; ++b) {
    if (!(*store)
             ->SplitBucket(BucketId(b - 1), step * static_cast<uint64_t>(b), BucketId(b))
             .ok()) {
      return nullptr;
    }
  }
  for (int b = 0; b < buckets; ++b) {
    if (!(*store)->BeginTerm(BucketId(b), Term(1)).ok()) return nullptr;
  }
  return std::move(store).value();
}

enum class Arm { kPlain, kStamped };

// `threads` writers for `seconds`; returns microseconds per write (wall time / writes), or a
// negative value on error. Stamped entries go to `log` when it is not null.
double RunWriters(Arm arm, BucketStore& store, int buckets, const std::string& body, int threads,
                  int keys, double seconds, std::vector<ReplicatedEntry>* log) {
  // Bucket b holds [b * step, (b + 1) * step) (with one bucket, everything).
  const uint64_t step = buckets == 1 ? 0 : ~uint64_t{0} / static_cast<uint64_t>(buckets) + 1;
  std::atomic<uint64_t> written{0};
  std::atomic<bool> failed{false};
  std::mutex log_mu;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration<double>(seconds);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937_64 random(static_cast<uint64_t>(t) * 7919 + 1);
      std::string pk;
      while (std::chrono::steady_clock::now() < deadline) {
        pk = fmt::format("key-{}", random() % static_cast<uint64_t>(keys));
        const Mutation m{.kind = MutationKind::kUpsert,
                         .collection = kCollection,
                         .primary_key = pk,
                         .body = body};
        if (arm == Arm::kPlain) {
          auto result = store.ApplyEach(std::span(&m, 1), WalSync::kDeferred);
          if (!result.ok() || !(*result)[0].ok()) failed = true;
        } else {
          const BucketId bucket(
              step == 0 ? 0 : static_cast<uint32_t>(PointOf(kCollection, pk).value() / step));
          auto result = store.ApplyEachStamped(bucket, std::span(&m, 1), WalSync::kDeferred);
          if (!result.ok() || !result->results[0].ok()) failed = true;
          if (result.ok() && log != nullptr) {
            std::lock_guard<std::mutex> lock(log_mu);
            for (ReplicatedEntry& e : result->entries) log->push_back(std::move(e));
          }
        }
        written.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  if (failed) return -1;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return elapsed * 1e6 / static_cast<double>(written.load());
}

// Applies `log` (sorted by position) at `backup` in messages of kEntriesPerMessage; returns
// microseconds per write.
double RunBackup(BucketStore& backup, std::vector<ReplicatedEntry> log) {
  std::sort(log.begin(), log.end(), [](const ReplicatedEntry& a, const ReplicatedEntry& b) {
    return a.bucket != b.bucket ? a.bucket < b.bucket : a.position < b.position;
  });
  // Each run's backup starts where the primary's log starts: skip what it already holds.
  const uint64_t held = backup.GetReplicaState(BucketId(0)).position.rseq;
  std::erase_if(log, [held](const ReplicatedEntry& e) { return e.position.rseq <= held; });
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < log.size(); i += kEntriesPerMessage) {
    const size_t n = std::min(kEntriesPerMessage, log.size() - i);
    auto result = backup.ApplyReplicated(std::span(log).subspan(i, n), WalSync::kDeferred);
    if (!result.ok()) return -1;
    for (const auto& r : *result) {
      if (!r.ok()) {
        std::fprintf(stderr, "backup: %s\n", r.status().ToString().c_str());
        return -1;
      }
    }
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return log.empty() ? 0 : elapsed * 1e6 / static_cast<double>(log.size());
}

int Main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "replica-apply-bench";
  const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  const double seconds = argc > 3 ? std::atof(argv[3]) : 2.0;
  const int threads = argc > 4 ? std::atoi(argv[4]) : 2;
  const int keys = argc > 5 ? std::atoi(argv[5]) : 10000;
  if (runs < 1 || seconds <= 0 || threads < 1 || keys < 1) {
    std::fprintf(stderr, "usage: %s [DIR] [RUNS>=1] [SECONDS>0] [THREADS>=1] [KEYS>=1]\n", argv[0]);
    return 2;
  }
  std::filesystem::remove_all(dir);
  std::unique_ptr<BucketStore> one = OpenStore(dir + "/one", 1);
  std::unique_ptr<BucketStore> many = OpenStore(dir + "/many", kBuckets);
  std::unique_ptr<BucketStore> plain = OpenStore(dir + "/plain", 1);
  std::unique_ptr<BucketStore> backup = OpenStore(dir + "/backup", 1);
  if (!one || !many || !plain || !backup) {
    std::fprintf(stderr, "open failed\n");
    return 1;
  }
  const std::string body = FlatValue(1024);
  std::vector<double> plain_us, one_us, many_us, backup_us;
  for (int run = 0; run < runs; ++run) {
    std::vector<ReplicatedEntry> log;
    const double a = RunWriters(Arm::kPlain, *plain, 1, body, threads, keys, seconds, nullptr);
    const double b = RunWriters(Arm::kStamped, *one, 1, body, threads, keys, seconds, &log);
    const double c =
        RunWriters(Arm::kStamped, *many, kBuckets, body, threads, keys, seconds, nullptr);
    const double d = RunBackup(*backup, std::move(log));
    if (a < 0 || b < 0 || c < 0 || d < 0) {
      std::fprintf(stderr, "a write failed\n");
      return 1;
    }
    plain_us.push_back(a);
    one_us.push_back(b);
    many_us.push_back(c);
    backup_us.push_back(d);
    std::printf("run %d: plain %.2f us/write, stamped-1 %.2f, stamped-16 %.2f, backup %.2f\n",
                run + 1, a, b, c, d);
  }
  const double a = Median(plain_us), b = Median(one_us), c = Median(many_us), d = Median(backup_us);
  std::printf(
      "%d threads, %d keys, median of %d: plain %.2f us/write, stamped-1 %.2f (x%.2f), "
      "stamped-16 %.2f (x%.2f), backup %.2f (x%.2f of stamped-1)\n",
      threads, keys, runs, a, b, b / a, c, c / a, d, d / b);
  for (auto* store : {one.get(), many.get(), plain.get(), backup.get()}) {
    if (!store->Close().ok()) return 1;
  }
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace shoal::storage

int main(int argc, char** argv) { return shoal::storage::Main(argc, argv); }
