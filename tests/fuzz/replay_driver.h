#pragma once

// Runs a fuzz target without libFuzzer (the normal build's ctest): every input of a corpus
// directory (and of its subdirectories, e.g. regressions/), each followed by deterministic
// mutations of it (byte flips, truncations, splices, insertions) from a fixed seed.
//
// Thread-compatible: one replay at a time.

#include <cstddef>
#include <cstdint>
#include <filesystem>

#include "src/common/status.h"

namespace shoal::fuzz {

using FuzzTarget = int (*)(const uint8_t*, size_t);

struct ReplayOptions {
  int mutations_per_input = 200;
  // No more mutations once this many seconds passed (every corpus input still runs); 0: no
  // bound.
  int max_seconds = 0;
};

// Replays `dir` through `target`, printing "NAME: N corpus inputs, M runs". kNotFound when `dir`
// holds no input.
[[nodiscard]] Status ReplayCorpus(const char* name, FuzzTarget target,
                                  const std::filesystem::path& dir, const ReplayOptions& options);

}  // namespace shoal::fuzz
