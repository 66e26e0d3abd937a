// Lookup cost per key of every placement scheme at 10, 100 and 1000 nodes, as a ratio to the cost
// of hashing the key alone, both measured in the same run (docs/results/partitioning.md, "Lookup
// cost per key"). Each case computes the point of an 8-byte key and asks the scheme for its owner;
// the baseline only computes the point. Keys are 1M random 8-byte keys visited in order, so table
// lookups pay realistic cache misses. Ring uses 200 vnodes; range and extendible are loaded with
// the keys (100-byte records) and sized for about 50 partitions per node.
//
// Run: `make bench` or build/bench/partition/partition_lookup_bench [--benchmark_repetitions=N].
// After the usual Google Benchmark output it prints a table of median ns per key and the ratio
// to the hash-only baseline (CPU time per iteration, which a busy machine disturbs less than wall
// time).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/common/point.h"
#include "src/common/random.h"
#include "src/partition/extendible_scheme.h"
#include "src/partition/key_pattern.h"
#include "src/partition/ring_scheme.h"
#include "src/partition/scheme.h"
#include "src/partition/static_scheme.h"

namespace shoal::partition {
namespace {

constexpr uint64_t kKeys = 1 << 20;
constexpr uint32_t kRecordBytes = 100;
constexpr CollectionId kCollection(1);

const KeySet& Keys() {
  static const KeySet* keys = [] {
    auto set = KeySet::Generate({.pattern = KeyPattern::kUniform,
                                 .count = kKeys,
                                 .record_bytes = kRecordBytes,
                                 .seed = 7,
                                 .collection = kCollection});
    return new KeySet(std::move(set).value());
  }();
  return *keys;
}

void BM_HashOnly(benchmark::State& state) {
  const KeySet& keys = Keys();
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(PointOf(kCollection, keys.key(i).raw));
    if (++i == keys.size()) i = 0;
  }
}

std::unique_ptr<Scheme> BuildScheme(SchemeKind kind, uint32_t nodes) {
  SchemeOptions options{.kind = kind, .hash_seed = 1, .vnodes = 200};
  const uint64_t total = kKeys * kRecordBytes;
  options.theta_max_bytes = std::max<uint64_t>(total / (uint64_t{nodes} * 25), 1024);
  options.theta_min_bytes = options.theta_max_bytes / 2;
  std::vector<NodeId> ids;
  for (uint32_t n = 0; n < nodes; ++n) ids.push_back(NodeId(n + 1));
  auto scheme = MakeScheme(options, ids);
  if (!scheme.ok()) return nullptr;
  const KeySet& keys = Keys();
  if (kind == SchemeKind::kRange || kind == SchemeKind::kExtendible) {
    for (size_t i = 0; i < keys.size(); ++i) (*scheme)->OnInsert(keys.key(i), kRecordBytes);
    (*scheme)->Rebalance();
  }
  return std::move(scheme).value();
}

void BM_Lookup(benchmark::State& state) {
  const auto kind = static_cast<SchemeKind>(state.range(0));
  const auto nodes = static_cast<uint32_t>(state.range(1));
  const std::unique_ptr<Scheme> scheme = BuildScheme(kind, nodes);
  if (scheme == nullptr) {
    state.SkipWithError("scheme not available");
    return;
  }
  state.SetLabel(std::string(SchemeName(kind)));
  const KeySet& keys = Keys();
  size_t i = 0;
  for (auto _ : state) {
    const std::string_view raw = keys.key(i).raw;
    benchmark::DoNotOptimize(
        scheme->OwnerOf(KeyRef{.point = PointOf(kCollection, raw), .raw = raw}));
    if (++i == keys.size()) i = 0;
  }
}

// The same lookup through the concrete type's inline Owner(point), as a router that knows its
// scheme calls it: no virtual call. Only the schemes with a lookup target.
template <typename ConcreteScheme>
void BM_DirectLookup(benchmark::State& state) {
  const auto kind = static_cast<SchemeKind>(state.range(0));
  const auto nodes = static_cast<uint32_t>(state.range(1));
  const std::unique_ptr<Scheme> scheme = BuildScheme(kind, nodes);
  const auto* concrete = dynamic_cast<const ConcreteScheme*>(scheme.get());
  if (concrete == nullptr) {
    state.SkipWithError("scheme not available");
    return;
  }
  state.SetLabel(std::string(SchemeName(kind)) + " direct");
  const KeySet& keys = Keys();
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(concrete->Owner(PointOf(kCollection, keys.key(i).raw)));
    if (++i == keys.size()) i = 0;
  }
}

