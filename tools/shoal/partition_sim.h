#pragma once

// `shoal partition-sim`: places a key set with one scheme, applies membership steps in order and
// reports balance, movement and lookup cost per step (README, "partition-sim").

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "src/common/status.h"
#include "src/partition/key_pattern.h"
#include "src/partition/metrics.h"
#include "src/partition/scheme.h"

namespace shoal::tools {

enum class StepKind { kInitial, kAdd, kRemove };

struct SimStep {
  StepKind kind = StepKind::kInitial;
  uint32_t count = 0;
};

// Parses "add=K" or "remove=K" (K >= 1).
[[nodiscard]] StatusOr<SimStep> ParseSimStep(std::string_view text);

enum class NodeNames { kRandom, kSequential };

struct SimConfig {
  partition::SchemeOptions scheme;
  partition::KeySetOptions keys;
  uint32_t nodes = 10;
  std::vector<SimStep> steps;
  // Seeds first_seed .. first_seed + seeds - 1 each choose node names (random ids) and the
  // scheme's hash seed; a step reports the worst value of each metric over them.
  uint64_t first_seed = 0;
  uint32_t seeds = 1;
  NodeNames node_names = NodeNames::kRandom;
};

struct SimStepResult {
  std::string label;
  size_t nodes = 0;
  double imbalance = 0;        // worst σ/μ of keys per node
  double imbalance_bytes = 0;  // worst σ/μ of bytes per node
  double max_over_mean = 0;    // worst max/mean of keys per node
  double moved_fraction = 0;   // worst fraction of keys moved by this step
  double moved_fraction_median = 0;
  double optimal_fraction = 0;
  uint64_t moved_bytes = 0;  // of the worst seed
  double lookup_ns = 0;      // median over seeds of the mean time of one OwnerOf
  size_t partitions = 0;
  double fullness_mean = 0;
  double fullness_stddev = 0;
  uint64_t worst_seed = 0;  // the seed with the worst imbalance; per_node is from it
  std::vector<partition::NodeLoad> per_node;
};

struct SimResult {
  std::string scheme;
  uint64_t keys = 0;
  uint64_t total_bytes = 0;
  double hash_ns = 0;  // mean cost of computing one key's point, for comparison with lookup_ns
  std::vector<uint64_t> seeds;
  std::vector<SimStepResult> steps;
};

[[nodiscard]] StatusOr<SimResult> RunPartitionSim(const SimConfig& config);

[[nodiscard]] std::string SimResultJson(const SimResult& result);
[[nodiscard]] std::string SimResultTable(const SimResult& result);

// Registers the subcommand on `app`; the callback runs the simulation and prints.
void AddPartitionSimCommand(CLI::App& app);

}  // namespace shoal::tools
