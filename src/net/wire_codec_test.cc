#include "src/net/wire_codec.h"

#include <gtest/gtest.h>

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
  ExpectRoundTrip(transport::HeartbeatRequest{.node = NodeId(2), .epoch = MapEpoch(3)});
  ExpectRoundTrip(transport::GetMapRequest{});
}

TEST(WireCodecTest, BucketLoadWithHotKeysRoundTrips) {
  const transport::BucketLoadResponse load{
      .buckets = {{.bucket = BucketId(3), .bytes = 100, .documents = 7}},
      .hot_keys = {{.collection = CollectionId(2),
                    .primary_key = std::string("h\0t", 3),
                    .writes_per_second = 12.5,
                    .error_per_second = 0.25},
                   {.collection = CollectionId(5),
                    .primary_key = "cool",
                    .writes_per_second = 0.5,
                    .error_per_second = 0}},
      .disk = transport::DiskSpaceReport{.free_bytes = uint64_t{5} << 40,
                                         .reserve_bytes = uint64_t{128} << 20}};
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
  // An export whose live part is larger than the whole would seed a wrong bucket size.
  wire::Request bad_export;
  bad_export.mutable_ingest_bucket()->mutable_exported()->set_entries(2);
  bad_export.mutable_ingest_bucket()->mutable_exported()->set_live_documents(3);
  EXPECT_EQ(FromWire(bad_export).status().code(), StatusCode::kInvalidArgument);
  wire::Response bad_map;
  bad_map.set_route("not a map");
  EXPECT_EQ(FromWire(bad_map).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shoal::net
