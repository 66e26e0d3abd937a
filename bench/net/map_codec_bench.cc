// What the two wire forms of a ShardMap cost (docs/results/network.md, "The map as messages"):
// the bytes of src/cluster/shard_map_codec.h, which every WRONG_SHARD reply (Response.route),
// map watch answer and GetMap answer carries, against the messages of proto/shoal.proto
// (wire::ShardMap), which a client in another language asks for. Each is measured from a
// cluster::ShardMap to the serialized message and back, for a map of 32 and of 4096 buckets on
// 8 nodes with one bucket in 16 moving. The `bytes` counter is the serialized size.
//
// Run: build/bench/net/net_map_codec_bench --benchmark_repetitions=5
//      --benchmark_report_aggregates_only=true   (or `make bench`)

#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "proto/shoal.pb.h"
#include "src/cluster/shard_map_codec.h"
#include "src/cluster/shard_map_edit.h"
#include "src/net/wire_codec.h"

namespace shoal::net {
namespace {

constexpr uint32_t kNodes = 8;

// An initial map of `buckets` on kNodes nodes with a transition, at stages in turn, on every
// 16th bucket.
const cluster::ShardMap& MapOf(uint32_t buckets) {
  static auto* maps = new std::map<uint32_t, std::unique_ptr<cluster::ShardMap>>();
  auto& map = (*maps)[buckets];
  if (map != nullptr) return *map;
  std::vector<NodeId> nodes;
  for (uint32_t id = 1; id <= kNodes; ++id) nodes.emplace_back(id);
  auto initial = cluster::ShardMap::Initial(
      {.nodes = nodes, .bucket_count = buckets, .replication_factor = 1});
  cluster::ShardMapEdit edit(initial->epoch());
  for (uint32_t b = 0; b < buckets; b += 16) {
    const BucketId bucket(b);
    const MoveId move(b + 1);
    const NodeId to((initial->Find(bucket)->replicas.front().value() % kNodes) + 1);
    edit.BeginTransition(bucket, move, {to}, cluster::TransitionMode::kCopyThenSwitch);
    if ((b / 16) % 2 == 1) edit.AdvanceStage(bucket, move, cluster::TransitionStage::kCatchUp);
  }
  map = std::make_unique<cluster::ShardMap>(*cluster::Apply(*initial, edit));
  return *map;
}

void BM_EncodeBytes(benchmark::State& state) {
  const cluster::ShardMap& map = MapOf(static_cast<uint32_t>(state.range(0)));
  size_t bytes = 0;
  for (auto _ : state) {
    std::string out = cluster::EncodeShardMap(map);
    bytes = out.size();
    benchmark::DoNotOptimize(out);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}

void BM_DecodeBytes(benchmark::State& state) {
  const std::string bytes = cluster::EncodeShardMap(MapOf(static_cast<uint32_t>(state.range(0))));
  for (auto _ : state) {
    auto map = DecodeMap(bytes);
    benchmark::DoNotOptimize(map);
  }
  state.counters["bytes"] = static_cast<double>(bytes.size());
}

void BM_EncodeMessages(benchmark::State& state) {
  const cluster::ShardMap& map = MapOf(static_cast<uint32_t>(state.range(0)));
  size_t bytes = 0;
  for (auto _ : state) {
    wire::ShardMap message;
    ToWire(map, &message);
    std::string out = message.SerializeAsString();
    bytes = out.size();
    benchmark::DoNotOptimize(out);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}

void BM_DecodeMessages(benchmark::State& state) {
  wire::ShardMap encoded;
  ToWire(MapOf(static_cast<uint32_t>(state.range(0))), &encoded);
  const std::string bytes = encoded.SerializeAsString();
  for (auto _ : state) {
    wire::ShardMap message;
    benchmark::DoNotOptimize(message.ParseFromString(bytes));
    auto map = FromWire(message);
    benchmark::DoNotOptimize(map);
  }
  state.counters["bytes"] = static_cast<double>(bytes.size());
}

BENCHMARK(BM_EncodeBytes)->Arg(32)->Arg(4096)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecodeBytes)->Arg(32)->Arg(4096)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EncodeMessages)->Arg(32)->Arg(4096)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecodeMessages)->Arg(32)->Arg(4096)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace shoal::net

BENCHMARK_MAIN();
