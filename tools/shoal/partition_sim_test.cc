#include "tools/shoal/partition_sim.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace shoal::tools {
namespace {

SimConfig SmallModulo() {
  SimConfig config;
  config.scheme.kind = partition::SchemeKind::kModulo;
  config.keys.count = 10'000;
  config.nodes = 10;
  config.seeds = 2;
  config.steps = {SimStep{.kind = StepKind::kAdd, .count = 1},
                  SimStep{.kind = StepKind::kRemove, .count = 2}};
  return config;
}

TEST(PartitionSimTest, ParsesSteps) {
  auto add = ParseSimStep("add=3");
  ASSERT_TRUE(add.ok());
  EXPECT_EQ(add->kind, StepKind::kAdd);
  EXPECT_EQ(add->count, 3u);
  EXPECT_FALSE(ParseSimStep("add").ok());
  EXPECT_FALSE(ParseSimStep("grow=1").ok());
  EXPECT_FALSE(ParseSimStep("remove=0").ok());
  EXPECT_FALSE(ParseSimStep("remove=-1").ok());
  EXPECT_FALSE(ParseSimStep("add=1x").ok());
}

TEST(PartitionSimTest, ModuloMovesMostKeysOnJoin) {
  auto result = RunPartitionSim(SmallModulo());
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->steps.size(), 3u);
  EXPECT_EQ(result->steps[0].nodes, 10u);
  EXPECT_EQ(result->steps[0].moved_fraction, 0);
  EXPECT_EQ(result->steps[0].optimal_fraction, 0);
  EXPECT_EQ(result->steps[1].nodes, 11u);
  EXPECT_NEAR(result->steps[1].optimal_fraction, 1.0 / 11, 1e-12);
  EXPECT_GT(result->steps[1].moved_fraction, 0.85);  // about 10/11
  EXPECT_EQ(result->steps[2].nodes, 9u);
  EXPECT_NEAR(result->steps[2].optimal_fraction, 2.0 / 11, 1e-12);
}

TEST(PartitionSimTest, JsonHasDocumentedFields) {
  auto result = RunPartitionSim(SmallModulo());
  ASSERT_TRUE(result.ok());
  const auto json = nlohmann::json::parse(SimResultJson(*result));
  EXPECT_EQ(json["scheme"], "modulo");
  EXPECT_EQ(json["keys"], 10'000);
  ASSERT_EQ(json["steps"].size(), 3u);
  for (const char* field : {"nodes", "imbalance", "max_over_mean", "moved_fraction",
                            "optimal_fraction", "per_node", "lookup_ns"}) {
    EXPECT_TRUE(json["steps"][1].contains(field)) << field;
  }
  uint64_t total = 0;
  for (const auto& node : json["steps"][1]["per_node"]) total += node["keys"].get<uint64_t>();
  EXPECT_EQ(total, 10'000u);
}

TEST(PartitionSimTest, SameSeedSameResult) {
  auto a = RunPartitionSim(SmallModulo());
  auto b = RunPartitionSim(SmallModulo());
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < a->steps.size(); ++i) {
    EXPECT_EQ(a->steps[i].imbalance, b->steps[i].imbalance);
    EXPECT_EQ(a->steps[i].moved_fraction, b->steps[i].moved_fraction);
  }
}

TEST(PartitionSimTest, RejectsRemovingEveryNode) {
  SimConfig config = SmallModulo();
  config.nodes = 2;
  config.steps = {SimStep{.kind = StepKind::kRemove, .count = 2}};
  EXPECT_EQ(RunPartitionSim(config).status().code(), StatusCode::kInvalidArgument);
}

TEST(PartitionSimTest, RejectsBadLimits) {
  SimConfig config = SmallModulo();
  config.nodes = 0;
  EXPECT_FALSE(RunPartitionSim(config).ok());
  config = SmallModulo();
  config.scheme.theta_min_bytes = config.scheme.theta_max_bytes;  // breaks Θmax >= 2Θmin
  EXPECT_FALSE(RunPartitionSim(config).ok());
}

}  // namespace
}  // namespace shoal::tools
