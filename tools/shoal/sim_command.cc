#include "tools/shoal/sim_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/sim/cluster_sim.h"

namespace shoal::tools {
namespace {

struct SimCommandOptions {
  uint64_t seeds = 20;
  uint64_t first_seed = 1;
  int64_t duration_ms = 6000;
  bool no_crash = false;
  bool batch_writes = false;
  bool json = false;
  bool verbose = false;
  std::string dir;
};

int RunSimCommand(const SimCommandOptions& options) {
  const std::string dir =
      options.dir.empty() ? fmt::format("/tmp/shoal-sim-{}", ::getpid()) : options.dir;
  uint64_t operations = 0, moves = 0, crashes = 0;
  std::vector<uint64_t> failed;
  for (uint64_t seed = options.first_seed; seed < options.first_seed + options.seeds; ++seed) {
    sim::ClusterSimOptions run{.seed = seed, .dir = dir};
    run.duration_us = options.duration_ms * 1000;
    run.crashes = !options.no_crash;
    run.batch_writes = options.batch_writes;
    const sim::ClusterSimResult result = sim::RunClusterSim(run);
    operations += result.operations;
    moves += result.moves;
    crashes += result.crashes;
    if (!result.ok) {
      failed.push_back(seed);
      std::fprintf(stderr, "FAILED %s\n", result.failure.c_str());
    } else if (options.verbose && !options.json) {
      std::fprintf(stderr, "seed %llu: %llu operations, %llu moves, %llu crashes\n",
                   static_cast<unsigned long long>(seed),
                   static_cast<unsigned long long>(result.operations),
                   static_cast<unsigned long long>(result.moves),
                   static_cast<unsigned long long>(result.crashes));
    }
  }
  if (options.json) {
    nlohmann::json out{{"seeds", options.seeds}, {"failures", failed.size()},
                       {"failed_seeds", failed}, {"operations", operations},
                       {"moves", moves},         {"crashes", crashes}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf(
        "%llu seeds from %llu: %zu failures, %llu operations, %llu committed moves, "
        "%llu crashes\n",
        static_cast<unsigned long long>(options.seeds),
        static_cast<unsigned long long>(options.first_seed), failed.size(),
        static_cast<unsigned long long>(operations), static_cast<unsigned long long>(moves),
        static_cast<unsigned long long>(crashes));
    for (uint64_t seed : failed) {
      std::printf("replay: shoal sim --first-seed %llu --seeds 1%s\n",
                  static_cast<unsigned long long>(seed),
                  options.batch_writes ? " --batch-writes" : "");
    }
  }
  return failed.empty() ? 0 : 1;
}

}  // namespace

void AddSimCommand(CLI::App& app) {
  auto options = std::make_shared<SimCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sim", "Run the deterministic cluster simulation (chaos, crashes, linearizability checks)");
  cmd->add_option("--seeds", options->seeds, "Number of seeds to run")->check(CLI::PositiveNumber);
  cmd->add_option("--first-seed", options->first_seed, "First seed");
  cmd->add_option("--duration-ms", options->duration_ms,
                  "Simulated milliseconds of chaos and load per seed")
      ->check(CLI::Range(int64_t{100}, int64_t{3'600'000}));
  cmd->add_flag("--no-crash", options->no_crash, "No process crashes (moves and loss only)");
  cmd->add_flag("--batch-writes", options->batch_writes,
                "A third of the operations are batches of 2-5 writes (Client::Batch)");
  cmd->add_flag("--json", options->json,
                "One JSON object: seeds, failures, failed_seeds, operations, moves, crashes");
  cmd->add_flag("--verbose", options->verbose, "A line per seed");
  cmd->add_option("--dir", options->dir, "Scratch directory (default /tmp/shoal-sim-PID)");
  cmd->callback([options] { std::exit(RunSimCommand(*options)); });
}

}  // namespace shoal::tools
