#include "src/net/wire_codec.h"

#include <gtest/gtest.h>

#include "src/cluster/shard_map_codec.h"
#include "src/cluster/shard_map_edit.h"
#include "src/storage/errors.h"

namespace shoal::net {
namespace {

// Encode -> decode -> encode gives the same bytes.
void ExpectRoundTrip(const transport::Request& request) {
  wire::Request first;
  ToWire(request, &first);
  auto decoded = FromWire(first);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->index(), request.index());
  wire::Request second;
  ToWire(*decoded, &second);
  EXPECT_EQ(first.SerializeAsString(), second.SerializeAsString());
}

TEST(WireCodecTest, RequestsRoundTrip) {
  ExpectRoundTrip(transport::WriteRequest{.epoch = MapEpoch(7),
                                          .op = transport::WriteOp::kCompareAndSet,
                                          .collection = CollectionId(3),
                                          .primary_key = std::string("k\0y", 3),
                                          .body = R"({"a":1})",
                                          .expected_version = 9,
                                          .via_move = MoveId(4)});
  storage::DocumentFilter filter;
  filter.all_of.push_back({.path = "a.b", .op = storage::CompareOp::kGe, .value = int64_t{30}});
  filter.all_of.push_back({.path = "c", .op = storage::CompareOp::kEq, .value = nullptr});
  filter.all_of.push_back({.path = "d", .op = storage::CompareOp::kNe, .value = std::string("x")});
  ExpectRoundTrip(transport::ScanRequest{.epoch = MapEpoch(2),
                                         .bucket = BucketId(5),
                                         .range = storage::PointRange::From(100),
                                         .collection = CollectionId(1),
                                         .filter = filter,
                                         .cursor = "c",
                                         .max_documents = 10,
                                         .via_move = std::nullopt,
                                         .include_tombstones = false});
  ExpectRoundTrip(transport::CatchUpRequest{.move = MoveId(1),
                                            .bucket = BucketId(2),
                                            .source = NodeId(3),
                                            .after_sequence = 4,
                                            .until_sequence = 5,
                                            .stop_below = 6});
  ExpectRoundTrip(transport::IngestBucketRequest{
      .move = MoveId(8),
      .bucket = BucketId(9),
      .exported = storage::ExportedRange{.range = storage::PointRange::From(10),
                                         .files = {"/a/export-0.sst"},
                                         .sequence = 11,
                                         .entries = 12,
                                         .bytes = 13,
                                         .max_version = 14,
                                         .live_documents = 10,
                                         .live_bytes = 12}});
  ExpectRoundTrip(transport::HeartbeatRequest{.node = NodeId(2),
                                              .epoch = MapEpoch(3),
                                              .store_id = 0xfeed,
                                              .incarnation = 77,
                                              .fenced = {{.bucket = BucketId(1), .term = Term(2)}},
                                              .quiesced = {{.bucket = BucketId(3), .token = 99}}});
  ExpectRoundTrip(transport::QuiesceRequest{
      .epoch = MapEpoch(7), .buckets = {BucketId(2), BucketId(3)}, .token = 1234, .release = true});
  ExpectRoundTrip(transport::GetRequest{.epoch = MapEpoch(2),
                                        .collection = CollectionId(3),
                                        .primary_key = "k",
                                        .via_move = std::nullopt,
                                        .include_tombstones = false,
                                        .any_replica = true});
  ExpectRoundTrip(transport::GetMapRequest{});
  ExpectRoundTrip(transport::ReplicateRequest{
      .primary = NodeId(1),
      .epoch = MapEpoch(4),
      .entries = {storage::ReplicatedEntry{
          .bucket = BucketId(2), .position = {Term(3), 9}, .documents = {}}},
      .terms = {{.bucket = BucketId(2), .term = Term(4), .committed = 8},
                {.bucket = BucketId(6), .term = Term(1)}}});
  ExpectRoundTrip(transport::ReplicaReportRequest{.primary = NodeId(1),
                                                  .bucket = BucketId(2),
                                                  .term = Term(3),
                                                  .backup = NodeId(4),
                                                  .reason = "a gap",
                                                  .broken = true});
  ExpectRoundTrip(
      transport::SealTermRequest{.buckets = {{.bucket = BucketId(5), .term = Term(2)}}});
  ExpectRoundTrip(transport::ResumeCopyRequest{
      .move = MoveId(3), .bucket = BucketId(4), .source = NodeId(5), .store_id = 0xbeef});
  ExpectRoundTrip(transport::RetainedLogRequest{
      .move = MoveId(3),
      .bucket = BucketId(4),
      .copy = {.position = {Term(6), 12}, .history = {{Term(2), 1}, {Term(6), 10}}}});
  for (transport::DropReason reason :
       {transport::DropReason::kLeavingCopy, transport::DropReason::kAbortedStaging}) {
    ExpectRoundTrip(transport::DropBucketRequest{.epoch = MapEpoch(5),
                                                 .move = MoveId(6),
                                                 .bucket = BucketId(7),
                                                 .range = storage::PointRange::From(8),
                                                 .reason = reason});
  }
}

TEST(WireCodecTest, ResumeCopyResponseRoundTrips) {
  for (const transport::ResumeCopyResponse& answer :
       {transport::ResumeCopyResponse{.sequence = 4242, .position = {Term(6), 12}},
        transport::ResumeCopyResponse{.sequence = std::nullopt, .refused = "divergent"}}) {
    wire::Response first;
    ToWire(transport::Response::Ok(answer), &first);
    auto decoded = FromWire(first);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    auto body = transport::BodyAs<transport::ResumeCopyResponse>(std::move(*decoded));
    ASSERT_TRUE(body.ok()) << body.status();
    EXPECT_EQ(body->sequence, answer.sequence);
    EXPECT_EQ(body->refused, answer.refused);
    EXPECT_EQ(body->position, answer.position);
  }
}

TEST(WireCodecTest, HeartbeatResponseRoundTripsItsReleases) {
  const transport::HeartbeatResponse answer{.epoch = MapEpoch(12),
                                            .released = {{.bucket = BucketId(4), .token = 5678}}};
  wire::Response first;
  ToWire(transport::Response::Ok(answer), &first);
  auto decoded = FromWire(first);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  auto body = transport::BodyAs<transport::HeartbeatResponse>(std::move(*decoded));
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(body->epoch, MapEpoch(12));
  ASSERT_EQ(body->released.size(), 1u);
  EXPECT_EQ(body->released[0].bucket, BucketId(4));
  EXPECT_EQ(body->released[0].token, 5678u);
}

TEST(WireCodecTest, SealTermResponseRoundTrips) {
  const transport::SealTermResponse sealed{
      .store_id = 0xabc,
      .buckets = {
          {.bucket = BucketId(3), .position = {Term(2), 40}, .micros_since_ack = 1500},
          {.bucket = BucketId(4), .position = {Term(1), 0}, .micros_since_ack = UINT64_MAX}}};
  wire::Response first;
  ToWire(transport::Response::Ok(sealed), &first);
  auto decoded = FromWire(first);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  auto body = transport::BodyAs<transport::SealTermResponse>(std::move(*decoded));
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(body->store_id, 0xabcu);
  ASSERT_EQ(body->buckets.size(), 2u);
  EXPECT_EQ(body->buckets[0].position.rseq, 40u);
  EXPECT_EQ(body->buckets[0].micros_since_ack, 1500u);
  EXPECT_EQ(body->buckets[1].micros_since_ack, UINT64_MAX);
}

TEST(WireCodecTest, BucketLoadWithHotKeysRoundTrips) {
  const transport::BucketLoadResponse load{
      .buckets = {{.bucket = BucketId(3),
                   .bytes = 100,
                   .documents = 7,
                   .reads_per_second = 2.5,
                   .writes_per_second = 0.75}},
      .hot_keys = {{.collection = CollectionId(2),
                    .primary_key = std::string("h\0t", 3),
                    .writes_per_second = 12.5,
                    .error_per_second = 0.25},
                   {.collection = CollectionId(5),
                    .primary_key = "cool",
                    .writes_per_second = 0.5,
                    .error_per_second = 0}},
      .disk = transport::DiskSpaceReport{.free_bytes = uint64_t{5} << 40,
                                         .reserve_bytes = uint64_t{128} << 20},
      .held = {{.bucket = BucketId(8),
                .range = *storage::PointRange::Make(16, 32),
                .position = {Term(4), 9}},
               {.bucket = BucketId(9), .range = storage::PointRange::From(32), .position = {}}}};
  wire::Response first;
  ToWire(transport::Response::Ok(load), &first);
  auto decoded = FromWire(first);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  wire::Response second;
  ToWire(*decoded, &second);
  EXPECT_EQ(first.SerializeAsString(), second.SerializeAsString());
  auto body = transport::BodyAs<transport::BucketLoadResponse>(std::move(*decoded));
  ASSERT_TRUE(body.ok()) << body.status();
  ASSERT_EQ(body->buckets.size(), 1u);
  EXPECT_EQ(body->buckets[0].documents, 7u);
  EXPECT_EQ(body->buckets[0].reads_per_second, 2.5);
  EXPECT_EQ(body->buckets[0].writes_per_second, 0.75);
  ASSERT_EQ(body->hot_keys.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(body->hot_keys[i].collection, load.hot_keys[i].collection) << i;
    EXPECT_EQ(body->hot_keys[i].primary_key, load.hot_keys[i].primary_key) << i;
    EXPECT_EQ(body->hot_keys[i].writes_per_second, load.hot_keys[i].writes_per_second) << i;
    EXPECT_EQ(body->hot_keys[i].error_per_second, load.hot_keys[i].error_per_second) << i;
  }
  ASSERT_TRUE(body->disk.has_value());
  EXPECT_EQ(body->disk->free_bytes, uint64_t{5} << 40);
  EXPECT_EQ(body->disk->reserve_bytes, uint64_t{128} << 20);
  ASSERT_EQ(body->held.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(body->held[i].bucket, load.held[i].bucket) << i;
    EXPECT_EQ(body->held[i].range, load.held[i].range) << i;
    EXPECT_EQ(body->held[i].position, load.held[i].position) << i;
  }
  // A node that could not read its disk sends none, and none arrives.
  wire::Response without;
  ToWire(transport::Response::Ok(transport::BucketLoadResponse{}), &without);
  auto none = transport::BodyAs<transport::BucketLoadResponse>(*FromWire(without));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->disk.has_value());
}

