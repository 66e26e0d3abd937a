#include "src/cluster/shard_map_edit.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "src/cluster/cluster_test_util.h"

namespace shoal::cluster {
namespace {

using testing::GenEdit;
using testing::Nodes;

ShardMapEdit EveryOperation() {
  ShardMapEdit edit(MapEpoch(300));
  edit.AddNode(NodeId(9))
      .RemoveNode(NodeId(2))
      .SetNodeState(NodeId(3), NodeState::kLeaving)
      .SplitBucket(BucketId(1), uint64_t{1} << 63, BucketId(200))
      .MergeBuckets(BucketId(4), BucketId(5))
      .BeginTransition(BucketId(6), MoveId(1000), Nodes({7, 8}), TransitionMode::kSwitchThenCopy)
      .AdvanceStage(BucketId(6), MoveId(1000), TransitionStage::kCleanup)
      .CommitTransition(BucketId(6), MoveId(1000))
      .FinishTransition(BucketId(6), MoveId(1000))
      .AbortTransition(BucketId(6), MoveId(1000))
      .RemoveReplica(BucketId(7), NodeId(2))
      .DropReplica(BucketId(7), NodeId(3))
      .PromoteReplica(BucketId(7), NodeId(4))
      .ForcePrimary(BucketId(8), NodeId(5))
      .SetReplication(3, 2)
      .BindStore(NodeId(1), 0x10)
      .ResetNode(NodeId(1), 0x11);
  return edit;
}

TEST(ShardMapEditTest, RoundTripsEveryOperation) {
  const ShardMapEdit edit = EveryOperation();
  const std::string bytes = edit.Encode();
  auto decoded = ShardMapEdit::Decode(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, edit);
  EXPECT_EQ(decoded->Encode(), bytes);
}

// The encoding is durable: these bytes must keep decoding to the same edit forever.
TEST(ShardMapEditTest, GoldenEncoding) {
  ShardMapEdit edit(MapEpoch(300));
  edit.AddNode(NodeId(9)).BeginTransition(BucketId(6), MoveId(1000), Nodes({7}),
                                          TransitionMode::kSwitchThenCopy);
  const std::string expected("\x01\xac\x02\x02\x01\x09\x06\x06\xe8\x07\x01\x01\x07", 13);
  EXPECT_EQ(edit.Encode(), expected);
  auto decoded = ShardMapEdit::Decode(expected);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, edit);
}

TEST(ShardMapEditTest, EveryTruncationIsRejected) {
  const std::string bytes = EveryOperation().Encode();
  for (size_t length = 0; length < bytes.size(); ++length) {
    auto decoded = ShardMapEdit::Decode(std::string_view(bytes).substr(0, length));
    EXPECT_FALSE(decoded.ok()) << "length " << length;
    EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(ShardMapEditTest, RejectsGarbage) {
  const std::string good = EveryOperation().Encode();
  // Wrong version, trailing byte, unknown tag.
  EXPECT_FALSE(ShardMapEdit::Decode("\x02" + good.substr(1)).ok());
  EXPECT_FALSE(ShardMapEdit::Decode(good + '\0').ok());
  EXPECT_FALSE(ShardMapEdit::Decode(std::string("\x01\x01\x01\x0b\x00", 5)).ok());
  EXPECT_FALSE(ShardMapEdit::Decode(std::string("\x01\x01\x01\x00\x00", 5)).ok());
  // Non-minimal varint (epoch 1 as two bytes), 11-byte varint, node id above 32 bits.
  EXPECT_FALSE(ShardMapEdit::Decode(std::string("\x01\x81\x00\x00", 4)).ok());
  EXPECT_FALSE(
      ShardMapEdit::Decode(std::string("\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f\x00", 12))
          .ok());
  EXPECT_FALSE(ShardMapEdit::Decode(std::string("\x01\x01\x01\x01\x80\x80\x80\x80\x10", 9)).ok());
  // Unknown stage, mode and node state values.
  EXPECT_FALSE(ShardMapEdit::Decode(std::string("\x01\x01\x01\x07\x01\x01\x07", 7)).ok());
  EXPECT_FALSE(ShardMapEdit::Decode(std::string("\x01\x01\x01\x06\x01\x01\x02\x00", 8)).ok());
  EXPECT_FALSE(ShardMapEdit::Decode(std::string("\x01\x01\x01\x03\x01\x02", 6)).ok());
  // An operation count far beyond the input, a destination count far beyond the input.
  EXPECT_FALSE(ShardMapEdit::Decode(std::string("\x01\x01\xff\xff\xff\xff\x0f", 7)).ok());
  EXPECT_FALSE(ShardMapEdit::Decode(std::string("\x01\x01\x01\x06\x01\x01\x00\x7f\x01", 9)).ok());
}

TEST(ShardMapEditTest, MaxValuesRoundTrip) {
  ShardMapEdit edit(MapEpoch(UINT64_MAX));
  edit.SplitBucket(BucketId(UINT32_MAX), UINT64_MAX, BucketId(0))
      .AbortTransition(BucketId(UINT32_MAX), MoveId(UINT64_MAX));
  auto decoded = ShardMapEdit::Decode(edit.Encode());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, edit);
}

TEST(ShardMapEditTest, DebugStringNamesEveryOperation) {
  const std::string text = EveryOperation().DebugString();
  for (const char* name :
       {"AddNode(n9)", "RemoveNode(n2)", "SetNodeState(n3, leaving)", "SplitBucket(b1",
        "MergeBuckets(b4, b5)", "BeginTransition(b6, m1000", "AdvanceStage(b6, m1000, cleanup)",
        "CommitTransition", "FinishTransition", "AbortTransition", "RemoveReplica(b7, n2)",
        "DropReplica(b7, n3)", "PromoteReplica(b7, n4)", "ForcePrimary(b8, n5)",
        "SetReplication(K=3, min_in_sync=2)", "BindStore(n1, 0x10)", "ResetNode(n1, 0x11)",
        "base=e300"}) {
    EXPECT_NE(text.find(name), std::string::npos) << name << " in " << text;
  }
}

RC_GTEST_PROP(ShardMapEditProperty, EncodeDecodeEncodeRoundTrips, ()) {
  const ShardMapEdit edit = *GenEdit(MapEpoch(*rc::gen::arbitrary<uint64_t>()));
  const std::string bytes = edit.Encode();
  auto decoded = ShardMapEdit::Decode(bytes);
  RC_ASSERT(decoded.ok());
  RC_ASSERT(*decoded == edit);
  RC_ASSERT(decoded->Encode() == bytes);
}

// Arbitrary bytes never crash the decoder; whatever it accepts re-encodes to the same bytes.
RC_GTEST_PROP(ShardMapEditProperty, DecodeOfGarbageIsSafeAndCanonical, ()) {
  const std::string valid = (*GenEdit(MapEpoch(*rc::gen::arbitrary<uint64_t>()))).Encode();
  std::string bytes = valid;
  const auto flips = *rc::gen::container<std::vector<std::pair<size_t, uint8_t>>>(
      rc::gen::pair(rc::gen::arbitrary<size_t>(), rc::gen::arbitrary<uint8_t>()));
  for (const auto& [at, value] : flips) bytes[at % bytes.size()] = static_cast<char>(value);
  if (*rc::gen::arbitrary<bool>()) bytes = *rc::gen::arbitrary<std::string>();
  auto decoded = ShardMapEdit::Decode(bytes);
  if (decoded.ok()) RC_ASSERT(decoded->Encode() == bytes);
}

}  // namespace
}  // namespace shoal::cluster
