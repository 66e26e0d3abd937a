#pragma once

// The seed range and scratch directory of a simulation test shard, from the environment:
// SHOAL_SIM_FIRST_SEED (default 1), and SHOAL_SIM_SEEDS, else SHOAL_SIM_DEFAULT_SEEDS (set per
// ctest entry), else the test's own default count.

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

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

// $TMPDIR (default /tmp)/<name>-<pid>: a scratch directory of this test process, removed with
// its contents when this object is destroyed (each run removes its own subdirectory; this
// removes the directory around them). Declare one as a function-local static. Immutable.
class SimScratchDir {
 public:
  explicit SimScratchDir(const std::string& name) {
    const char* tmp = std::getenv("TMPDIR");
    path_ =
        std::string(tmp == nullptr ? "/tmp" : tmp) + "/" + name + "-" + std::to_string(::getpid());
  }
  ~SimScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  SimScratchDir(const SimScratchDir&) = delete;
  SimScratchDir& operator=(const SimScratchDir&) = delete;

  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace shoal::sim
