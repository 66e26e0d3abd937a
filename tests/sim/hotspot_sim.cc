#include "tests/sim/hotspot_sim.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include "src/client/client.h"
#include "src/common/random.h"
#include "src/hotspot/field_root.h"
#include "src/hotspot/fold.h"
#include "src/hotspot/sharded_field.h"
#include "src/server/embedded_cluster.h"
#include "src/transport/sim_runtime.h"
#include "tests/sim/hotspot_sim_world.h"
#include "tests/sim/sim_chaos.h"

namespace shoal::sim {
namespace {

using namespace hotspot_internal;  // NOLINT(google-build-using-namespace): the run's state

// An Apply outcome as the checks count it.
enum class Landed : uint8_t { kYes, kMaybe, kNo };

Landed LandedOf(const Status& status) {
  if (status.ok()) return Landed::kYes;
  switch (status.code()) {
    case StatusCode::kUnknown:           // the client's "outcome unknown"
    case StatusCode::kDeadlineExceeded:  // a lost request or reply
    case StatusCode::kCancelled:         // the updater's process crashed mid-update
      return Landed::kMaybe;
    default:
      return Landed::kNo;
  }
}

StatusOr<FieldSpec> MakeSpec(FieldKind kind) {
  std::string declaration;
  switch (kind) {
    case FieldKind::kStatic:
      declaration = fmt::format(R"({{"{}": {{"fold": "sum", "shards": 4}}}})", kField);
      break;
    case FieldKind::kDynamic:
      declaration = fmt::format(R"({{"{}": {{"fold": "sum"}}}})", kField);
      break;
    case FieldKind::kAuto:
      declaration = fmt::format(
          R"({{"{}": {{"fold": "sum", "shards": "auto", "min_shards": 1, "max_shards": 8}}}})",
          kField);
      break;
    case FieldKind::kEntityGroup:
      return InvalidArgumentError("entity groups have no sharded value");
  }
  auto schema = hotspot::CollectionSchema::Parse(declaration, hotspot::FoldRegistry::Global());
  if (!schema.ok()) return schema.status();
  const FieldSpec* spec = schema->Find(kField);
  if (spec == nullptr) return InternalError("the parsed schema lacks the field");
  if (spec->kind != kind) {
    return InternalError(fmt::format("declared {} parsed as {}", hotspot::ToString(kind),
                                     hotspot::ToString(spec->kind)));
  }
  return *spec;
}

void UpdaterLoop(transport::SimRuntime& sim, World& world, size_t slot, uint64_t generation) {
  client::Client client(sim, SimClientOptions());
  ShardedFields fields(client, world.cells, Seed(world, 11 + slot * 31 + generation));
  Random random(Seed(world, 500 + slot * 131 + generation));
  // A replacement after a crash starts a little later, as a restarted process would.
  if (generation > 0 && !sim.Sleep(50 * kMs).ok()) return;
  while (world.updater_generation[slot] == generation && world.remaining[slot] > 0) {
    const std::string& key = world.keys[random.Uniform(world.keys.size())];
    KeyStats& stats = world.stats[key];
    --world.remaining[slot];
    ++stats.started;
    ++world.in_flight;
    auto outcome =
        fields.Apply(world.spec, key, hotspot::Value(1),
                     hotspot::ApplyOptions{.retry_on_conflict = true, .max_attempts = 256});
    --world.in_flight;
    switch (LandedOf(outcome.status())) {
      case Landed::kYes:
        ++stats.acked;
        world.result.conflicts += outcome->conflicts;
        break;
      case Landed::kMaybe:
        ++stats.unknown;
        break;
      case Landed::kNo:
        ++stats.failed;
        break;
    }
    if (!sim.Sleep(static_cast<Micros>(random.Uniform(12 * kMs))).ok()) return;
  }
}

// Reads the field and checks the bounds of the class comment of ShardedFields::Read.
void ReaderLoop(transport::SimRuntime& sim, World& world, uint32_t id) {
  ++world.background_running;
  client::Client client(sim, SimClientOptions());
  ShardedFields fields(client, world.cells, Seed(world, 7000 + id));
  Random random(Seed(world, 9000 + id));
  while (!world.stop_background) {
    const std::string& key = world.keys[random.Uniform(world.keys.size())];
    const ReadMode mode = random.OneIn(4) ? ReadMode::kSnapshot : ReadMode::kLatest;
    const uint64_t low = world.stats[key].acked;
    auto value = fields.Read(world.spec, key, mode);
    const KeyStats& after = world.stats[key];
    const uint64_t high = after.started - after.failed;
    if (value.status().code() == StatusCode::kCancelled) break;
    if (!value.ok()) {
      if (mode == ReadMode::kSnapshot && value.status().code() == StatusCode::kAborted) {
        ++world.result.snapshot_aborted;
      } else {
        ++world.result.read_failures;
      }
    } else {
      auto count = CountOf(*value);
      if (!count.ok()) {
        world.Fail(fmt::format("read of {}: {}", key, count.status().ToString()));
      } else if (*count < low || *count > high) {
        world.Fail(
            fmt::format("{} read of {} returned {} outside [{}, {}] (acked {}, unknown {}, "
                        "failed {}, started {})",
                        mode == ReadMode::kSnapshot ? "snapshot" : "latest", key, *count, low, high,
                        after.acked, after.unknown, after.failed, after.started));
      }
      ++(mode == ReadMode::kSnapshot ? world.result.snapshot_reads : world.result.reads);
    }
    if (!sim.Sleep(static_cast<Micros>(random.Uniform(10 * kMs))).ok()) break;
  }
  --world.background_running;
}

// Checks every root it can read: R1-R4, and a seq that never goes back.
void CheckerLoop(transport::SimRuntime& sim, World& world) {
  ++world.background_running;
  client::Client client(sim, SimClientOptions());
  while (!world.stop_background) {
    for (const std::string& key : world.keys) {
      auto doc = client.Get(world.cells, hotspot::RootKey(key, kField));
      if (!doc.ok()) continue;
      auto root = hotspot::FieldRoot::Decode(doc->body);
      if (!root.ok()) {
        world.Fail(fmt::format("root of {} does not decode: {}", key, root.status().ToString()));
        continue;
      }
      if (Status s = root->CheckInvariants(); !s.ok()) {
        world.Fail(
            fmt::format("root of {} breaks an invariant: {}: {}", key, s.ToString(), doc->body));
      }
      uint64_t& last = world.last_seq[key];
      if (root->seq() < last) {
        world.Fail(fmt::format("root seq of {} went back from {} to {}", key, last, root->seq()));
      }
      last = std::max(last, root->seq());
      ++world.result.root_checks;
    }
    if (!sim.Sleep(20 * kMs).ok()) break;
  }
  --world.background_running;
}

void ResizerLoop(transport::SimRuntime& sim, World& world, uint64_t generation) {
  ++world.background_running;
  client::Client client(sim, SimClientOptions());
  ShardedFields fields(client, world.cells, Seed(world, 20000 + generation));
  Random random(Seed(world, 21000 + generation));
  while (!world.stop_background && world.resizer_generation == generation) {
    if (!sim.Sleep(10 * kMs + static_cast<Micros>(random.Uniform(60 * kMs))).ok()) break;
    const std::string& key = world.keys[random.Uniform(world.keys.size())];
    const auto cells = static_cast<uint32_t>(random.Range(1, 8));
    const Status status = fields.Resize(world.spec, key, cells);
    if (status.code() == StatusCode::kCancelled) break;
    ++(status.ok() ? world.result.resizes : world.result.resize_failures);
  }
  --world.background_running;
}

void CompactorLoop(transport::SimRuntime& sim, World& world, size_t slot, uint64_t generation) {
  ++world.background_running;
  client::Client client(sim, SimClientOptions());
  ShardedFields fields(client, world.cells, Seed(world, 30000 + slot * 97 + generation));
  Random random(Seed(world, 31000 + slot * 97 + generation));
  while (!world.stop_background && world.compactor_generation[slot] == generation) {
    if (!sim.Sleep(20 * kMs + static_cast<Micros>(random.Uniform(80 * kMs))).ok()) break;
    const std::string& key = world.keys[random.Uniform(world.keys.size())];
    const Status status = fields.Compact(world.spec, key);
    if (status.code() == StatusCode::kCancelled) break;
    if (status.ok()) ++world.result.compactions;
  }
  --world.background_running;
}

void SpawnUpdater(transport::SimRuntime& sim, World& world, size_t slot) {
  const uint64_t generation = world.updater_generation[slot];
  world.updater_ids[slot] = world.next_role_id;
  sim.Spawn(Address::Client(world.next_role_id++), "updater",
            [&sim, &world, slot, generation] { UpdaterLoop(sim, world, slot, generation); });
}

void SpawnResizer(transport::SimRuntime& sim, World& world) {
  const uint64_t generation = world.resizer_generation;
  world.resizer_id = world.next_role_id;
  sim.Spawn(Address::Client(world.next_role_id++), "resizer",
            [&sim, &world, generation] { ResizerLoop(sim, world, generation); });
}

void SpawnCompactor(transport::SimRuntime& sim, World& world, size_t slot) {
  const uint64_t generation = world.compactor_generation[slot];
  world.compactor_ids[slot] = world.next_role_id;
  sim.Spawn(Address::Client(world.next_role_id++), "compactor",
            [&sim, &world, slot, generation] { CompactorLoop(sim, world, slot, generation); });
}

// Crashes the client process `role_id` (whatever it is doing); the caller starts a replacement.
void CrashClient(transport::SimRuntime& sim, World& world, uint32_t role_id) {
  ++world.result.client_crashes;
  sim.Stop(Address::Client(role_id));
}

// The simulation's own chaos events: crashes of the client processes doing the work.
constexpr ChaosEvent kCrashMaintainer = ChaosEvent::kOwn1;  // the resizer or a compactor
constexpr ChaosEvent kCrashUpdater = ChaosEvent::kOwn2;

// Crashes a client process mid-operation; a new process takes over its work.
void CrashRole(transport::SimRuntime& sim, World& world, ChaosEvent event, Random& random) {
  if (!world.options.crashes) return;
  if (event == kCrashMaintainer) {
    const bool resizer = world.kind != FieldKind::kDynamic && random.OneIn(2);
    if (!resizer && world.compactor_ids.empty()) return;
    if (resizer) {
      CrashClient(sim, world, world.resizer_id);
      ++world.resizer_generation;
      SpawnResizer(sim, world);
    } else {
      const size_t slot = random.Uniform(world.compactor_ids.size());
      CrashClient(sim, world, world.compactor_ids[slot]);
      ++world.compactor_generation[slot];
      SpawnCompactor(sim, world, slot);
    }
    return;
  }
  const size_t slot = random.Uniform(world.remaining.size());
  if (world.remaining[slot] == 0) return;
  CrashClient(sim, world, world.updater_ids[slot]);
  ++world.updater_generation[slot];
  SpawnUpdater(sim, world, slot);
}

// Faster than the cluster simulation's, without merges, a drawn coordinator crash skipped one time
// in two, and with crashes of the updater, resizer and compactor processes.
ChaosOptions HotspotChaos(transport::SimRuntime& sim, World& world) {
  using enum ChaosEvent;
  return ChaosOptions{
      .min_pause = 20 * kMs,
      .pause_jitter = 100 * kMs,
      .wheel = {kMoveBucket, kMoveBucket, kMoveBucket, kMoveBucket, kMoveBucket, kSplitBucket,
                kAddNode, kRemoveNode, kCrashNode, kCrashCoordinator, kCrashMaintainer,
                kCrashMaintainer, kCrashUpdater, kQuiet, kQuiet, kQuiet},
      .crashes = world.options.crashes,
      .coordinator_crash_skip_one_in = 2,
      .own = [&sim, &world](ChaosEvent event, Random& random) {
        CrashRole(sim, world, event, random);
      }};
}

void Harness(transport::SimRuntime& sim, World& world, server::EmbeddedCluster& cluster) {
  if (!StartSimCluster(cluster, world.chaos).ok()) return;
  client::Client admin(sim);
  auto cells = Settled(sim, [&] { return admin.OpenCollection("hot.cells"); });
  if (!cells.ok()) {
    world.Fail(
        fmt::format("could not create the hidden collection: {}", cells.status().ToString()));
    world.chaos.done = true;
    return;
  }
  world.cells = *cells;

  for (size_t slot = 0; slot < static_cast<size_t>(world.options.updaters); ++slot) {
    SpawnUpdater(sim, world, slot);
  }
  for (int r = 0; r < world.options.readers; ++r) {
    const uint32_t id = kReaderBase + static_cast<uint32_t>(r);
    sim.Spawn(Address::Client(id), "reader", [&sim, &world, id] { ReaderLoop(sim, world, id); });
  }
  sim.Spawn(Address::Client(kCheckerId), "checker", [&] { CheckerLoop(sim, world); });
  if (world.kind != FieldKind::kDynamic) SpawnResizer(sim, world);
  for (size_t slot = 0; slot < static_cast<size_t>(world.options.compactors); ++slot) {
    SpawnCompactor(sim, world, slot);
  }
  sim.Spawn(Address::Client(900), "supervisor",
            [&] { SupervisorLoop(sim, cluster, world.chaos, 200 * kMs); });
  sim.Spawn(Address::Client(902), "chaos", [&, options = HotspotChaos(sim, world)] {
    ChaosLoop(sim, cluster, world.chaos, world.chaos_random, options);
  });

  auto updates_done = [&] {
    if (world.in_flight > 0) return false;
    for (int left : world.remaining) {
      if (left > 0) return false;
    }
    return true;
  };
  while (!updates_done() && sim.Now() < kUpdateTimeLimit) (void)sim.Sleep(50 * kMs);
  if (!updates_done()) world.Fail("the updates did not finish within the time limit");

  // Heal: no more chaos, no more loss; the supervisor restarts whatever is down.
  world.chaos.stop_chaos = true;
  sim.SetLoss(0);
  for (int i = 0; i < 600 && !ClusterQuiet(sim, cluster); ++i) (void)sim.Sleep(100 * kMs);
  world.stop_background = true;
  for (int i = 0; i < 600 && world.background_running > 0; ++i) (void)sim.Sleep(100 * kMs);
  if (world.background_running > 0) world.Fail("readers, resizer or compactor did not stop");

  if (world.failure.empty()) FinalChecks(sim, world);
  for (const auto& [key, stats] : world.stats) {
    world.result.acked += stats.acked;
    world.result.unknown += stats.unknown;
    world.result.failed += stats.failed;
  }
  if (auto coordinator = cluster.coordinator(); coordinator != nullptr) {
    world.result.moves = coordinator->progress().committed;
  }
  if (Status s = cluster.StopAll(); !s.ok()) world.Fail(fmt::format("stop: {}", s.ToString()));
  world.chaos.done = true;
}

FieldKind KindOf(const HotspotSimOptions& options) {
  if (options.kind.has_value()) return *options.kind;
  switch (options.seed % 3) {
    case 0:
      return FieldKind::kStatic;
    case 1:
      return FieldKind::kDynamic;
    default:
      return FieldKind::kAuto;
  }
}

}  // namespace

HotspotSimResult RunHotspotSim(const HotspotSimOptions& options) {
  const std::string dir = fmt::format("{}/hot-seed-{}", options.dir, options.seed);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  const FieldKind kind = KindOf(options);
  HotspotSimResult result;
  std::string failure;
  {
    transport::SimRuntime sim(transport::SimOptions{.seed = options.seed,
                                                    .min_delay = 100,
                                                    .max_delay = 3000,
                                                    .loss = options.loss,
                                                    .yield_on_reply = true});
    World world(sim, options, kind);
    auto spec = MakeSpec(kind);
    if (!spec.ok()) {
      result.ok = false;
      result.failure = fmt::format("seed {}: {}", options.seed, spec.status().ToString());
      return result;
    }
    world.spec = *spec;
    world.result.kind = kind;
    Random setup(options.seed * 31 + 5);
    const uint64_t keys = setup.Range(1, 3);
    for (uint64_t k = 0; k < keys; ++k) {
      world.keys.push_back(fmt::format("post{}", k));
      world.stats[world.keys.back()] = KeyStats{};
    }
    world.remaining.assign(static_cast<size_t>(options.updaters), options.updates_per_updater);
    world.updater_generation.assign(static_cast<size_t>(options.updaters), 0);
    world.updater_ids.assign(static_cast<size_t>(options.updaters), 0);
    world.compactor_generation.assign(static_cast<size_t>(options.compactors), 0);
    world.compactor_ids.assign(static_cast<size_t>(options.compactors), 0);

    server::EmbeddedCluster cluster(sim, SimClusterOptions(dir));

    sim.Spawn(Address::Client(kHarnessId), "harness", [&] { Harness(sim, world, cluster); });
    sim.RunUntil(kUpdateTimeLimit + 300 * kSecond);
    world.stop_background = true;
    world.result.events = EndSimRun(sim, cluster, world.chaos);
    world.result.crashes += world.chaos.crashes;
    result = world.result;
    failure = world.failure;
  }
  std::filesystem::remove_all(dir, ec);
  result.ok = failure.empty();
  if (!result.ok) {
    result.failure =
        fmt::format("seed {} ({} field): {}", options.seed, hotspot::ToString(kind), failure);
  }
  return result;
}

}  // namespace shoal::sim
