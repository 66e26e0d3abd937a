#include "tools/shoal/partition_sim.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "absl/container/flat_hash_set.h"
#include "src/common/random.h"

namespace shoal::tools {
namespace {

using partition::KeySet;
using partition::Scheme;

constexpr uint32_t kMaxNodes = 100'000;
constexpr uint32_t kMaxSeeds = 1'000;

std::vector<NodeId> InitialNodes(const SimConfig& config, Random& rng,
                                 absl::flat_hash_set<uint32_t>& used) {
  std::vector<NodeId> nodes;
  for (uint32_t i = 0; i < config.nodes; ++i) {
    uint32_t id = i + 1;
    if (config.node_names == NodeNames::kRandom) {
      do {
        id = static_cast<uint32_t>(rng.Next64());
      } while (!used.insert(id).second);
    } else {
      used.insert(id);
    }
    nodes.push_back(NodeId(id));
  }
  return nodes;
}

NodeId FreshNode(const SimConfig& config, Random& rng, absl::flat_hash_set<uint32_t>& used) {
  uint32_t id = static_cast<uint32_t>(used.size()) + 1;
  while (true) {
    if (config.node_names == NodeNames::kRandom) id = static_cast<uint32_t>(rng.Next64());
    if (used.insert(id).second) return NodeId(id);
    ++id;
  }
}

// Owners of every key, and the mean cost of one lookup in nanoseconds.
double ComputeOwners(const Scheme& scheme, const KeySet& keys, std::vector<NodeId>& owners) {
  owners.resize(keys.size());
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < keys.size(); ++i) owners[i] = scheme.OwnerOf(keys.key(i));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  return static_cast<double>(
             std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()) /
         static_cast<double>(keys.size());
}

SimStepResult Measure(const Scheme& scheme, const KeySet& keys, std::span<const NodeId> owners,
                      uint64_t theta_max_bytes) {
  const std::vector<NodeId> nodes = scheme.Nodes();
  const partition::LoadReport load = partition::ComputeLoad(nodes, owners, keys.bytes());
  SimStepResult r;
  r.nodes = nodes.size();
  r.imbalance = load.keys.imbalance;
  r.imbalance_bytes = load.bytes.imbalance;
  r.max_over_mean = load.keys.max_over_mean;
  r.per_node = load.per_node;
  const std::vector<partition::PartitionInfo> parts = scheme.Partitions();
  const partition::FullnessReport fullness = partition::ComputeFullness(parts, theta_max_bytes);
  r.partitions = fullness.partitions;
  r.fullness_mean = fullness.fullness.mean;
  r.fullness_stddev = fullness.fullness.stddev;
  return r;
}

std::string StepLabel(const SimStep& step) {
  switch (step.kind) {
    case StepKind::kInitial:
      return "initial";
    case StepKind::kAdd:
      return fmt::format("add={}", step.count);
    case StepKind::kRemove:
      return fmt::format("remove={}", step.count);
  }
  return "unknown";
}

StatusOr<std::vector<SimStepResult>> RunSeed(const SimConfig& config, const KeySet& keys,
                                             uint64_t seed) {
  Random rng(seed);
  absl::flat_hash_set<uint32_t> used;
  partition::SchemeOptions options = config.scheme;
  options.hash_seed = seed;
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<Scheme> scheme,
                         partition::MakeScheme(options, InitialNodes(config, rng, used)));
  for (size_t i = 0; i < keys.size(); ++i) scheme->OnInsert(keys.key(i), keys.bytes()[i]);
  scheme->Rebalance();
  SHOAL_RETURN_IF_ERROR(Prefixed(scheme->CheckInvariants(), "after initial placement"));

  std::vector<SimStepResult> results;
  std::vector<NodeId> owners;
  const double lookup_ns = ComputeOwners(*scheme, keys, owners);
  results.push_back(Measure(*scheme, keys, owners, options.theta_max_bytes));
  results.back().label = "initial";
  results.back().lookup_ns = lookup_ns;

