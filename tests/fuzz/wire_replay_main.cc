// Replays the committed corpus of the wire fuzz target (wire_target.h) and deterministic
// mutations of it (replay_driver.h), so `make test` exercises the wire without libFuzzer.
//
//   wire_fuzz_replay CORPUS_DIR [mutations per input, default 200] [max seconds, default 0]
//   wire_fuzz_replay --write-seeds CORPUS_DIR   (regenerates CORPUS_DIR/seed-*)

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/fuzz/replay_driver.h"
#include "tests/fuzz/wire_target.h"

namespace {

int WriteSeeds(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  for (const auto& seed : shoal::net::fuzz::WireSeeds()) {
    std::ofstream(dir / ("seed-" + seed.name), std::ios::binary) << seed.bytes;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--write-seeds") return WriteSeeds(argv[2]);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR [mutations] [max seconds]\n", argv[0]);
    return 2;
  }
  const shoal::fuzz::ReplayOptions options{
      .mutations_per_input = argc > 2 ? std::atoi(argv[2]) : 200,
      .max_seconds = argc > 3 ? std::atoi(argv[3]) : 0};
  const shoal::Status replayed =
      shoal::fuzz::ReplayCorpus("wire", shoal::net::fuzz::FuzzWire, argv[1], options);
  if (!replayed.ok()) {
    std::fprintf(stderr, "%s\n", replayed.ToString().c_str());
    return 1;
  }
  return 0;
}
