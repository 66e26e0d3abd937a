#include "tools/shoal/demo.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "tools/shoal/partition_sim.h"

namespace shoal::tools {
namespace {

struct DemoOptions {
  uint64_t keys = 200'000;
  uint32_t nodes = 10;
  uint32_t seeds = 3;
  bool json = false;
};

int RunDemo(const DemoOptions& options) {
  nlohmann::json summary = nlohmann::json::array();
  if (!options.json) {
    std::printf(
        "Shoal placement demo: %llu sequential keys on %u nodes, then one node joins and one "
        "leaves.\nEach row is the worst of %u seeds (node names and hash seeds). 'x opt' is keys "
        "moved divided by the\nleast any scheme must move (1/(n+1) on a join, 1/n on a leave).\n\n",
        static_cast<unsigned long long>(options.keys), options.nodes, options.seeds);
    std::printf("%-11s %10s %9s %12s %12s %10s\n", "scheme", "imbalance", "max/mean", "join x opt",
                "leave x opt", "lookup ns");
  }
  for (partition::SchemeKind kind : partition::AllSchemeKinds()) {
    SimConfig config;
    config.scheme.kind = kind;
    config.keys.count = options.keys;
    config.nodes = options.nodes;
    config.seeds = options.seeds;
    // Bounded partitions and buckets sized for about 50 per node at this key count.
    config.scheme.theta_max_bytes =
        options.keys * config.keys.record_bytes / (uint64_t{options.nodes} * 25);
    config.scheme.theta_min_bytes = config.scheme.theta_max_bytes / 2;
    config.steps = {SimStep{.kind = StepKind::kAdd, .count = 1},
                    SimStep{.kind = StepKind::kRemove, .count = 1}};
    auto result = RunPartitionSim(config);
    if (!result.ok()) {
      std::fprintf(stderr, "error: %s: %s\n", std::string(partition::SchemeName(kind)).c_str(),
                   std::string(MessageOf(result.status())).c_str());
      return 1;
    }
    const SimStepResult& initial = result->steps[0];
    const SimStepResult& join = result->steps[1];
    const SimStepResult& leave = result->steps[2];
    const double join_ratio = join.moved_fraction / join.optimal_fraction;
    const double leave_ratio = leave.moved_fraction / leave.optimal_fraction;
    if (options.json) {
      summary.push_back({{"scheme", result->scheme},
                         {"imbalance", initial.imbalance},
                         {"max_over_mean", initial.max_over_mean},
                         {"join_moved_over_optimal", join_ratio},
                         {"leave_moved_over_optimal", leave_ratio},
                         {"lookup_ns", initial.lookup_ns}});
    } else {
      std::printf("%-11s %10.4f %9.4f %12.2f %12.2f %10.1f\n", result->scheme.c_str(),
                  initial.imbalance, initial.max_over_mean, join_ratio, leave_ratio,
                  initial.lookup_ns);
    }
  }
  if (options.json) {
    std::printf("%s\n", summary.dump(2).c_str());
  } else {
    std::printf(
        "\nmodulo re-places most keys on every change; the ring, rendezvous, jump, static and\n"
        "extendible schemes move close to the optimum. Explore with `shoal partition-sim "
        "--help`.\n");
  }
  return 0;
}

}  // namespace

void AddDemoCommand(CLI::App& app) {
  auto options = std::make_shared<DemoOptions>();
  CLI::App* cmd = app.add_subcommand("demo", "Run the demonstration");
  cmd->add_option("--keys", options->keys, "Number of keys")->capture_default_str();
  cmd->add_option("--nodes", options->nodes, "Initial number of nodes")->capture_default_str();
  cmd->add_option("--seeds", options->seeds, "Seeds per scheme (worst reported)")
      ->capture_default_str();
  cmd->add_flag("--json", options->json, "Print one JSON array");
  cmd->callback([options]() {
    const int rc = RunDemo(*options);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace shoal::tools
