#include "src/coordinator/balancer_loop.h"

#include <gtest/gtest.h>

#include <memory>

#include "src/coordinator/coordinator_internal.h"
#include "src/coordinator/fake_move_node.h"

namespace shoal::coordinator::test {
namespace {

using cluster::ShardMap;
using cluster::ShardMapEdit;

class BalancerLoopTest : public PartsTest {
 protected:
  std::shared_ptr<BalancerLoop> NewLoop() {
    return std::make_shared<BalancerLoop>(sim_, *store_, committer_, membership_, executor_,
                                          std::make_shared<Resizer>(sim_, committer_, kSecond),
                                          options_);
  }

  // Each node reports `bytes` for each bucket it holds in the current map.
  void ReportLoads(uint64_t bytes) {
    const auto map = committer_->map();
    for (NodeId id : {kN1, kN2, kN3}) {
      transport::BucketLoadResponse load;
      for (const auto& bucket : map->buckets()) {
        if (bucket.replicas.front() == id) {
          load.buckets.push_back({.bucket = bucket.id, .bytes = bytes, .documents = 1});
        }
      }
      node(id).SetLoad(load);
    }
  }
};

TEST_F(BalancerLoopTest, APlanPreviewChangesNothing) {
  Run([&] {
    auto loop = NewLoop();
    // Four buckets on two nodes, previewed with a third one added.
    ASSERT_TRUE(committer_->CommitEdit(internal::SplitBucketEdit(kB0, std::nullopt)).ok());
    ASSERT_TRUE(committer_->CommitEdit(internal::SplitBucketEdit(kB1, std::nullopt)).ok());
    ReportLoads(1 << 20);
    const auto before = committer_->map();
    auto plan = loop->Plan(kN3, std::nullopt);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_GE(plan->buckets, 1u);
    EXPECT_EQ(plan->bytes, plan->buckets * (1u << 20));
    for (const auto& move : plan->plan.moves) EXPECT_EQ(move.destination.front(), kN3);
    EXPECT_EQ(committer_->map(), before);  // nothing stored
    for (NodeId id : {kN1, kN2, kN3}) {
      EXPECT_EQ(node(id).Count("ExportBucket") + node(id).Count("Fence"), 0);
    }
  });
}

TEST_F(BalancerLoopTest, BalancedOnlyAfterARoundOnTheCurrentMapFoundNothingToDo) {
  options_.auto_balance = true;
  Run([&] {
    ReportLoads(1000);
    auto loop = NewLoop();
    EXPECT_FALSE(loop->Balanced());  // not recovered yet
    sim_.Spawn(Address::Coordinator(), "balancer", [loop] { loop->Run(); });
    const Micros deadline = sim_.Now() + 10 * kSecond;
    while (!loop->Balanced() && sim_.Now() < deadline) ASSERT_TRUE(sim_.Sleep(10 * kMs).ok());
    EXPECT_TRUE(loop->Balanced());
    EXPECT_TRUE(loop->recovered());
    // A new map (here a split) has not been planned on yet.
    ASSERT_TRUE(committer_->CommitEdit(internal::SplitBucketEdit(kB0, std::nullopt)).ok());
    EXPECT_FALSE(loop->Balanced());
    // An operator change blocks a verdict of a round that began before it.
    loop->NoteAdminChange();
    EXPECT_FALSE(loop->Balanced());
  });
}

TEST_F(BalancerLoopTest, ThresholdsAreValidatedStoredAndLoaded) {
  Run([&] {
    auto loop = NewLoop();
    EXPECT_EQ(loop->SetThresholds(uint64_t{1} << 20, uint64_t{1} << 19).code(),
              StatusCode::kInvalidArgument);  // merge must be below half of split
    EXPECT_EQ(loop->SetThresholds(uint64_t{1}, std::nullopt).code(),
              StatusCode::kInvalidArgument);  // below the minimum
    EXPECT_EQ(loop->thresholds().split_bytes, 0u);
    ASSERT_TRUE(loop->SetThresholds(uint64_t{8} << 20, uint64_t{1} << 20).ok());
    auto reopened = NewLoop();
    ASSERT_TRUE(reopened->LoadThresholds().ok());
    EXPECT_EQ(reopened->thresholds().split_bytes, uint64_t{8} << 20);
    EXPECT_EQ(reopened->thresholds().merge_bytes, uint64_t{1} << 20);
  });
}

}  // namespace
}  // namespace shoal::coordinator::test
