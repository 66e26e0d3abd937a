#pragma once

// The seed range of a simulation test shard, from the environment:
// SHOAL_SIM_FIRST_SEED (default 1), and SHOAL_SIM_SEEDS, else SHOAL_SIM_DEFAULT_SEEDS (set per
// ctest entry), else the test's own default count.

#include <cstdint>
#include <cstdlib>

namespace shoal::sim {

// The seeds [first, first + count). A plain value; thread-safe as any.
struct SeedRange {
  uint64_t first = 1;
  uint64_t count = 0;
};

[[nodiscard]] inline uint64_t SimEnvOr(const char* name, uint64_t fallback) {
  const char* value = std::getenv(name);
  return value == nullptr ? fallback : std::strtoull(value, nullptr, 10);
}

[[nodiscard]] inline SeedRange SimSeedRange(uint64_t default_seeds) {
  return SeedRange{
      .first = SimEnvOr("SHOAL_SIM_FIRST_SEED", 1),
      .count = SimEnvOr("SHOAL_SIM_SEEDS", SimEnvOr("SHOAL_SIM_DEFAULT_SEEDS", default_seeds))};
}

}  // namespace shoal::sim