TEST(WireCodecTest, MoveFileChunksRoundTrip) {
  ExpectRoundTrip(transport::FetchMoveFileRequest{.move = MoveId(4),
                                                  .bucket = BucketId(9),
                                                  .sequence = 77,
                                                  .file_index = 2,
                                                  .offset = uint64_t{5} << 32,
                                                  .max_bytes = 65536});
  const transport::FetchMoveFileResponse chunk{.data = std::string("s\0st", 4),
                                               .chunk_crc32c = 0xDEADBEEFu,
                                               .file_bytes = uint64_t{3} << 32,
                                               .file_crc32c = 0xFFFFFFFFu,
                                               .file_count = 3};
  wire::Response encoded;
  ToWire(transport::Response::Ok(chunk), &encoded);
  auto decoded = FromWire(encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  auto body = transport::BodyAs<transport::FetchMoveFileResponse>(std::move(*decoded));
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(body->data, chunk.data);
  EXPECT_EQ(body->chunk_crc32c, chunk.chunk_crc32c);
  EXPECT_EQ(body->file_bytes, chunk.file_bytes);
  EXPECT_EQ(body->file_crc32c, chunk.file_crc32c);
  EXPECT_EQ(body->file_count, chunk.file_count);
}

TEST(WireCodecTest, BatchWritesRoundTrip) {
  transport::BatchWriteRequest batch{.epoch = MapEpoch(11), .writes = {}};
  for (auto op : {transport::WriteOp::kInsert, transport::WriteOp::kDelete,
                  transport::WriteOp::kCompareAndSet}) {
    batch.writes.push_back(transport::WriteRequest{.epoch = {},
                                                   .op = op,
                                                   .collection = CollectionId(2),
                                                   .primary_key = std::string("k\0", 2),
                                                   .body = "{}",
                                                   .expected_version = 5,
                                                   .via_move = std::nullopt});
  }
  ExpectRoundTrip(batch);

  // Each slot keeps its status with its typed reason, and its version.
  const transport::BatchWriteResponse results{
      .results = {
          {.status = OkStatus(), .version = 42},
          {.status = storage::StorageError(storage::ErrorReason::kNotFound, "gone"), .version = 0},
          {.status = transport::MakeClusterError(transport::ClusterError::kWrongShard, "moved"),
           .version = 0}}};
  wire::Response encoded;
  ToWire(transport::Response::Ok(results), &encoded);
  auto decoded = FromWire(encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  auto body = transport::BodyAs<transport::BatchWriteResponse>(std::move(*decoded));
  ASSERT_TRUE(body.ok()) << body.status();
  ASSERT_EQ(body->results.size(), 3u);
  EXPECT_TRUE(body->results[0].status.ok());
  EXPECT_EQ(body->results[0].version, 42u);
  EXPECT_TRUE(storage::Is(body->results[1].status, storage::ErrorReason::kNotFound));
  EXPECT_EQ(transport::ClusterErrorOf(body->results[2].status),
            transport::ClusterError::kWrongShard);
}

TEST(WireCodecTest, BatchGetsRoundTrip) {
  transport::BatchGetRequest batch{.epoch = MapEpoch(12), .gets = {}};
  for (const std::string& key : {std::string("a"), std::string("b\0c", 3), std::string()}) {
    batch.gets.push_back(transport::GetRequest{.epoch = {},
                                               .collection = CollectionId(3),
                                               .primary_key = key,
                                               .via_move = std::nullopt,
                                               .include_tombstones = false});
  }
  ExpectRoundTrip(batch);

  // Each slot keeps its status with its typed reason, and its document.
  const storage::Document doc{.collection = CollectionId(3),
                              .primary_key = "a",
                              .body = R"({"x": 1})",
                              .version = 9,
                              .tombstone = false};
  const transport::BatchGetResponse results{
      .results = {
          {.status = OkStatus(), .document = doc},
          {.status = storage::StorageError(storage::ErrorReason::kNotFound, "gone"),
           .document = {}},
          {.status = transport::MakeClusterError(transport::ClusterError::kWrongShard, "moved"),
           .document = {}}}};
  wire::Response encoded;
  ToWire(transport::Response::Ok(results), &encoded);
  auto decoded = FromWire(encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  auto body = transport::BodyAs<transport::BatchGetResponse>(std::move(*decoded));
  ASSERT_TRUE(body.ok()) << body.status();
  ASSERT_EQ(body->results.size(), 3u);
  EXPECT_TRUE(body->results[0].status.ok());
  EXPECT_EQ(body->results[0].document, doc);
  EXPECT_TRUE(storage::Is(body->results[1].status, storage::ErrorReason::kNotFound));
  EXPECT_EQ(transport::ClusterErrorOf(body->results[2].status),
            transport::ClusterError::kWrongShard);
}

TEST(WireCodecTest, TypedErrorsSurvive) {
  const Status wrong = transport::MakeClusterError(transport::ClusterError::kWrongShard, "moved");
  wire::Status w;
  ToWire(wrong, &w);
  const Status back = FromWire(w);
  EXPECT_EQ(back.code(), wrong.code());
  EXPECT_EQ(transport::ClusterErrorOf(back), transport::ClusterError::kWrongShard);

  const Status duplicate = storage::StorageError(storage::ErrorReason::kDuplicate, "taken");
  wire::Status d;
  ToWire(duplicate, &d);
  EXPECT_TRUE(storage::Is(FromWire(d), storage::ErrorReason::kDuplicate));
  EXPECT_EQ(FromWire(d).code(), StatusCode::kAlreadyExists);

  wire::Status ok;
  ToWire(OkStatus(), &ok);
  EXPECT_TRUE(FromWire(ok).ok());
}

TEST(WireCodecTest, MalformedInputIsRejected) {
  wire::Request empty;
  EXPECT_EQ(FromWire(empty).status().code(), StatusCode::kInvalidArgument);
  wire::Request bad_range;
  bad_range.mutable_drop_bucket()->mutable_range()->set_begin(10);
  bad_range.mutable_drop_bucket()->mutable_range()->set_end(5);
  EXPECT_FALSE(FromWire(bad_range).ok());
  // A drop whose reason this build does not know deletes nothing.
  wire::Request unknown_drop;
  unknown_drop.mutable_drop_bucket()->mutable_range()->set_end_is_max(true);
  unknown_drop.mutable_drop_bucket()->set_reason(static_cast<wire::DropBucketRequest::Reason>(9));
  EXPECT_EQ(FromWire(unknown_drop).status().code(), StatusCode::kInvalidArgument);
  // An export whose live part is larger than the whole would seed a wrong bucket size.
  wire::Request bad_export;
  bad_export.mutable_ingest_bucket()->mutable_exported()->set_entries(2);
  bad_export.mutable_ingest_bucket()->mutable_exported()->set_live_documents(3);
  EXPECT_EQ(FromWire(bad_export).status().code(), StatusCode::kInvalidArgument);
  wire::Response bad_map;
  bad_map.set_route("not a map");
  EXPECT_EQ(FromWire(bad_map).status().code(), StatusCode::kInvalidArgument);
}

// Every storable stage of both modes on buckets of their own, a leaving node, a split that
// leaves the last bucket ending at 2^64 and ids near their limits.
cluster::ShardMapPtr MapWithTransitions() {
  const auto nodes = [](std::initializer_list<uint32_t> ids) {
    std::vector<NodeId> out;
    for (uint32_t id : ids) out.emplace_back(id);
    return out;
  };
  auto initial = cluster::ShardMap::Initial(
      {.nodes = nodes({1, 2, 3, 4, 5, UINT32_MAX}), .bucket_count = 12, .replication_factor = 2});
  EXPECT_TRUE(initial.ok()) << initial.status();
  using cluster::TransitionMode;
  using cluster::TransitionStage;
  cluster::ShardMapEdit edit(initial->epoch());
  edit.SetNodeState(NodeId(5), cluster::NodeState::kLeaving)
      .BeginTransition(BucketId(0), MoveId(10), nodes({1, 3}), TransitionMode::kCopyThenSwitch)
      .BeginTransition(BucketId(1), MoveId(11), nodes({4, 3}), TransitionMode::kCopyThenSwitch)
      .AdvanceStage(BucketId(1), MoveId(11), TransitionStage::kCatchUp)
      .BeginTransition(BucketId(2), MoveId(12), nodes({4, 1}), TransitionMode::kCopyThenSwitch)
      .AdvanceStage(BucketId(2), MoveId(12), TransitionStage::kCatchUp)
      .AdvanceStage(BucketId(2), MoveId(12), TransitionStage::kPrepare)
      .BeginTransition(BucketId(3), MoveId(13), nodes({4, 1}), TransitionMode::kCopyThenSwitch)
      .AdvanceStage(BucketId(3), MoveId(13), TransitionStage::kCatchUp)
      .AdvanceStage(BucketId(3), MoveId(13), TransitionStage::kPrepare)
      .CommitTransition(BucketId(3), MoveId(13))
      .AdvanceStage(BucketId(3), MoveId(13), TransitionStage::kCleanup)
      .BeginTransition(BucketId(4), MoveId(14), nodes({5, 1}), TransitionMode::kSwitchThenCopy)
      .BeginTransition(BucketId(5), MoveId(15), nodes({UINT32_MAX, 2}),
                       TransitionMode::kSwitchThenCopy)
      .AdvanceStage(BucketId(5), MoveId(15), TransitionStage::kCopy)
      .BeginTransition(BucketId(6), MoveId(16), nodes({1, 3}), TransitionMode::kSwitchThenCopy)
      .AdvanceStage(BucketId(6), MoveId(16), TransitionStage::kCopy)
      .AdvanceStage(BucketId(6), MoveId(16), TransitionStage::kCatchUp)
      .BeginTransition(BucketId(7), MoveId(uint64_t{1} << 40), nodes({2, 4}),
                       TransitionMode::kSwitchThenCopy)
      .AdvanceStage(BucketId(7), MoveId(uint64_t{1} << 40), TransitionStage::kCopy)
      .AdvanceStage(BucketId(7), MoveId(uint64_t{1} << 40), TransitionStage::kCatchUp)
      .CommitTransition(BucketId(7), MoveId(uint64_t{1} << 40))
      .SplitBucket(BucketId(11), uint64_t{0xF000000000000001}, BucketId(UINT32_MAX));
  auto map = cluster::Apply(*initial, edit);
  EXPECT_TRUE(map.ok()) << map.status();
  return std::make_shared<const cluster::ShardMap>(*std::move(map));
}

// The map as messages, serialized and parsed as a peer would, decoded again.
StatusOr<cluster::ShardMapPtr> ThroughMessages(const cluster::ShardMap& map) {
  wire::ShardMap message;
  ToWire(map, &message);
  wire::ShardMap parsed;
  EXPECT_TRUE(parsed.ParseFromString(message.SerializeAsString()));
  return FromWire(parsed);
}

TEST(WireCodecTest, MapMessagesDecodeToTheMapOfTheBytes) {
  const cluster::ShardMapPtr map = MapWithTransitions();
  ASSERT_NE(map, nullptr);
  ASSERT_EQ(map->TransitionCount(), 8u);
  auto from_bytes = DecodeMap(EncodeMap(map));
  ASSERT_TRUE(from_bytes.ok()) << from_bytes.status();
  auto from_messages = ThroughMessages(*map);
  ASSERT_TRUE(from_messages.ok()) << from_messages.status();
  EXPECT_EQ(**from_messages, **from_bytes) << (*from_messages)->DebugString();
  EXPECT_EQ(**from_messages, *map);
  EXPECT_EQ(EncodeMap(*from_messages), EncodeMap(map));

  // Each bucket names the node a client sends to: the source before a copy-then-switch commit,
  // the destination from a switch-then-copy switch (kCopy) or any commit on.
  wire::ShardMap message;
  ToWire(*map, &message);
  ASSERT_EQ(message.buckets_size(), 13);
  EXPECT_EQ(message.buckets(0).owner(), map->buckets()[0].replicas.front().value());
  EXPECT_EQ(message.buckets(0).transition().stage(), wire::MapTransition::COPY);
  EXPECT_EQ(message.buckets(3).owner(), 4u);  // committed and in cleanup: the destination
  EXPECT_EQ(message.buckets(3).transition().stage(), wire::MapTransition::CLEANUP);
  EXPECT_EQ(message.buckets(4).owner(), map->buckets()[4].replicas.front().value());  // prepare
  // Switched: the destination, whose primary is the source's (a replicated bucket's
  // switch-then-copy move keeps its primary).
  EXPECT_EQ(message.buckets(5).owner(), UINT32_MAX);
  EXPECT_EQ(message.buckets(2).owner(), 3u);  // kPrepare: the source, not the destination's 4
  EXPECT_EQ(message.buckets(5).transition().mode(), wire::MapTransition::SWITCH_THEN_COPY);
  EXPECT_EQ(message.nodes(4).state(), wire::MapNode::LEAVING);
  EXPECT_TRUE(message.buckets(12).range().end_is_max());
  EXPECT_FALSE(message.buckets(11).range().end_is_max());
  EXPECT_EQ(message.buckets(11).range().end(), message.buckets(12).range().begin());
}

TEST(WireCodecTest, MapMessagesOfInitialMapsRoundTrip) {
  for (uint32_t buckets : {1u, 32u, 4096u}) {
    auto initial = cluster::ShardMap::Initial({.nodes = {NodeId(1), NodeId(2), NodeId(3)},
                                               .bucket_count = buckets,
                                               .replication_factor = 1});
    ASSERT_TRUE(initial.ok()) << initial.status();
    auto decoded = ThroughMessages(*initial);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(**decoded, *initial);
  }
}

TEST(WireCodecTest, GetMapAnswersTheMapAsMessagesOnRequest) {
  const cluster::ShardMapPtr map = MapWithTransitions();
  const transport::Response response = transport::Response::Ok(transport::GetMapResponse{
      .state = {.map = map, .collections = {{.id = CollectionId(2), .name = "users"}}}});
  wire::Request plain;
  plain.mutable_get_map();
  wire::Response without;
  ToWireAnswering(plain, response, &without);
  EXPECT_FALSE(without.get_map().has_map());
  EXPECT_FALSE(without.get_map().state().map().empty());

  wire::Request structured;
  structured.mutable_get_map()->set_structured(true);
  wire::Response with;
  ToWireAnswering(structured, response, &with);
  ASSERT_TRUE(with.get_map().has_map());
  EXPECT_EQ(with.get_map().state().map(), without.get_map().state().map());
  auto decoded = FromWire(with.get_map().map());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(**decoded, *map);
  // The C++ decoder of the response still reads the bytes.
  auto back = FromWire(with);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*std::get<transport::GetMapResponse>(back->body).state.map, *map);
}

TEST(WireCodecTest, MalformedMapMessagesAreRejected) {
  wire::ShardMap good;
  ToWire(*MapWithTransitions(), &good);
  const auto expect_invalid = [](const wire::ShardMap& message, std::string_view what) {
    auto decoded = FromWire(message);
    EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument) << what;
  };
  {
    wire::ShardMap m = good;
    m.mutable_buckets(0)->mutable_transition()->set_stage(
        static_cast<wire::MapTransition::Stage>(5));
    expect_invalid(m, "a terminal stage");
  }
  {
    wire::ShardMap m = good;
    m.mutable_buckets(0)->mutable_transition()->set_mode(static_cast<wire::MapTransition::Mode>(2));
    expect_invalid(m, "an unknown mode");
  }
  {
    wire::ShardMap m = good;
    m.mutable_nodes(0)->set_state(static_cast<wire::MapNode::State>(2));
    expect_invalid(m, "an unknown node state");
  }
  {
    wire::ShardMap m = good;
    m.mutable_buckets(2)->set_owner(m.buckets(2).transition().destination(0));
    expect_invalid(m, "the owner is not the acknowledging replica");
  }
  {
    wire::ShardMap m = good;
    m.mutable_buckets()->SwapElements(1, 2);
    expect_invalid(m, "buckets out of order");
  }
  {
    wire::ShardMap m = good;
    m.mutable_nodes()->SwapElements(0, 1);
    expect_invalid(m, "nodes out of order");
  }
  {
    wire::ShardMap m = good;
    m.mutable_buckets(3)->mutable_range()->set_end(m.buckets(3).range().end() - 1);
    expect_invalid(m, "a gap in the hash space");
  }
  {
    wire::ShardMap m = good;
    m.mutable_buckets(2)->mutable_range()->set_end(m.buckets(2).range().begin());
    expect_invalid(m, "an empty range");
  }
  {
    wire::ShardMap m = good;
    m.mutable_buckets(1)->clear_replicas();
    expect_invalid(m, "no replica");
  }
  {
    wire::ShardMap m = good;
    m.set_epoch(0);
    expect_invalid(m, "epoch 0");
  }
}

}  // namespace
}  // namespace shoal::net