  std::vector<NodeId> previous_owners;
  for (const SimStep& step : config.steps) {
    const std::vector<NodeId> nodes_before = scheme->Nodes();
    switch (step.kind) {
      case StepKind::kInitial:
        break;
      case StepKind::kAdd:
        for (uint32_t i = 0; i < step.count; ++i) {
          SHOAL_RETURN_IF_ERROR(scheme->AddNode(FreshNode(config, rng, used)));
        }
        break;
      case StepKind::kRemove: {
        if (step.count >= nodes_before.size()) {
          return InvalidArgumentError(fmt::format("step {} would leave no node ({} present)",
                                                  StepLabel(step), nodes_before.size()));
        }
        std::vector<NodeId> candidates = nodes_before;
        for (uint32_t i = 0; i < step.count; ++i) {
          const size_t pick = rng.Uniform(candidates.size());
          SHOAL_RETURN_IF_ERROR(scheme->RemoveNode(candidates[pick]));
          candidates.erase(candidates.begin() + static_cast<ptrdiff_t>(pick));
        }
        break;
      }
    }
    SHOAL_RETURN_IF_ERROR(Prefixed(scheme->CheckInvariants(), StepLabel(step)));
    previous_owners.swap(owners);
    const double ns = ComputeOwners(*scheme, keys, owners);
    SimStepResult r = Measure(*scheme, keys, owners, options.theta_max_bytes);
    const partition::MoveReport moves =
        partition::CountMoves(previous_owners, owners, keys.bytes(), nodes_before, scheme->Nodes());
    r.label = StepLabel(step);
    r.lookup_ns = ns;
    r.moved_fraction = moves.moved_fraction;
    r.optimal_fraction = moves.optimal_fraction;
    r.moved_bytes = moves.moved_bytes;
    results.push_back(std::move(r));
  }
  return results;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

double MeasureHashNs(const KeySet& keys, CollectionId collection) {
  uint64_t sink = 0;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < keys.size(); ++i) sink ^= PointOf(collection, keys.key(i).raw).value();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  // Keep the loop from being optimized away.
  if (sink == 0x5eed) std::fputs("", stderr);
  return static_cast<double>(
             std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()) /
         static_cast<double>(keys.size());
}

}  // namespace

StatusOr<SimStep> ParseSimStep(std::string_view text) {
  const size_t eq = text.find('=');
  const std::string_view verb = text.substr(0, eq);
  if (eq == std::string_view::npos || (verb != "add" && verb != "remove")) {
    return InvalidArgumentError(fmt::format("bad step '{}' (expected add=K or remove=K)", text));
  }
  const std::string_view number = text.substr(eq + 1);
  uint64_t count = 0;
  if (number.empty() || number.size() > 6) {
    return InvalidArgumentError(fmt::format("bad count in step '{}'", text));
  }
  for (char c : number) {
    if (c < '0' || c > '9') {
      return InvalidArgumentError(fmt::format("bad count in step '{}'", text));
    }
    count = count * 10 + static_cast<uint64_t>(c - '0');
  }
  if (count == 0 || count > kMaxNodes) {
    return InvalidArgumentError(
        fmt::format("count in step '{}' must be in [1, {}]", text, kMaxNodes));
  }
  return SimStep{.kind = verb == "add" ? StepKind::kAdd : StepKind::kRemove,
                 .count = static_cast<uint32_t>(count)};
}

