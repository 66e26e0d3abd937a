// Moving, dropping and splitting one bucket (docs/results/storage.md, "Bucket operations").
//
// Builds a source store whose bucket b1 = [0, 2^63) holds --bucket-mb of 1 KiB documents (the
// node also holds some data in b2 = [2^63, 2^64)), then measures:
//   move:  ExportRange at a snapshot into SST files + IngestRange on a destination, against
//          copying the bucket document by document through the API (Scan pages, one Apply per
//          document), and page by page (one ApplyChanges per page);
//   drop:  RemoveBucket (one DeleteRange + DeleteFilesInRange + compaction hint), against one
//          Delete call per document;
//   split: SplitBucket on the full bucket and on an empty store (metadata only).
//
//   storage_bucket_move_bench [--bucket-mb=1024] [--doc-bytes=1024] [--dir=/tmp/...]

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/storage/bench_docs.h"
#include "src/common/random.h"
#include "src/storage/bucket_store.h"

namespace shoal::storage {
namespace {

constexpr CollectionId kC{1};
constexpr uint64_t kHalf = 1ull << 63;
const PointRange kBucket = *PointRange::Make(0, kHalf);

using Clock = std::chrono::steady_clock;
double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

void Check(const Status& s, const char* what) {
  if (!s.ok()) {
    fmt::print(stderr, "{}: {}\n", what, s.ToString());
    std::exit(1);
  }
}

std::unique_ptr<BucketStore> OpenStore(const std::string& path) {
  auto store = BucketStore::Open(StoreOptions{.path = path,
                                              .sync = SyncPolicy::kPeriodic,
                                              .sync_interval = std::chrono::milliseconds(0),
                                              .wal_ttl_seconds = 60,
                                              .wal_size_limit_mb = 256});
  Check(store.status(), "open");
  Check((*store)->CreateCollection({.id = kC, .name = "bench"}), "collection");
  return std::move(store).value();
}

uint64_t DirBytes(const std::string& dir) {
  uint64_t total = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".sst") total += e.file_size();
  }
  return total;
}

// Copies b1 from `source` to `dest` through the API; `per_page` uses one call per page.
double CopyThroughApi(BucketStore& source, BucketStore& dest, bool per_page) {
  const auto start = Clock::now();
  ScanOptions scan{.range = kBucket, .include_tombstones = true, .max_documents = 1000};
  while (true) {
    auto page = source.Scan(scan);
    Check(page.status(), "scan");
    if (per_page) {
      Check(dest.ApplyChanges(page->documents).status(), "apply page");
    } else {
      for (const Document& d : page->documents) {
        Check(dest.Apply({.kind = MutationKind::kApplyIfNewer,
                          .collection = d.collection,
                          .primary_key = d.primary_key,
                          .body = d.body,
                          .tombstone = d.tombstone,
                          .version = d.version})
                  .status(),
              "apply");
      }
    }
    if (page->next_cursor.empty()) break;
    scan.cursor = page->next_cursor;
  }
  return Seconds(Clock::now() - start);
}

double MedianSplitMicros(BucketStore& store, BucketId id, uint32_t first_new_id) {
  std::vector<double> micros;
  uint64_t at = kHalf;
  for (uint32_t i = 0; i < 50; ++i) {
    at /= 2;  // split the left part again and again
    const auto start = Clock::now();
    Check(store.SplitBucket(id, at, BucketId(first_new_id + i)).status(), "split");
    micros.push_back(Seconds(Clock::now() - start) * 1e6);
  }
  std::sort(micros.begin(), micros.end());
  return micros[micros.size() / 2];
}

}  // namespace
}  // namespace shoal::storage

