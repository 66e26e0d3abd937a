#include "src/cluster/shard_map_codec.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "src/cluster/cluster_test_util.h"

namespace shoal::cluster {
namespace {

using testing::Nodes;

ShardMap MakeInitial(std::vector<NodeId> nodes, uint32_t bucket_count, uint32_t k) {
  auto map = ShardMap::Initial(
      {.nodes = std::move(nodes), .bucket_count = bucket_count, .replication_factor = k});
  EXPECT_TRUE(map.ok()) << map.status();
  return *std::move(map);
}

ShardMap MustApply(const ShardMap& map, const ShardMapEdit& edit) {
  auto next = Apply(map, edit);
  EXPECT_TRUE(next.ok()) << next.status() << "\n" << edit.DebugString();
  return *std::move(next);
}

// Decodes `bytes`, expects `expected`, and re-encodes to the same bytes.
void ExpectRoundTrip(const ShardMap& map) {
  const std::string bytes = EncodeShardMap(map);
  auto decoded = DecodeShardMap(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status() << "\n" << map.DebugString();
  EXPECT_EQ(*decoded, map) << decoded->DebugString() << "\nvs\n" << map.DebugString();
  EXPECT_EQ(EncodeShardMap(*decoded), bytes);
}

// Every storable stage of both modes, each on its own bucket, plus a leaving node: one map.
// (Each move changes one replica, as K > 1 requires.)
ShardMap MapWithTransitions() {
  ShardMap map = MakeInitial(Nodes({1, 2, 3, 4, 5}), 16, 2);
  ShardMapEdit begin(map.epoch());
  begin.SetNodeState(NodeId(5), NodeState::kLeaving)
      .BeginTransition(BucketId(0), MoveId(10), Nodes({1, 3}), TransitionMode::kCopyThenSwitch)
      .BeginTransition(BucketId(1), MoveId(11), Nodes({4, 3}), TransitionMode::kCopyThenSwitch)
      .AdvanceStage(BucketId(1), MoveId(11), TransitionStage::kCatchUp)
      .BeginTransition(BucketId(2), MoveId(12), Nodes({4, 1}), TransitionMode::kCopyThenSwitch)
      .AdvanceStage(BucketId(2), MoveId(12), TransitionStage::kCatchUp)
      .AdvanceStage(BucketId(2), MoveId(12), TransitionStage::kPrepare)
      .BeginTransition(BucketId(3), MoveId(13), Nodes({4, 1}), TransitionMode::kCopyThenSwitch)
      .AdvanceStage(BucketId(3), MoveId(13), TransitionStage::kCatchUp)
      .AdvanceStage(BucketId(3), MoveId(13), TransitionStage::kPrepare)
      .CommitTransition(BucketId(3), MoveId(13))
      .BeginTransition(BucketId(4), MoveId(14), Nodes({5, 2}), TransitionMode::kSwitchThenCopy)
      .BeginTransition(BucketId(5), MoveId(15), Nodes({1, 3}), TransitionMode::kSwitchThenCopy)
      .AdvanceStage(BucketId(5), MoveId(15), TransitionStage::kCopy)
      .AdvanceStage(BucketId(5), MoveId(15), TransitionStage::kCatchUp)
      .CommitTransition(BucketId(5), MoveId(15))
      .BeginTransition(BucketId(6), MoveId(16), Nodes({2, 4}), TransitionMode::kSwitchThenCopy)
      .AdvanceStage(BucketId(6), MoveId(16), TransitionStage::kCopy)
      .AdvanceStage(BucketId(6), MoveId(16), TransitionStage::kCatchUp)
      .CommitTransition(BucketId(6), MoveId(16))
      .AdvanceStage(BucketId(6), MoveId(16), TransitionStage::kCleanup)
      .BeginTransition(BucketId(7), MoveId(1ull << 40), Nodes({4, 1}),
                       TransitionMode::kCopyThenSwitch)
      .AdvanceStage(BucketId(7), MoveId(1ull << 40), TransitionStage::kCatchUp)
      .AdvanceStage(BucketId(7), MoveId(1ull << 40), TransitionStage::kPrepare)
      .CommitTransition(BucketId(7), MoveId(1ull << 40))
      .AdvanceStage(BucketId(7), MoveId(1ull << 40), TransitionStage::kCleanup)
      .SplitBucket(BucketId(8), uint64_t{0x8800000000000001}, BucketId(100));
  return MustApply(map, begin);
}

TEST(ShardMapCodecTest, RoundTripsInitialMaps) {
  ExpectRoundTrip(MakeInitial(Nodes({0}), 1, 1));
  ExpectRoundTrip(MakeInitial(Nodes({7, 3}), 2, 2));
  ExpectRoundTrip(MakeInitial(Nodes({1, 2, 3}), 3, 2));
  ExpectRoundTrip(MakeInitial(Nodes({1, 2, 3, 4, 5}), 64, 3));
  ExpectRoundTrip(MakeInitial(Nodes({UINT32_MAX, 0, 1u << 31}), 1000, 3));
}

// Walks a move of each mode through every storable stage and round-trips each map on the way.
TEST(ShardMapCodecTest, RoundTripsEveryStorableStage) {
  for (TransitionMode mode : {TransitionMode::kCopyThenSwitch, TransitionMode::kSwitchThenCopy}) {
    ShardMap map = MakeInitial(Nodes({1, 2, 3, 4}), 8, 2);
    const BucketId bucket(5);
    const MoveId move(77);
    map = MustApply(map,
                    ShardMapEdit(map.epoch()).BeginTransition(bucket, move, Nodes({2, 4}), mode));
    int stored = 0;
    for (std::optional<TransitionStage> stage = FirstStage(mode); stage.has_value();
         stage = NextStage(*stage, mode)) {
      if (*stage != FirstStage(mode)) {
        ShardMapEdit edit(map.epoch());
        if (*stage == TransitionStage::kCommitted) {
          edit.CommitTransition(bucket, move);
        } else if (*stage == TransitionStage::kDone) {
          edit.FinishTransition(bucket, move);
        } else {
          edit.AdvanceStage(bucket, move, *stage);
        }
        map = MustApply(map, edit);
      }
      const BucketPlacement* placed = map.Find(bucket);
      ASSERT_NE(placed, nullptr);
      if (IsStorable(*stage, mode)) {
        ASSERT_TRUE(placed->transition.has_value());
        EXPECT_EQ(placed->transition->stage, *stage);
        ++stored;
      }
      ExpectRoundTrip(map);
    }
    EXPECT_EQ(stored, 5);  // both modes store five stages, in different orders
  }
}

TEST(ShardMapCodecTest, RoundTripsEveryStageInOneMap) { ExpectRoundTrip(MapWithTransitions()); }

TEST(ShardMapCodecTest, RoundTripsExtremeValues) {
  const uint64_t last = UINT64_MAX;
  std::vector<BucketPlacement> buckets = {
      {.id = BucketId(UINT32_MAX),
       .range = *BucketRange::Make(0, last),
       .replicas = Nodes({UINT32_MAX}),
       .transition = BucketTransition{.move = MoveId(UINT64_MAX),
                                      .source = Nodes({UINT32_MAX}),
                                      .destination = Nodes({0}),
                                      .stage = TransitionStage::kPrepare,
                                      .mode = TransitionMode::kCopyThenSwitch}},
      // The one-point bucket [2^64 - 1, 2^64).
      {.id = BucketId(0),
       .range = BucketRange::ToMax(last),
       .replicas = Nodes({0}),
       .transition = std::nullopt},
  };
  auto map = ShardMap::Create(
      MapEpoch(UINT64_MAX), 1,
      {{.id = NodeId(0)}, {.id = NodeId(UINT32_MAX), .state = NodeState::kLeaving}},
      std::move(buckets));
  ASSERT_TRUE(map.ok()) << map.status();
  ExpectRoundTrip(*map);
}

// The encoding is durable: these bytes must keep decoding to the same map forever.
TEST(ShardMapCodecTest, GoldenEncoding) {
  const ShardMap map = MakeInitial(Nodes({1, 2}), 2, 1);
  // version 2, e1, K=1, min_in_sync 1, 2 nodes (n1 active store 0, n2 active store 0),
  // 2 buckets: b0 [0, 2^63) finite end, replicas [n1], term 1, no transition;
  // b1 [2^63, 2^64) end at max, replicas [n2], term 1, no transition.
  const std::string expected(
      "\x02\x01\x01\x01\x02\x01\x00\x00\x02\x00\x00\x02"
      "\x00\x00\x00\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01\x01\x01\x01\x00"
      "\x01\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01\x01\x01\x02\x01\x00",
      45);
  EXPECT_EQ(EncodeShardMap(map), expected);
  auto decoded = DecodeShardMap(expected);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, map);
}

// Format 1 (no min_in_sync, store ids or terms) still decodes: the default floor for K, store
// ids 0, terms 1; the map re-encodes as format 2.
TEST(ShardMapCodecTest, FormatOneStillDecodes) {
  const ShardMap map = MakeInitial(Nodes({1, 2}), 2, 1);
  const std::string format_one(
      "\x01\x01\x01\x02\x01\x00\x02\x00\x02"
      "\x00\x00\x00\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01\x01\x01\x00"
      "\x01\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01\x01\x01\x02\x00",
      40);
  auto decoded = DecodeShardMap(format_one);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, map);
  EXPECT_EQ(decoded->min_in_sync(), 1u);
  for (const BucketPlacement& bucket : decoded->buckets()) EXPECT_EQ(bucket.term, Term(1));
  for (const NodeInfo& node : decoded->nodes()) EXPECT_EQ(node.store_id, 0u);
  EXPECT_EQ(EncodeShardMap(*decoded)[0], static_cast<char>(kShardMapFormatVersion));
}

// Terms, store ids and the floor round-trip; a term 0 or beyond the epoch, and a floor of 0 or
// above K, are refused.
TEST(ShardMapCodecTest, RoundTripsReplicationFields) {
  const ShardMap initial = MakeInitial(Nodes({1, 2, 3}), 4, 3);
  std::vector<NodeInfo> nodes(initial.nodes().begin(), initial.nodes().end());
  nodes[0].store_id = 0xfeedfacecafebeefull;
  nodes[2].store_id = 7;
  std::vector<BucketPlacement> buckets(initial.buckets().begin(), initial.buckets().end());
  buckets[1].term = Term(9);
  auto map = ShardMap::Create(MapEpoch(9), 3, nodes, buckets, /*min_in_sync=*/3);
  ASSERT_TRUE(map.ok()) << map.status();
  ExpectRoundTrip(*map);
  EXPECT_EQ(map->min_in_sync(), 3u);

  buckets[1].term = Term(10);
  EXPECT_FALSE(ShardMap::Create(MapEpoch(9), 3, nodes, buckets).ok()) << "term beyond the epoch";
  buckets[1].term = Term(0);
  EXPECT_FALSE(ShardMap::Create(MapEpoch(9), 3, nodes, buckets).ok()) << "term 0";
  buckets[1].term = Term(1);
  EXPECT_FALSE(ShardMap::Create(MapEpoch(9), 3, nodes, buckets, 4).ok()) << "floor above K";
  EXPECT_EQ(ShardMap::Create(MapEpoch(9), 3, nodes, buckets)->min_in_sync(), 2u);

  // The encoded floor 0 is refused, not read as "the default".
  std::string bytes = EncodeShardMap(*map);
  ASSERT_EQ(bytes[3], '\x03');
  bytes[3] = '\x00';
  EXPECT_EQ(DecodeShardMap(bytes).status().code(), StatusCode::kInvalidArgument);
}

TEST(ShardMapCodecTest, EveryTruncationIsRejected) {
  const std::string bytes = EncodeShardMap(MapWithTransitions());
  for (size_t length = 0; length < bytes.size(); ++length) {
    auto decoded = DecodeShardMap(std::string_view(bytes).substr(0, length));
    ASSERT_FALSE(decoded.ok()) << "length " << length;
    EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument) << "length " << length;
  }
}

