// The sharded-field simulation over many seeds (tests/sim/hotspot_sim.h). A failure prints its
// seed and field kind; SHOAL_SIM_FIRST_SEED=N with SHOAL_SIM_SEEDS=1 replays it exactly.

#include "tests/sim/hotspot_sim.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "src/storage/test_support.h"
#include "tests/sim/sim_seeds.h"

namespace shoal::sim {
namespace {

// This process's scratch directory, removed with what the runs leave in it when the process exits.
std::string ScratchDir() {
  static const storage::TempDir dir;
  return dir.path();
}

// Seeds that cover rare paths; each must keep passing.
constexpr uint64_t kRegressionSeeds[] = {1, 2, 3};

TEST(HotspotSimTest, SameSeedReplaysTheSameRun) {
  const HotspotSimOptions options{.seed = 42,
                                  .dir = ScratchDir(),
                                  .kind = hotspot::FieldKind::kAuto,
                                  .updaters = 3,
                                  .updates_per_updater = 20,
                                  .readers = 1,
                                  .compactors = 2,
                                  .crashes = true,
                                  .loss = 0.01};
  const HotspotSimResult a = RunHotspotSim(options);
  const HotspotSimResult b = RunHotspotSim(options);
  ASSERT_TRUE(a.ok) << a.failure;
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.acked, b.acked);
  EXPECT_EQ(a.unknown, b.unknown);
  EXPECT_EQ(a.reads, b.reads);
  EXPECT_EQ(a.resizes, b.resizes);
  EXPECT_EQ(a.moves, b.moves);
}

TEST(HotspotSimTest, Replays) {
  for (uint64_t seed : kRegressionSeeds) {
    const HotspotSimResult result = RunHotspotSim(HotspotSimOptions{.seed = seed,
                                                                    .dir = ScratchDir(),
                                                                    .kind = std::nullopt,
                                                                    .updaters = 4,
                                                                    .updates_per_updater = 40,
                                                                    .readers = 2,
                                                                    .compactors = 2,
                                                                    .crashes = true,
                                                                    .loss = 0.01});
    EXPECT_TRUE(result.ok) << result.failure;
  }
}

// One test per kind; each runs the seeds of its shard (SHOAL_SIM_FIRST_SEED, SHOAL_SIM_SEEDS).
class HotspotSimKindTest : public testing::TestWithParam<hotspot::FieldKind> {};

TEST_P(HotspotSimKindTest, ManySeeds) {
  const auto [first, seeds] = SimSeedRange(5);
  HotspotSimResult total;
  uint64_t failures = 0;
  for (uint64_t seed = first; seed < first + seeds; ++seed) {
    const HotspotSimResult result =
        RunHotspotSim(HotspotSimOptions{.seed = seed,
                                        .dir = ScratchDir(),
                                        .kind = GetParam(),
                                        .updaters = 4,
                                        .updates_per_updater = 40,
                                        .readers = 2,
                                        .crashes = std::getenv("SHOAL_SIM_NO_CRASH") == nullptr,
                                        .loss = 0.01});
    total.acked += result.acked;
    total.unknown += result.unknown;
    total.failed += result.failed;
    total.conflicts += result.conflicts;
    total.reads += result.reads;
    total.snapshot_reads += result.snapshot_reads;
    total.snapshot_aborted += result.snapshot_aborted;
    total.resizes += result.resizes;
    total.resize_failures += result.resize_failures;
    total.compactions += result.compactions;
    total.root_checks += result.root_checks;
    total.crashes += result.crashes;
    total.client_crashes += result.client_crashes;
    total.moves += result.moves;
    total.leaked_cells += result.leaked_cells;
    if (!result.ok) {
      ++failures;
      ADD_FAILURE() << result.failure;
    }
  }
  std::printf(
      "%s, seeds %llu from %llu: updates acked %llu unknown %llu failed %llu (conflicts %llu); "
      "reads %llu, snapshots %llu (aborted %llu); resizes %llu (failed %llu); compactions %llu; "
      "root checks %llu; crashes %llu nodes, %llu clients; moves %llu; leaked cells %llu; "
      "failures %llu\n",
      std::string(hotspot::ToString(GetParam())).c_str(), static_cast<unsigned long long>(seeds),
      static_cast<unsigned long long>(first), static_cast<unsigned long long>(total.acked),
      static_cast<unsigned long long>(total.unknown), static_cast<unsigned long long>(total.failed),
      static_cast<unsigned long long>(total.conflicts),
      static_cast<unsigned long long>(total.reads),
      static_cast<unsigned long long>(total.snapshot_reads),
      static_cast<unsigned long long>(total.snapshot_aborted),
      static_cast<unsigned long long>(total.resizes),
      static_cast<unsigned long long>(total.resize_failures),
      static_cast<unsigned long long>(total.compactions),
      static_cast<unsigned long long>(total.root_checks),
      static_cast<unsigned long long>(total.crashes),
      static_cast<unsigned long long>(total.client_crashes),
      static_cast<unsigned long long>(total.moves),
      static_cast<unsigned long long>(total.leaked_cells),
      static_cast<unsigned long long>(failures));
  EXPECT_EQ(failures, 0u);
  EXPECT_GT(total.acked, 0u);
  EXPECT_GT(total.reads, 0u);
  if (GetParam() != hotspot::FieldKind::kDynamic) {
    EXPECT_GT(total.resizes, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, HotspotSimKindTest,
                         testing::Values(hotspot::FieldKind::kStatic, hotspot::FieldKind::kDynamic,
                                         hotspot::FieldKind::kAuto),
                         [](const testing::TestParamInfo<hotspot::FieldKind>& info) {
                           switch (info.param) {
                             case hotspot::FieldKind::kStatic:
                               return std::string("Static");
                             case hotspot::FieldKind::kDynamic:
                               return std::string("Dynamic");
                             default:
                               return std::string("Auto");
                           }
                         });

}  // namespace
}  // namespace shoal::sim
