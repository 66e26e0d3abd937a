// FAILURE-PATTERNS 6 (docs/design/failure-patterns.md), a request of an aborted attempt still at
// work when its retry begins: the first attempt's ingest passed its move check and has fetched
// the last chunk of the export's files when the move is aborted and retried at once. While it
// stages, the retry's ingest is refused ("being staged; retry"). It then ingests its stale files
// and finds its move gone (STALE_MOVE), leaving them in the range. The retry's ingest, sent
// again, drops them and stages its own snapshot; after the retry's catch-up, fence, drain and
// commit the destination holds every acknowledged write, the update and the delete made between
// the two snapshots included. The fixture is in storage_node_test_fixture.h.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <variant>

#include "src/node/storage_node_test_fixture.h"

namespace shoal::node {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace): the shared fixture

constexpr size_t kChunkBytes = 512;

// The destination fetches the export's files in chunks, as over the network, so that its ingest
// can be held after the last chunk, before the files go into its store.
class StaleIngestTest : public StorageNodeTest {
 protected:
  bool StartNode(NodeId id, const std::string& data_dir) override {
    NodeOptions options = TestNodeOptions(id, data_dir);
    options.move_file_transfer = MoveFileTransfer::kFetch;
    options.move_chunk_bytes = kChunkBytes;
    return OpenAndStart(options);
  }
};

// The chunks the destination fetches for `exported` (the source's files are on this machine).
int ChunksOf(const storage::ExportedRange& exported) {
  int chunks = 0;
  for (const std::string& file : exported.files) {
    const auto bytes = static_cast<size_t>(std::filesystem::file_size(file));
    chunks += static_cast<int>((bytes + kChunkBytes - 1) / kChunkBytes);
  }
  return chunks;
}

TEST_F(StaleIngestTest, AnIngestOfTheAbortedAttemptStillStagingHoldsOffTheRetryAndIsDiscarded) {
  Run([&] {
    const RetryMaps retry = BuildRetryMaps(maps_, kRetry);

    std::map<std::string, std::string> expected;  // key -> body ("" = deleted)
    auto write = [&](const ShardMapPtr& map, WriteOp op, const std::string& key,
                     const std::string& body) { WriteExpecting(expected, map, op, key, body); };
    for (int i = 0; i < 30; ++i) {
      write(maps_.initial, WriteOp::kInsert, KeyIn(kB0, i),
            fmt::format(R"({{"i":{},"pad":"{}"}})", i, std::string(64, 'x')));
    }

    // The first attempt's snapshot; then an update and a delete it does not hold.
    Publish(maps_.copy);
    auto exported = Call(kN1, transport::ExportBucketRequest{.move = kMove, .bucket = kB0});
    ASSERT_TRUE(StatusOf(exported).ok()) << StatusOf(exported);
    const storage::ExportedRange first =
        std::get<transport::ExportBucketResponse>(exported->body).exported;
    const int chunks = ChunksOf(first);
    ASSERT_GT(chunks, 1);
    write(maps_.copy, WriteOp::kUpdate, KeyIn(kB0, 0), R"({"a":"after the first snapshot"})");
    write(maps_.copy, WriteOp::kDelete, KeyIn(kB0, 1), "");

    // The first attempt's ingest, on a task of its own, is held after its last chunk.
    int fetched = 0;
    bool held = false;
    bool release = false;
    sim_.SetChaosHook([&](const Address& process, std::string_view point) {
      if (process != Address::Node(kN2) || point != "destination.after_fetch_chunk") return false;
      if (++fetched != chunks) return false;
      held = true;
      while (!release) {
        if (!sim_.Sleep(kMs).ok()) break;
      }
      return false;
    });
    StatusOr<Response> first_ingest = InternalError("not answered");
    bool first_done = false;
    sim_.Spawn(Address::Client(2), "first ingest", [&] {
      first_ingest = Call(
          kN2, transport::IngestBucketRequest{.move = kMove, .bucket = kB0, .exported = first});
      first_done = true;
    });
    while (!held) ASSERT_TRUE(sim_.Sleep(kMs).ok());

    // Aborted and retried while it stages: the retry's ingest must wait for it.
    Publish(retry.aborted);
    Publish(retry.copy);
    exported = Call(kN1, transport::ExportBucketRequest{.move = kRetry, .bucket = kB0});
    ASSERT_TRUE(StatusOf(exported).ok()) << StatusOf(exported);
    const storage::ExportedRange second =
        std::get<transport::ExportBucketResponse>(exported->body).exported;
    const transport::IngestBucketRequest retry_ingest{
        .move = kRetry, .bucket = kB0, .exported = second};
    auto refused = Call(kN2, retry_ingest);
    EXPECT_EQ(transport::ClusterErrorOf(StatusOf(refused)), ClusterError::kNotServing)
        << StatusOf(refused);
    EXPECT_NE(StatusOf(refused).message().find("being staged"), std::string_view::npos)
        << StatusOf(refused);

    // The first attempt ingests its stale files and learns that its move is gone.
    release = true;
    while (!first_done) ASSERT_TRUE(sim_.Sleep(kMs).ok());
    sim_.SetChaosHook(nullptr);
    EXPECT_EQ(transport::ClusterErrorOf(StatusOf(first_ingest)), ClusterError::kStaleMove)
        << StatusOf(first_ingest);
    const storage::PointRange range = RangeOf(*maps_.initial, kB0);
    auto stale = node(kN2).store()->ComputeStats(range);
    ASSERT_TRUE(stale.ok()) << stale.status();
    EXPECT_GT(stale->documents, 0u) << "the first attempt's files did not reach the store";

    // The retry, sent again, replaces them with its own snapshot and completes the move.
    auto ingested = Call(kN2, retry_ingest);
    ASSERT_TRUE(StatusOf(ingested).ok()) << StatusOf(ingested);
    write(retry.copy, WriteOp::kUpsert, KeyIn(kB0, 2), R"({"a":"after the retry's snapshot"})");
    CommitRetryAndExpect(kRetry, retry, second.sequence, expected);
  });
}

}  // namespace
}  // namespace shoal::node
