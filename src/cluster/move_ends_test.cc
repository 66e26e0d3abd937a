#include "src/cluster/move_ends.h"

#include <gtest/gtest.h>

#include <vector>

namespace shoal::cluster {
namespace {

std::vector<NodeId> Nodes(std::initializer_list<uint32_t> ids) {
  std::vector<NodeId> out;
  for (uint32_t id : ids) out.emplace_back(id);
  return out;
}

TEST(MoveEndsTest, ASingleCopyMovesFromItsNodeToAnother) {
  const MoveEnds ends = EndsOf(Nodes({1}), Nodes({4}));
  EXPECT_EQ(ends.from, NodeId(1));
  EXPECT_EQ(ends.to, NodeId(4));
  EXPECT_FALSE(ends.handoff);
}

TEST(MoveEndsTest, AReplacedBackupIsNamedNotItsPrimary) {
  const MoveEnds ends = EndsOf(Nodes({1, 2, 3}), Nodes({1, 4, 3}));
  EXPECT_EQ(ends.from, NodeId(2));
  EXPECT_EQ(ends.to, NodeId(4));
  EXPECT_FALSE(ends.handoff);
}

TEST(MoveEndsTest, AnAddedCopyLeavesNothing) {
  const MoveEnds ends = EndsOf(Nodes({4, 1}), Nodes({4, 1, 2}));
  EXPECT_EQ(ends.from, NodeId(0));
  EXPECT_EQ(ends.to, NodeId(2));
}

TEST(MoveEndsTest, AHandoffGoesFromTheOldPrimaryToTheNew) {
  const MoveEnds ends = EndsOf(Nodes({1, 2, 3}), Nodes({2, 1, 3}));
  EXPECT_TRUE(ends.handoff);
  EXPECT_EQ(ends.from, NodeId(1));
  EXPECT_EQ(ends.to, NodeId(2));
}

}  // namespace
}  // namespace shoal::cluster