TEST(ShardMapCodecTest, RejectsGarbage) {
  // One node n1, one bucket b0 covering everything: a valid base to corrupt field by field.
  const std::string good("\x01\x01\x01\x01\x01\x00\x01\x00\x00\x01\x01\x01\x00", 13);
  ASSERT_TRUE(DecodeShardMap(good).ok());
  auto rejects = [](const std::string& bytes, std::string_view why) {
    auto decoded = DecodeShardMap(bytes);
    EXPECT_FALSE(decoded.ok()) << why;
    EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument) << why;
  };
  auto with = [&good](size_t at, char value) {
    std::string bytes = good;
    bytes[at] = value;
    return bytes;
  };
  rejects("", "empty");
  rejects(with(0, '\x03'), "unknown version");
  rejects(with(0, '\x00'), "version 0");
  rejects(good + '\0', "trailing byte");
  rejects(with(1, '\x00'), "epoch 0");
  rejects(with(2, '\x00'), "K = 0");
  rejects(with(5, '\x02'), "unknown node state");
  rejects(with(8, '\x01'), "gap before the first bucket");
  rejects(with(9, '\x02'), "unknown end kind");
  rejects(with(9, '\x00'), "finite end without its varint");
  rejects(std::string("\x01\x01\x01\x01\x01\x00\x01\x00\x00\x01\x00\x00", 12), "no replicas");
  rejects(with(11, '\x02'), "replica is not a member");
  rejects(with(12, '\x02'), "unknown transition flag");
  rejects(with(12, '\x01'), "transition without its fields");
  // Non-minimal epoch (1 as two bytes), an 11-byte varint, counts far beyond the input.
  rejects(std::string("\x01\x81\x00", 3) + good.substr(2), "non-minimal varint");
  rejects(std::string("\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 11) + good.substr(2),
          "overlong varint");
  rejects(std::string("\x01\x01\x01\xff\xff\xff\xff\x0f", 8), "node count");
  rejects(std::string("\x01\x01\x01\x01\x01\x00\xff\xff\xff\xff\x0f", 11), "bucket count");
  // Nodes out of order or repeated.
  rejects(std::string("\x01\x01\x01\x02\x02\x00\x01\x00\x01\x00\x00\x01\x01\x01\x00", 15),
          "nodes out of order");
  rejects(std::string("\x01\x01\x01\x02\x01\x00\x01\x00\x01\x00\x00\x01\x01\x01\x00", 15),
          "node repeated");
  // Two buckets: [0, 0) is empty; buckets out of order; overlapping ranges.
  rejects(std::string("\x01\x01\x01\x01\x01\x00\x02"
                      "\x00\x00\x00\x00\x01\x01\x00"
                      "\x01\x00\x01\x01\x01\x00",
                      20),
          "empty range");
  rejects(std::string("\x01\x01\x01\x01\x01\x00\x02"
                      "\x01\x05\x01\x01\x01\x00"
                      "\x00\x00\x00\x05\x01\x01\x00",
                      20),
          "buckets out of order");
  rejects(std::string("\x01\x01\x01\x01\x01\x00\x02"
                      "\x00\x00\x00\x06\x01\x01\x00"
                      "\x01\x05\x01\x01\x01\x00",
                      20),
          "overlap");
  // A transition in a terminal stage, or one whose source is not the stable replicas.
  rejects(std::string("\x01\x01\x01\x02\x01\x00\x02\x00\x01\x00\x00\x01\x01\x01\x01"
                      "\x07\x01\x01\x01\x02\x05\x00",
                      22),
          "terminal stage");
  rejects(std::string("\x01\x01\x01\x02\x01\x00\x02\x00\x01\x00\x00\x01\x01\x01\x01"
                      "\x07\x01\x02\x01\x01\x00\x00",
                      22),
          "source differs from the replicas");
  rejects(std::string("\x01\x01\x01\x02\x01\x00\x02\x00\x01\x00\x00\x01\x01\x01\x01"
                      "\x07\x01\x01\x01\x02\x00\x02",
                      22),
          "unknown mode");
}

