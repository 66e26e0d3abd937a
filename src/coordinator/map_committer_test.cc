#include "src/coordinator/map_committer.h"

#include <gtest/gtest.h>

#include <vector>

#include "src/coordinator/fake_move_node.h"

namespace shoal::coordinator::test {
namespace {

using cluster::ShardMap;
using cluster::ShardMapEdit;

using MapCommitterTest = PartsTest;

TEST_F(MapCommitterTest, AnEditIsStoredThenPublishedToTheObserverAndTheNodes) {
  Run([&] {
    std::vector<MapEpoch> observed;
    committer_->SetObserver(
        [&](const transport::ClusterState& state) { observed.push_back(state.map->epoch()); });
    ASSERT_EQ(observed.size(), 1u);  // at once, with the current state
    const MapEpoch before = committer_->map()->epoch();
    const int installs = node(kN1).Count("InstallMap");
    auto next = committer_->CommitEdit(
        [](const ShardMap& map, ShardMapEdit* edit) {
          edit->SplitBucket(kB0, map.Find(kB0)->range.Midpoint(), map.NextBucketId());
          return OkStatus();
        },
        "log/test", "split");
    ASSERT_TRUE(next.ok()) << next.status();
    EXPECT_EQ((*next)->epoch(), MapEpoch(before.value() + 1));
    EXPECT_EQ(committer_->map(), *next);
    EXPECT_EQ(observed.back(), (*next)->epoch());
    EXPECT_EQ(node(kN1).Count("InstallMap"), installs + 1);
    EXPECT_EQ(store_->Get("log/test")->value, "split");

    // A second committer on the same store loads what was stored.
    MapCommitter reopened(sim_, *store_, membership_, options_.call_timeout);
    ASSERT_TRUE(reopened.Load().ok());
    EXPECT_EQ(*reopened.map(), **next);
  });
}

TEST_F(MapCommitterTest, AnEmptyOrFailedEditStoresNothing) {
  Run([&] {
    const auto before = committer_->map();
    auto empty = committer_->CommitEdit([](const ShardMap&, ShardMapEdit*) { return OkStatus(); });
    ASSERT_TRUE(empty.ok());
    EXPECT_EQ(*empty, before);
    auto refused = committer_->CommitEdit(
        [](const ShardMap&, ShardMapEdit*) { return InvalidArgumentError("no"); }, "log/x", "x");
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(committer_->map(), before);
    EXPECT_EQ(store_->Get("log/x").status().code(), StatusCode::kNotFound);
    // An edit the map refuses (an unknown bucket) stores nothing either.
    auto invalid = committer_->CommitEdit([](const ShardMap&, ShardMapEdit* edit) {
      edit->MergeBuckets(BucketId(40), BucketId(41));
      return OkStatus();
    });
    EXPECT_FALSE(invalid.ok());
    EXPECT_EQ(committer_->map(), before);
  });
}

TEST_F(MapCommitterTest, ABeginAdvancesTheNextMoveIdDurably) {
  Run([&] {
    EXPECT_EQ(committer_->NextMoveId(), MoveId(1));
    ASSERT_TRUE(committer_
                    ->CommitEdit([&](const ShardMap&, ShardMapEdit* edit) {
                      edit->BeginTransition(kB0, committer_->NextMoveId(), {kN2},
                                            cluster::TransitionMode::kCopyThenSwitch);
                      return OkStatus();
                    })
                    .ok());
    EXPECT_EQ(committer_->NextMoveId(), MoveId(2));
    MapCommitter reopened(sim_, *store_, membership_, options_.call_timeout);
    ASSERT_TRUE(reopened.Load().ok());
    EXPECT_EQ(reopened.NextMoveId(), MoveId(2));
  });
}

TEST_F(MapCommitterTest, CollectionsAreCreatedOnceAndBadNamesRecordNothing) {
  Run([&] {
    auto users = committer_->CreateCollection("users");
    ASSERT_TRUE(users.ok()) << users.status();
    auto again = committer_->CreateCollection("users");
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->id, users->id);
    auto orders = committer_->CreateCollection("orders");
    ASSERT_TRUE(orders.ok());
    EXPECT_NE(orders->id, users->id);
    EXPECT_EQ(committer_->CreateCollection(std::string("bad\nname")).status().code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(committer_->State().collections.size(), 2u);
    MapCommitter reopened(sim_, *store_, membership_, options_.call_timeout);
    ASSERT_TRUE(reopened.Load().ok());
    EXPECT_EQ(reopened.State().collections.size(), 2u);
  });
}

TEST_F(MapCommitterTest, InitializeKeepsAStoredMap) {
  Run([&] {
    const auto first = committer_->map();
    ASSERT_TRUE(committer_->Initialize({kN1, kN2, kN3}, 8).ok());
    EXPECT_EQ(committer_->map(), first);
    EXPECT_EQ(committer_->map()->buckets().size(), 2u);
  });
}

}  // namespace
}  // namespace shoal::coordinator::test