// What the ring's radix index replaces: a plain binary search over 100 x 200 sorted tokens.
void BM_RingBinarySearch100x200(benchmark::State& state) {
  std::vector<uint64_t> tokens;
  for (uint32_t node = 1; node <= 100; ++node) {
    for (uint32_t v = 0; v < 200; ++v) tokens.push_back(HashU64((uint64_t{node} << 32) | v, 1));
  }
  std::sort(tokens.begin(), tokens.end());
  const KeySet& keys = Keys();
  size_t i = 0;
  for (auto _ : state) {
    const uint64_t point = PointOf(kCollection, keys.key(i).raw).value();
    auto it = std::lower_bound(tokens.begin(), tokens.end(), point);
    benchmark::DoNotOptimize(it == tokens.end() ? tokens.front() : *it);
    if (++i == keys.size()) i = 0;
  }
}

void LookupArgs(benchmark::internal::Benchmark* b) {
  for (SchemeKind kind : AllSchemeKinds()) {
    for (int64_t nodes : {10, 100, 1000}) b->Args({static_cast<int64_t>(kind), nodes});
  }
}

BENCHMARK(BM_HashOnly);
BENCHMARK(BM_Lookup)->Apply(LookupArgs);
BENCHMARK(BM_RingBinarySearch100x200);
BENCHMARK_TEMPLATE(BM_DirectLookup, RingScheme)
    ->Args({static_cast<int64_t>(SchemeKind::kRing), 100});
BENCHMARK_TEMPLATE(BM_DirectLookup, ExtendibleScheme)
    ->Args({static_cast<int64_t>(SchemeKind::kExtendible), 100});
BENCHMARK_TEMPLATE(BM_DirectLookup, StaticScheme)
    ->Args({static_cast<int64_t>(SchemeKind::kStatic), 100});

// Collects per-iteration times (the median aggregate when repetitions are used) and prints the
// ratio table after the normal console output.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const bool aggregate = run.run_type == Run::RT_Aggregate;
      if (aggregate && run.aggregate_name != "median") continue;
      const std::string name = run.run_name.str();
      if (!aggregate && seen_median_.count(name) > 0) continue;
      if (aggregate) seen_median_[name] = true;
      ns_[name] =
          run.GetAdjustedCPUTime();  // CPU time: steadier than wall time on a shared machine
      labels_[name] = run.report_label;
    }
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    const auto hash = ns_.find("BM_HashOnly");
    if (hash == ns_.end()) return;
    std::printf("\n%-12s %7s %12s %14s\n", "scheme", "nodes", "ns per key", "x hash alone");
    std::printf("%-12s %7s %12.2f %14.2f\n", "hash only", "-", hash->second, 1.0);
    for (SchemeKind kind : AllSchemeKinds()) {
      for (int nodes : {10, 100, 1000}) {
        const std::string name =
            "BM_Lookup/" + std::to_string(static_cast<int>(kind)) + "/" + std::to_string(nodes);
        const auto it = ns_.find(name);
        if (it == ns_.end()) continue;
        std::printf("%-12s %7d %12.2f %14.2f\n", std::string(SchemeName(kind)).c_str(), nodes,
                    it->second, it->second / hash->second);
      }
    }
    for (const char* name : {"RingScheme", "ExtendibleScheme", "StaticScheme"}) {
      for (const auto& [run, ns] : ns_) {
        if (run.find(std::string("BM_DirectLookup<") + name + ">") != 0) continue;
        std::printf("%-12s %7d %12.2f %14.2f   (%s::Owner, no virtual call)\n", "direct", 100, ns,
                    ns / hash->second, name);
      }
    }
    const auto search = ns_.find("BM_RingBinarySearch100x200");
    if (search != ns_.end()) {
      std::printf("%-12s %7d %12.2f %14.2f   (plain lower_bound over the tokens, no index)\n",
                  "ring-bsearch", 100, search->second, search->second / hash->second);
    }
  }

 private:
  std::map<std::string, double> ns_;
  std::map<std::string, std::string> labels_;
  std::map<std::string, bool> seen_median_;
};

}  // namespace
}  // namespace shoal::partition

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  shoal::partition::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