// The same base with a valid transition decodes (so the rejections above are for their reason).
TEST(ShardMapCodecTest, AcceptsTheValidTransitionTheGarbageTestCorrupts) {
  auto decoded =
      DecodeShardMap(std::string("\x01\x01\x01\x02\x01\x00\x02\x00\x01\x00\x00\x01"
                                 "\x01\x01\x01\x07\x01\x01\x01\x02\x00\x00",
                                 22));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_TRUE(decoded->buckets()[0].transition.has_value());
  EXPECT_EQ(decoded->buckets()[0].transition->destination, Nodes({2}));
}

// A map built by a random walk of edits from an Initial map (invalid edits are skipped).
rc::Gen<ShardMap> GenMap() {
  return rc::gen::exec([] {
    const auto node_count = *rc::gen::inRange<uint32_t>(1, testing::kGenNodeIds + 1);
    std::vector<NodeId> nodes;
    for (uint32_t i = 0; i < node_count; ++i) nodes.push_back(NodeId(i));
    const auto k = *rc::gen::inRange<uint32_t>(1, node_count + 1);
    const auto bucket_count = *rc::gen::inRange<uint32_t>(1, 17);
    auto map = ShardMap::Initial(
        {.nodes = std::move(nodes), .bucket_count = bucket_count, .replication_factor = k});
    RC_ASSERT(map.ok());
    ShardMap current = *std::move(map);
    // One operation per edit, so that most steps apply (an edit is all-or-nothing).
    const auto steps = *rc::gen::inRange(0, 40);
    for (int i = 0; i < steps; ++i) {
      auto next = Apply(current, ShardMapEdit(current.epoch()).Add(*testing::GenOp()));
      if (next.ok()) current = *std::move(next);
    }
    return current;
  });
}

