#pragma once

// Settings shared by the unit tests that run storage nodes on a SimRuntime (test-only): the
// storage node, client, move-file and coordinator tests.

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "src/storage/store_options.h"

namespace shoal::node::test {

// A directory path under the system temporary directory, unique on the machine (process id and
// a counter). Nothing is created; the test removes it.
inline std::string UniqueTestDir(std::string_view prefix) {
  static std::atomic<int> counter{0};
  return (std::filesystem::temp_directory_path() /
          fmt::format("{}-{}-{}", prefix, getpid(), counter++))
      .string();
}

// The free-space reserve of UseSmallTestStore: a flush of a small memtable needs little.
inline constexpr uint64_t kSmallTestStoreReserve = uint64_t{16} << 20;

// Small caches and write buffers and one background job, so that a test opens several stores
// quickly; a WAL sync is requested at once (interval 0), so no write waits on the simulated clock
// for the periodic syncer.
inline void UseSmallTestStore(storage::StoreOptions& store) {
  store.block_cache_bytes = 1u << 20;
  store.write_buffer_bytes = 1u << 20;
  store.background_jobs = 1;
  store.sync_interval = std::chrono::milliseconds(0);
  store.min_free_disk_bytes = kSmallTestStoreReserve;
}

}  // namespace shoal::node::test
