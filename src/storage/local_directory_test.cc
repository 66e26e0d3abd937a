#include "src/storage/local_directory.h"

#include <gtest/gtest.h>

#include "src/storage/errors.h"

namespace shoal::storage {
namespace {

PointRange R(uint64_t b, uint64_t e) { return *PointRange::Make(b, e); }

TEST(LocalDirectoryTest, AddFindAndOverlap) {
  LocalDirectory dir;
  ASSERT_TRUE(dir.Add({.id = BucketId(1), .range = R(0, 100)}).ok());
  ASSERT_TRUE(dir.Add({.id = BucketId(2), .range = PointRange::From(200)}).ok());
  EXPECT_TRUE(Is(dir.Add({.id = BucketId(3), .range = R(50, 150)}), ErrorReason::kBucketState));
  EXPECT_TRUE(Is(dir.Add({.id = BucketId(1), .range = R(100, 150)}), ErrorReason::kBucketState));
  EXPECT_TRUE(
      Is(dir.Add({.id = BucketId(4), .range = R(150, 150)}), ErrorReason::kInvalidArgument));
  EXPECT_EQ(dir.Find(Point(99))->id, BucketId(1));
  EXPECT_FALSE(dir.Find(Point(150)).has_value());
  EXPECT_EQ(dir.Find(Point(~0ull))->id, BucketId(2));
  EXPECT_EQ(dir.Overlapping(R(90, 210)).size(), 2u);
  EXPECT_EQ(dir.Overlapping(R(100, 200)).size(), 0u);
  EXPECT_TRUE(dir.CheckInvariants().ok());
}

TEST(LocalDirectoryTest, StateTransitions) {
  LocalDirectory dir;
  ASSERT_TRUE(dir.Add({.id = BucketId(1), .range = R(0, 10)}).ok());
  ASSERT_TRUE(dir.Add({.id = BucketId(2), .range = R(10, 20), .state = BucketState::kAdding}).ok());
  EXPECT_TRUE(dir.SetState(BucketId(1), BucketState::kLeaving).ok());
  EXPECT_TRUE(dir.SetState(BucketId(1), BucketState::kReadWrite).ok());
  EXPECT_TRUE(Is(dir.SetState(BucketId(1), BucketState::kAdding), ErrorReason::kBucketState));
  EXPECT_TRUE(Is(dir.SetState(BucketId(2), BucketState::kLeaving), ErrorReason::kBucketState));
  EXPECT_TRUE(dir.SetState(BucketId(2), BucketState::kReadWrite).ok());
  EXPECT_TRUE(Is(dir.SetState(BucketId(9), BucketState::kReadWrite), ErrorReason::kNotFound));
}

TEST(LocalDirectoryTest, SplitKeepsCoverage) {
  LocalDirectory dir;
  ASSERT_TRUE(dir.Add({.id = BucketId(1), .range = PointRange::All()}).ok());
  auto halves = dir.Split(BucketId(1), 1ull << 63, BucketId(2));
  ASSERT_TRUE(halves.ok());
  EXPECT_EQ(halves->first.range, R(0, 1ull << 63));
  EXPECT_EQ(halves->second.range, PointRange::From(1ull << 63));
  EXPECT_EQ(dir.Find(Point((1ull << 63) - 1))->id, BucketId(1));
  EXPECT_EQ(dir.Find(Point(1ull << 63))->id, BucketId(2));
  EXPECT_FALSE(dir.Split(BucketId(1), 0, BucketId(3)).ok());
  EXPECT_FALSE(dir.Split(BucketId(1), 5, BucketId(2)).ok());  // id taken
  ASSERT_TRUE(dir.SetState(BucketId(2), BucketState::kLeaving).ok());
  EXPECT_TRUE(Is(dir.Split(BucketId(2), ~0ull, BucketId(3)).status(), ErrorReason::kBucketState));
  EXPECT_TRUE(dir.CheckInvariants().ok());
  ASSERT_TRUE(dir.Remove(BucketId(1)).ok());
  EXPECT_EQ(dir.size(), 1u);
  EXPECT_TRUE(dir.CheckInvariants().ok());
}

TEST(LocalDirectoryTest, EntryEncodeDecodeEncode) {
  for (const BucketEntry& e :
       {BucketEntry{.id = BucketId(7), .range = R(3, 9), .state = BucketState::kAdding},
        BucketEntry{
            .id = BucketId(8), .range = PointRange::From(9), .state = BucketState::kLeaving},
        BucketEntry{.id = BucketId(9), .range = PointRange::All()}}) {
    const std::string key = BucketMetaKey(e.id);
    const std::string value = EncodeBucketEntry(e);
    auto decoded = DecodeBucketEntry(key, value);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(*decoded, e);
    EXPECT_EQ(EncodeBucketEntry(*decoded), value);
  }
  std::string bad = EncodeBucketEntry({.id = BucketId(1), .range = R(0, 1)});
  bad[1] = 9;
  EXPECT_TRUE(
      Is(DecodeBucketEntry(BucketMetaKey(BucketId(1)), bad).status(), ErrorReason::kCorruption));
}

}  // namespace
}  // namespace shoal::storage