RC_GTEST_PROP(ShardMapCodecProperty, EncodeDecodeEncodeRoundTrips, ()) {
  const ShardMap map = *GenMap();
  RC_CLASSIFY(map.TransitionCount() > 0, "with transitions");
  const std::string bytes = EncodeShardMap(map);
  auto decoded = DecodeShardMap(bytes);
  RC_ASSERT(decoded.ok());
  RC_ASSERT(*decoded == map);
  RC_ASSERT(EncodeShardMap(*decoded) == bytes);
}

// Corrupted bytes never crash the decoder (ASan checks the bounds); whatever it accepts is a
// valid map that re-encodes to the same bytes.
RC_GTEST_PROP(ShardMapCodecProperty, DecodeOfCorruptBytesIsSafeAndCanonical, ()) {
  std::string bytes = EncodeShardMap(*GenMap());
  const auto flips = *rc::gen::container<std::vector<std::pair<size_t, uint8_t>>>(
      rc::gen::pair(rc::gen::arbitrary<size_t>(), rc::gen::arbitrary<uint8_t>()));
  for (const auto& [at, value] : flips) bytes[at % bytes.size()] = static_cast<char>(value);
  if (*rc::gen::arbitrary<bool>()) bytes.resize(*rc::gen::inRange<size_t>(0, bytes.size() + 1));
  auto decoded = DecodeShardMap(bytes);
  if (decoded.ok()) {
    RC_ASSERT(decoded->CheckInvariants().ok());
    RC_ASSERT(EncodeShardMap(*decoded) == bytes);
  } else {
    RC_ASSERT(decoded.status().code() == StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace shoal::cluster