int main(int argc, char** argv) {
  using namespace shoal::storage;  // NOLINT
  uint64_t bucket_mb = 1024;
  size_t doc_bytes = 1024;
  std::string dir = "/tmp/shoal-bucket-move-bench";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--bucket-mb=", 0) == 0) bucket_mb = std::stoull(arg.substr(12));
    if (arg.rfind("--doc-bytes=", 0) == 0) doc_bytes = std::stoull(arg.substr(12));
    if (arg.rfind("--dir=", 0) == 0) dir = arg.substr(6);
  }
  std::filesystem::remove_all(dir);
  auto source = OpenStore(dir + "/source");
  Check(source->AddBucket({.id = shoal::BucketId(1), .range = kBucket}), "b1");
  Check(source->AddBucket({.id = shoal::BucketId(2), .range = PointRange::From(kHalf)}), "b2");

  // Load: every key in b1, one in four of the others in b2.
  const auto load_start = Clock::now();
  shoal::Random rng(1);
  uint64_t loaded = 0;
  std::vector<std::string> keys, bodies;
  std::vector<Mutation> batch;
  for (uint64_t i = 0; loaded < (bucket_mb << 20);) {
    keys.clear();
    bodies.clear();
    batch.clear();
    for (; keys.size() < 1000; ++i) {
      std::string key = shoal::bench::BenchKey(i);
      const bool in_bucket = kBucket.Contains(shoal::PointOf(kC, key));
      if (!in_bucket && !rng.OneIn(4)) continue;
      bodies.push_back(shoal::bench::MakeJsonDocument(doc_bytes, i));
      if (in_bucket) loaded += key.size() + bodies.back().size();
      keys.push_back(std::move(key));
    }
    for (size_t j = 0; j < keys.size(); ++j) {
      batch.push_back({.kind = MutationKind::kUpsert,
                       .collection = kC,
                       .primary_key = keys[j],
                       .body = bodies[j]});
    }
    Check(source->ApplyBatch(batch).status(), "load");
  }
  Check(source->Flush(), "flush");
  auto stats = source->ComputeStats(kBucket);
  Check(stats.status(), "stats");
  fmt::print("load: {} documents, {:.0f} MiB of key+value bytes in the bucket, {:.1f} s\n",
             stats->documents, stats->live_bytes / 1048576.0, Seconds(Clock::now() - load_start));

  // Move by export + ingest.
  Check(source->SetBucketState(shoal::BucketId(1), BucketState::kLeaving), "leaving");
  auto dest = OpenStore(dir + "/dest");
  Check(
      dest->AddBucket({.id = shoal::BucketId(1), .range = kBucket, .state = BucketState::kAdding}),
      "adding");
  auto t0 = Clock::now();
  auto exported = source->ExportRange(kBucket, {.directory = dir + "/ship"});
  Check(exported.status(), "export");
  auto t1 = Clock::now();
  Check(dest->IngestRange(*exported, {.move_files = true}), "ingest");
  auto t2 = Clock::now();
  const double export_s = Seconds(t1 - t0), ingest_s = Seconds(t2 - t1);
  auto dest_stats = dest->ComputeStats(kBucket);
  Check(dest_stats.status(), "dest stats");
  if (dest_stats->documents != stats->documents) {
    fmt::print(stderr, "moved {} documents, expected {}\n", dest_stats->documents,
               stats->documents);
    return 1;
  }
  fmt::print(
      "move export+ingest: export {:.2f} s ({} files), ingest {:.2f} s, total {:.2f} s, "
      "{:.0f} MiB/s\n",
      export_s, exported->files.size(), ingest_s, export_s + ingest_s,
      stats->live_bytes / 1048576.0 / (export_s + ingest_s));

  // Copy through the API, per document and per page.
  auto api = OpenStore(dir + "/api");
  Check(api->AddBucket({.id = shoal::BucketId(1), .range = kBucket, .state = BucketState::kAdding}),
        "adding");
  const double per_doc_s = CopyThroughApi(*source, *api, /*per_page=*/false);
  fmt::print("move per document through the API: {:.2f} s ({:.1f}x slower than export+ingest)\n",
             per_doc_s, per_doc_s / (export_s + ingest_s));
  auto api_page = OpenStore(dir + "/api-page");
  Check(api_page->AddBucket(
            {.id = shoal::BucketId(1), .range = kBucket, .state = BucketState::kAdding}),
        "adding");
  const double per_page_s = CopyThroughApi(*source, *api_page, /*per_page=*/true);
  fmt::print("move per page of 1000 through the API: {:.2f} s ({:.1f}x slower)\n", per_page_s,
             per_page_s / (export_s + ingest_s));

  // Split: metadata only, whatever the size.
  Check(dest->SetBucketState(shoal::BucketId(1), BucketState::kReadWrite), "serve");
  const double split_full_us = MedianSplitMicros(*dest, shoal::BucketId(1), 100);
  auto empty = OpenStore(dir + "/empty");
  Check(empty->AddBucket({.id = shoal::BucketId(1), .range = kBucket}), "b1");
  const double split_empty_us = MedianSplitMicros(*empty, shoal::BucketId(1), 100);
  fmt::print("split (median of 50): full bucket {:.1f} us, empty bucket {:.1f} us\n", split_full_us,
             split_empty_us);

  // Drop: by range on the source, per key through the API on the per-page copy.
  const uint64_t before = DirBytes(dir + "/source");
  t0 = Clock::now();
  Check(source->RemoveBucket(shoal::BucketId(1)), "remove");
  const double drop_s = Seconds(Clock::now() - t0);
  fmt::print("drop by range: {:.3f} s; SST bytes {:.0f} MiB -> {:.0f} MiB at once\n", drop_s,
             before / 1048576.0, DirBytes(dir + "/source") / 1048576.0);
  Check(api_page->SetBucketState(shoal::BucketId(1), BucketState::kReadWrite), "serve");
  t0 = Clock::now();
  ScanOptions scan{.range = kBucket, .max_documents = 1000};
  uint64_t deleted = 0;
  while (true) {
    auto page = api_page->Scan(scan);
    Check(page.status(), "scan");
    for (const Document& d : page->documents) {
      Check(api_page->Delete(d.collection, d.primary_key).status(), "delete");
      ++deleted;
    }
    if (page->next_cursor.empty()) break;
    scan.cursor = page->next_cursor;
  }
  const double per_key_s = Seconds(Clock::now() - t0);
  fmt::print(
      "drop per key through the API: {} deletes, {:.2f} s ({:.0f}x slower), and the space "
      "comes back only after compaction\n",
      deleted, per_key_s, per_key_s / std::max(drop_s, 1e-6));
  for (auto* s : {source.get(), dest.get(), api.get(), api_page.get(), empty.get()}) {
    Check(s->Close(), "close");
  }
  std::filesystem::remove_all(dir);
  return 0;
}
