#include "src/partition/jump_scheme.h"

#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "src/common/random.h"
#include "src/partition/schemes.h"

namespace shoal::partition {
namespace {

std::vector<NodeId> NodeRange(uint32_t first, uint32_t count) {
  std::vector<NodeId> nodes;
  for (uint32_t i = 0; i < count; ++i) nodes.push_back(NodeId(first + i));
  return nodes;
}

TEST(JumpSchemeTest, OneSlotTakesEverything) {
  Random random(1);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(JumpScheme::JumpHash(random.Next64(), 1), 0u);
}

TEST(JumpSchemeTest, GrowingBySlotMovesKeysOnlyToTheNewSlot) {
  Random random(2);
  for (int i = 0; i < 2000; ++i) {
    const uint64_t key = random.Next64();
    uint32_t previous = 0;
    for (uint32_t slots = 1; slots <= 300; ++slots) {
      const uint32_t slot = JumpScheme::JumpHash(key, slots);
      ASSERT_LT(slot, slots);
      ASSERT_TRUE(slot == previous || slot == slots - 1) << key << " " << slots;
      previous = slot;
    }
  }
}

TEST(JumpSchemeTest, SpreadsKeysEvenly) {
  constexpr uint32_t kSlots = 13;
  constexpr int kKeys = 130000;
  std::vector<int> counts(kSlots, 0);
  Random random(3);
  for (int i = 0; i < kKeys; ++i) ++counts[JumpScheme::JumpHash(random.Next64(), kSlots)];
  for (int c : counts) EXPECT_NEAR(c, kKeys / kSlots, kKeys / kSlots * 0.05);
  // Sequential keys too: the generator mixes the key before its first use.
  std::fill(counts.begin(), counts.end(), 0);
  for (int i = 0; i < kKeys; ++i) ++counts[JumpScheme::JumpHash(static_cast<uint64_t>(i), kSlots)];
  for (int c : counts) EXPECT_NEAR(c, kKeys / kSlots, kKeys / kSlots * 0.05);
}

TEST(JumpSchemeTest, SlotsFollowAddAndRemove) {
  JumpScheme scheme(std::vector<NodeId>{NodeId(30), NodeId(10), NodeId(20)});
  EXPECT_EQ(scheme.slots(), (std::vector<NodeId>{NodeId(10), NodeId(20), NodeId(30)}));
  ASSERT_TRUE(scheme.AddNode(NodeId(5)).ok());
  EXPECT_EQ(scheme.slots(), (std::vector<NodeId>{NodeId(10), NodeId(20), NodeId(30), NodeId(5)}));
  EXPECT_EQ(scheme.Nodes(), (std::vector<NodeId>{NodeId(5), NodeId(10), NodeId(20), NodeId(30)}));
  ASSERT_TRUE(scheme.RemoveNode(NodeId(5)).ok());  // the last slot: popped
  EXPECT_EQ(scheme.slots(), (std::vector<NodeId>{NodeId(10), NodeId(20), NodeId(30)}));
  ASSERT_TRUE(scheme.RemoveNode(NodeId(10)).ok());  // n30 moves into slot 0
  EXPECT_EQ(scheme.slots(), (std::vector<NodeId>{NodeId(30), NodeId(20)}));
  ASSERT_TRUE(scheme.CheckInvariants().ok());
  EXPECT_EQ(scheme.DebugString(), "jump{slots=[30,20]}");
}

TEST(JumpSchemeTest, OwnerIsNodeOfJumpSlot) {
  JumpScheme scheme(NodeRange(100, 7));
  Random random(4);
  for (int i = 0; i < 1000; ++i) {
    const uint64_t p = random.Next64();
    EXPECT_EQ(scheme.Owner(Point(p)), scheme.slots()[JumpScheme::JumpHash(p, 7)]);
    EXPECT_EQ(scheme.OwnerOf({Point(p), {}}), scheme.Owner(Point(p)));
  }
  EXPECT_TRUE(scheme.Partitions().empty());
}

TEST(JumpSchemeTest, RemovingAnEarlierNodeMovesItsKeysToTheLastSlotNode) {
  JumpScheme before(NodeRange(1, 6));
  JumpScheme after = before;
  ASSERT_TRUE(after.RemoveNode(NodeId(2)).ok());
  Random random(5);
  int moved = 0;
  for (int i = 0; i < 20000; ++i) {
    const Point p(random.Next64());
    const NodeId was = before.Owner(p);
    const NodeId is = after.Owner(p);
    if (was == NodeId(2)) {
      EXPECT_EQ(is, NodeId(6));
    }
    if (was != is) {
      ++moved;
      EXPECT_TRUE(was == NodeId(2) || was == NodeId(6));
    }
  }
  EXPECT_GT(moved, 20000 / 6 * 3 / 2);  // about 2/6 of the keys, twice the optimum
}

TEST(JumpSchemeTest, AddAndRemoveReportErrors) {
  JumpScheme scheme(std::vector<NodeId>{NodeId(1)});
  EXPECT_EQ(scheme.AddNode(NodeId(1)).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(scheme.RemoveNode(NodeId(2)).code(), StatusCode::kNotFound);
  EXPECT_EQ(scheme.RemoveNode(NodeId(1)).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(scheme.AddNode(NodeId(2)).ok());
  EXPECT_EQ(scheme.Nodes(), (std::vector<NodeId>{NodeId(1), NodeId(2)}));
}

TEST(JumpSchemeTest, NewJumpSchemeValidates) {
  SchemeOptions options;
  options.kind = SchemeKind::kJump;
  EXPECT_EQ(NewJumpScheme(options, {}).status().code(), StatusCode::kInvalidArgument);
  const std::vector<NodeId> dup = {NodeId(3), NodeId(3)};
  EXPECT_EQ(NewJumpScheme(options, dup).status().code(), StatusCode::kInvalidArgument);
  auto scheme = NewJumpScheme(options, NodeRange(1, 3));
  ASSERT_TRUE(scheme.ok());
  EXPECT_EQ((*scheme)->kind(), SchemeKind::kJump);
  EXPECT_TRUE((*scheme)->CheckInvariants().ok());
}

}  // namespace
}  // namespace shoal::partition