StatusOr<SimResult> RunPartitionSim(const SimConfig& config) {
  if (config.nodes == 0 || config.nodes > kMaxNodes) {
    return InvalidArgumentError(fmt::format("--nodes must be in [1, {}]", kMaxNodes));
  }
  if (config.seeds == 0 || config.seeds > kMaxSeeds) {
    return InvalidArgumentError(fmt::format("--seeds must be in [1, {}]", kMaxSeeds));
  }
  SHOAL_RETURN_IF_ERROR(partition::ValidateOptions(config.scheme));
  SHOAL_ASSIGN_OR_RETURN(KeySet keys, KeySet::Generate(config.keys));

  SimResult result;
  result.scheme = std::string(partition::SchemeName(config.scheme.kind));
  result.keys = keys.size();
  result.total_bytes = keys.total_bytes();
  result.hash_ns = MeasureHashNs(keys, config.keys.collection);

  std::vector<std::vector<SimStepResult>> per_seed;
  for (uint32_t s = 0; s < config.seeds; ++s) {
    const uint64_t seed = config.first_seed + s;
    result.seeds.push_back(seed);
    SHOAL_ASSIGN_OR_RETURN(auto steps, RunSeed(config, keys, seed));
    per_seed.push_back(std::move(steps));
  }
  const size_t step_count = per_seed.front().size();
  for (size_t i = 0; i < step_count; ++i) {
    SimStepResult worst = per_seed[0][i];
    worst.worst_seed = result.seeds[0];
    std::vector<double> lookups;
    std::vector<double> moved;
    for (size_t s = 0; s < per_seed.size(); ++s) {
      const SimStepResult& r = per_seed[s][i];
      lookups.push_back(r.lookup_ns);
      moved.push_back(r.moved_fraction);
      if (r.imbalance > worst.imbalance) {
        const double keep_mom = worst.max_over_mean;
        const double keep_bytes = worst.imbalance_bytes;
        const double keep_moved = worst.moved_fraction;
        worst = r;
        worst.worst_seed = result.seeds[s];
        worst.max_over_mean = std::max(keep_mom, r.max_over_mean);
        worst.imbalance_bytes = std::max(keep_bytes, r.imbalance_bytes);
        worst.moved_fraction = std::max(keep_moved, r.moved_fraction);
      } else {
        worst.max_over_mean = std::max(worst.max_over_mean, r.max_over_mean);
        worst.imbalance_bytes = std::max(worst.imbalance_bytes, r.imbalance_bytes);
        worst.moved_fraction = std::max(worst.moved_fraction, r.moved_fraction);
      }
    }
    worst.lookup_ns = Median(lookups);
    worst.moved_fraction_median = Median(moved);
    result.steps.push_back(std::move(worst));
  }
  return result;
}

std::string SimResultJson(const SimResult& result) {
  nlohmann::json out;
  out["scheme"] = result.scheme;
  out["keys"] = result.keys;
  out["total_bytes"] = result.total_bytes;
  out["hash_ns"] = result.hash_ns;
  out["seeds"] = result.seeds;
  nlohmann::json steps = nlohmann::json::array();
  for (const SimStepResult& r : result.steps) {
    nlohmann::json per_node = nlohmann::json::array();
    for (const partition::NodeLoad& load : r.per_node) {
      per_node.push_back({{"node", load.node.value()}, {"keys", load.keys}, {"bytes", load.bytes}});
    }
    steps.push_back({{"step", r.label},
                     {"nodes", r.nodes},
                     {"imbalance", r.imbalance},
                     {"imbalance_bytes", r.imbalance_bytes},
                     {"max_over_mean", r.max_over_mean},
                     {"moved_fraction", r.moved_fraction},
                     {"moved_fraction_median", r.moved_fraction_median},
                     {"optimal_fraction", r.optimal_fraction},
                     {"moved_bytes", r.moved_bytes},
                     {"lookup_ns", r.lookup_ns},
                     {"partitions", r.partitions},
                     {"fullness_mean", r.fullness_mean},
                     {"fullness_stddev", r.fullness_stddev},
                     {"worst_seed", r.worst_seed},
                     {"per_node", per_node}});
  }
  out["steps"] = steps;
  return out.dump(2);
}

std::string SimResultTable(const SimResult& result) {
  std::string out = fmt::format(
      "scheme {}: {} keys, {} bytes, seeds {}..{} (worst seed reported), hash {:.1f} ns/key\n\n",
      result.scheme, result.keys, result.total_bytes, result.seeds.front(), result.seeds.back(),
      result.hash_ns);
  out += fmt::format("{:<10} {:>6} {:>10} {:>9} {:>9} {:>9} {:>8} {:>10} {:>10} {:>9}\n", "step",
                     "nodes", "imbalance", "max/mean", "moved", "optimal", "ratio", "lookup ns",
                     "partitions", "fullness");
  for (const SimStepResult& r : result.steps) {
    const double ratio = r.optimal_fraction > 0 ? r.moved_fraction / r.optimal_fraction : 0;
    out += fmt::format(
        "{:<10} {:>6} {:>10.4f} {:>9.4f} {:>9.4f} {:>9.4f} {:>8.3f} {:>10.1f} {:>10} {:>9}\n",
        r.label, r.nodes, r.imbalance, r.max_over_mean, r.moved_fraction, r.optimal_fraction, ratio,
        r.lookup_ns, r.partitions,
        r.fullness_mean > 0 ? fmt::format("{:.2f}", r.fullness_mean) : "-");
  }
  return out;
}

