#pragma once

// The state of one run of the sharded-field simulation (hotspot_sim.h) and the helpers its source
// files share: hotspot_sim.cc runs the workload, hotspot_sim_checks.cc checks the end state. Not
// part of the simulation's interface. A World is used by one simulated task at a time only.

#include <fmt/format.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "src/common/random.h"
#include "src/hotspot/fold.h"
#include "src/hotspot/sharded_field.h"
#include "src/transport/sim_runtime.h"
#include "tests/sim/hotspot_sim.h"
#include "tests/sim/sim_chaos.h"

namespace shoal::sim::hotspot_internal {

using hotspot::FieldKind;
using hotspot::FieldSpec;
using hotspot::ReadMode;
using hotspot::ShardedFields;
using transport::Address;
using transport::Micros;

constexpr Micros kMs = 1000;
constexpr Micros kSecond = 1'000'000;
constexpr char kField[] = "likes";
// Simulated time after which a run that has not finished its updates is a failure.
constexpr Micros kUpdateTimeLimit = 120 * kSecond;
// Client process ids: updater slots, readers, the root checker; crashable roles take fresh ids.
constexpr uint32_t kReaderBase = 100;
constexpr uint32_t kCheckerId = 199;
constexpr uint32_t kFirstRoleId = 200;
constexpr uint32_t kHarnessId = 1000;

// Per hot key: what the updaters did so far.
struct KeyStats {
  uint64_t started = 0;
  uint64_t acked = 0;
  uint64_t unknown = 0;
  uint64_t failed = 0;
};

// Shared state of one run. Only one simulated task runs at a time, so plain fields suffice.
struct World {
  World(transport::SimRuntime& s, const HotspotSimOptions& o, FieldKind k)
      : sim(s),
        options(o),
        kind(k),
        chaos_random(o.seed * 6151 + 17),
        chaos([this](std::string what) { Fail(std::move(what)); }) {}

  transport::SimRuntime& sim;
  const HotspotSimOptions options;
  const FieldKind kind;
  FieldSpec spec;
  Random chaos_random;
  ChaosState chaos;
  CollectionId cells;
  std::vector<std::string> keys;
  std::map<std::string, KeyStats> stats;
  std::map<std::string, uint64_t> last_seq;  // highest root seq the checker saw, per key
  std::vector<int> remaining;                // updates left per updater slot
  std::vector<uint64_t> updater_generation;  // a crash bumps it; older tasks stop
  std::vector<uint32_t> updater_ids;         // the client process of each slot
  uint64_t in_flight = 0;
  uint64_t resizer_generation = 0;
  uint32_t resizer_id = 0;
  std::vector<uint64_t> compactor_generation;  // per compactor slot, like the updaters'
  std::vector<uint32_t> compactor_ids;
  uint32_t next_role_id = kFirstRoleId;
  int background_running = 0;  // readers, resizer, compactor, checker
  bool stop_background = false;
  std::string failure;
  HotspotSimResult result;

  void Fail(std::string what) {
    if (failure.empty()) failure = fmt::format("t={} us: {}", sim.Now(), std::move(what));
  }
};

inline uint64_t Seed(const World& world, uint64_t salt) {
  return world.options.seed * 1000003 + salt;
}

// The value of a +1 sum field as a count; kInternal if it is not a non-negative integer.
inline StatusOr<uint64_t> CountOf(const hotspot::Value& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    return static_cast<uint64_t>(value.get<int64_t>());
  }
  return InternalError(fmt::format("the value {} is not a count", value.dump()));
}

// Retries `op` while the cluster still settles (a restarted node, a stale map).
template <typename Op>
auto Settled(transport::SimRuntime& sim, Op op) -> decltype(op()) {
  auto result = op();
  for (int attempt = 0; attempt < 20 && !result.ok(); ++attempt) {
    if (!sim.Sleep(100 * kMs).ok()) break;
    result = op();
  }
  return result;
}

// The end-of-run checks: every key's final value, root and cells, and no stray cell document.
void FinalChecks(transport::SimRuntime& sim, World& world);

}  // namespace shoal::sim::hotspot_internal
