#include "src/partition/modulo_scheme.h"

#include <gtest/gtest.h>

#include <vector>

namespace shoal::partition {
namespace {

TEST(ModuloSchemeTest, OwnerIsPointModN) {
  ModuloScheme scheme({NodeId(30), NodeId(10), NodeId(20)});
  EXPECT_EQ(scheme.Owner(Point(0)), NodeId(10));
  EXPECT_EQ(scheme.Owner(Point(1)), NodeId(20));
  EXPECT_EQ(scheme.Owner(Point(5)), NodeId(30));
  ASSERT_TRUE(scheme.CheckInvariants().ok());
}

TEST(ModuloSchemeTest, AddAndRemoveReportErrors) {
  ModuloScheme scheme({NodeId(1)});
  EXPECT_EQ(scheme.AddNode(NodeId(1)).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(scheme.RemoveNode(NodeId(2)).code(), StatusCode::kNotFound);
  EXPECT_EQ(scheme.RemoveNode(NodeId(1)).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(scheme.AddNode(NodeId(2)).ok());
  EXPECT_EQ(scheme.Nodes(), (std::vector<NodeId>{NodeId(1), NodeId(2)}));
}

TEST(ModuloSchemeTest, GrowingMovesMostKeys) {
  ModuloScheme before({NodeId(1), NodeId(2), NodeId(3)});
  auto after = before.Clone();
  ASSERT_TRUE(after->AddNode(NodeId(4)).ok());
  int moved = 0;
  for (uint64_t p = 0; p < 1200; ++p) {
    moved += before.OwnerOf({Point(p), {}}) != after->OwnerOf({Point(p), {}});
  }
  EXPECT_EQ(moved, 900);  // 3 of every 4 consecutive points change owner.
}

}  // namespace
}  // namespace shoal::partition
