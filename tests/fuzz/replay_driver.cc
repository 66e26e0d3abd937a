#include "tests/fuzz/replay_driver.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "src/common/random.h"

namespace shoal::fuzz {
namespace {

void Run(FuzzTarget target, const std::string& input) {
  target(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

std::string Mutate(Random& rng, const std::string& input, const std::string& other) {
  std::string out = input;
  switch (rng.Uniform(4)) {
    case 0:  // flip bytes
      for (uint64_t n = rng.Range(1, 4); n > 0 && !out.empty(); --n) {
        out[rng.Uniform(out.size())] = static_cast<char>(rng.Uniform(256));
      }
      break;
    case 1:  // truncate
      out.resize(out.empty() ? 0 : rng.Uniform(out.size()));
      break;
    case 2:  // splice with another input
      out = out.substr(0, out.empty() ? 0 : rng.Uniform(out.size() + 1)) +
            other.substr(other.empty() ? 0 : rng.Uniform(other.size()));
      break;
    default:  // insert a byte
      out.insert(out.empty() ? 0 : rng.Uniform(out.size() + 1), 1,
                 static_cast<char>(rng.Uniform(256)));
      break;
  }
  return out;
}

}  // namespace

Status ReplayCorpus(const char* name, FuzzTarget target, const std::filesystem::path& dir,
                    const ReplayOptions& options) {
  // In the order of their paths: a target with state (wire) sees the same sequence every run.
  std::vector<std::filesystem::path> paths;
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (entry.is_regular_file()) paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> inputs;
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    inputs.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (inputs.empty()) return NotFoundError(fmt::format("no corpus in {}", dir.string()));
  const auto start = std::chrono::steady_clock::now();
  const auto out_of_time = [&] {
    return options.max_seconds > 0 &&
           std::chrono::steady_clock::now() - start > std::chrono::seconds(options.max_seconds);
  };
  Random rng(20240601);
  size_t runs = 0;
  for (const std::string& input : inputs) {
    Run(target, input);
    ++runs;
    for (int i = 0; i < options.mutations_per_input && !out_of_time(); ++i) {
      Run(target, Mutate(rng, input, inputs[rng.Uniform(inputs.size())]));
      ++runs;
    }
  }
  std::printf("%s: %zu corpus inputs, %zu runs%s\n", name, inputs.size(), runs,
              out_of_time() ? " (time bound reached)" : "");
  return OkStatus();
}

}  // namespace shoal::fuzz