void AddPartitionSimCommand(CLI::App& app) {
  auto config = std::make_shared<SimConfig>();
  auto scheme_name = std::make_shared<std::string>("ring");
  auto pattern = std::make_shared<std::string>("sequential");
  auto hash = std::make_shared<std::string>("xxh3");
  auto names = std::make_shared<std::string>("random");
  auto steps = std::make_shared<std::vector<std::string>>();
  auto json = std::make_shared<bool>(false);

  CLI::App* cmd = app.add_subcommand(
      "partition-sim", "Place keys with a partitioning scheme and measure balance and movement");
  cmd->add_option("--scheme", *scheme_name,
                  "modulo, range, ring, rendezvous, jump, extendible or static")
      ->capture_default_str();
  cmd->add_option("--nodes", config->nodes, "Initial number of nodes")->capture_default_str();
  cmd->add_option("--keys", config->keys.count, "Number of keys")->capture_default_str();
  cmd->add_option("--keys-pattern", *pattern, "sequential, uniform or zipfian")
      ->capture_default_str();
  cmd->add_option("--key-hash", *hash, "Point function: xxh3 or identity")->capture_default_str();
  cmd->add_option("--record-bytes", config->keys.record_bytes,
                  "Record size (zipfian: the smallest size)")
      ->capture_default_str();
  cmd->add_option("--vnodes", config->scheme.vnodes, "Ring: virtual nodes per node")
      ->capture_default_str();
  cmd->add_option("--buckets", config->scheme.static_buckets, "Static: number of buckets")
      ->capture_default_str();
  cmd->add_option("--rendezvous-buckets", config->scheme.rendezvous_buckets,
                  "Rendezvous: 0 = per key, else per bucket")
      ->capture_default_str();
  cmd->add_option("--theta-max", config->scheme.theta_max_bytes,
                  "Range/extendible: split above this many bytes")
      ->capture_default_str();
  cmd->add_option("--theta-min", config->scheme.theta_min_bytes,
                  "Range: merge adjacent partitions below this many bytes")
      ->capture_default_str();
  cmd->add_option("--min-partitions", config->scheme.min_partitions,
                  "Range: never merge below this many partitions")
      ->capture_default_str();
  cmd->add_option("--initial-depth", config->scheme.initial_depth,
                  "Extendible: initial directory depth")
      ->capture_default_str();
  cmd->add_option("--max-depth", config->scheme.max_depth, "Extendible: maximum directory depth")
      ->capture_default_str();
  cmd->add_option("--step", *steps, "add=K or remove=K, repeatable, applied in order");
  cmd->add_option("--seed", config->first_seed, "First seed (node names, hash seed)")
      ->capture_default_str();
  cmd->add_option("--seeds", config->seeds, "Number of seeds; the worst result is reported")
      ->capture_default_str();
  cmd->add_option("--key-seed", config->keys.seed, "Seed of the random key patterns")
      ->capture_default_str();
  cmd->add_option("--node-names", *names, "random or sequential node ids")->capture_default_str();
  cmd->add_flag("--json", *json, "Print one JSON object instead of a table");

  cmd->callback([=]() {
    auto fail = [](const Status& status) {
      std::fprintf(stderr, "error: %s\n", std::string(MessageOf(status)).c_str());
      throw CLI::RuntimeError(2);
    };
    auto kind = partition::ParseSchemeKind(*scheme_name);
    if (!kind.ok()) fail(kind.status());
    config->scheme.kind = *kind;
    auto key_pattern = partition::ParseKeyPattern(*pattern);
    if (!key_pattern.ok()) fail(key_pattern.status());
    config->keys.pattern = *key_pattern;
    auto key_hash = partition::ParseKeyHash(*hash);
    if (!key_hash.ok()) fail(key_hash.status());
    config->keys.hash = *key_hash;
    if (*names == "random") {
      config->node_names = NodeNames::kRandom;
    } else if (*names == "sequential") {
      config->node_names = NodeNames::kSequential;
    } else {
      fail(InvalidArgumentError("--node-names must be random or sequential"));
    }
    config->steps.clear();
    for (const std::string& text : *steps) {
      auto step = ParseSimStep(text);
      if (!step.ok()) fail(step.status());
      config->steps.push_back(*step);
    }
    auto result = RunPartitionSim(*config);
    if (!result.ok()) fail(result.status());
    const std::string text = *json ? SimResultJson(*result) : SimResultTable(*result);
    std::fputs(text.c_str(), stdout);
    if (*json) std::fputs("\n", stdout);
  });
}

}  // namespace shoal::tools
