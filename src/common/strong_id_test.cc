#include "src/common/strong_id.h"

#include <gtest/gtest.h>

#include <type_traits>
#include <unordered_set>

#include "absl/container/flat_hash_set.h"
#include "src/common/ids.h"

namespace shoal {
namespace {

static_assert(!std::is_convertible_v<NodeId, BucketId>, "ids of different kinds must not mix");
static_assert(!std::is_convertible_v<uint32_t, NodeId>, "raw integers need an explicit id");

TEST(StrongIdTest, ComparesByValue) {
  EXPECT_LT(NodeId(1), NodeId(2));
  EXPECT_EQ(MapEpoch(5), MapEpoch(5));
  EXPECT_NE(BucketId(1), BucketId(2));
}

TEST(StrongIdTest, HashesInStdAndAbslContainers) {
  std::unordered_set<NodeId> std_set{NodeId(1), NodeId(2), NodeId(1)};
  absl::flat_hash_set<NodeId> absl_set{NodeId(1), NodeId(2), NodeId(1)};
  EXPECT_EQ(std_set.size(), 2u);
  EXPECT_EQ(absl_set.size(), 2u);
}

TEST(StrongIdTest, DebugStringHasKindPrefix) {
  EXPECT_EQ(NodeId(3).DebugString(), "n3");
  EXPECT_EQ(MoveId(9).DebugString(), "m9");
}

}  // namespace
}  // namespace shoal
