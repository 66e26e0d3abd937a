// Tests of the node-to-node transfer of a move's export files (move_files.h): a source n1 and a
// destination n2 on a SimRuntime without loss, a fake coordinator whose map the test controls,
// and a filter in front of n1 through which a test corrupts or drops FetchMoveFile answers. The
// destination copies the files chunk by chunk (MoveFileTransfer::kFetch) unless a test says
// otherwise; docs/design/cluster.md, "File transfer".

#include "src/node/move_files.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "src/cluster/shard_map.h"
#include "src/cluster/shard_map_edit.h"
#include "src/common/crc32c.h"
#include "src/common/point.h"
#include "src/node/sim_test_options.h"
#include "src/node/storage_node.h"
#include "src/transport/messages.h"
#include "src/transport/point_ranges.h"
#include "src/transport/sim_runtime.h"

namespace shoal::node {
namespace {

using cluster::ShardMap;
using cluster::ShardMapEdit;
using cluster::ShardMapPtr;
using transport::Address;
using transport::ClusterError;
using transport::Micros;
using transport::Request;
using transport::Response;

constexpr Micros kMs = 1000;
constexpr Micros kSecond = 1'000'000;
constexpr CollectionId kDocs{1};
constexpr NodeId kN1{1};
constexpr NodeId kN2{2};
constexpr BucketId kB0{0};
constexpr BucketId kB1{1};
constexpr MoveId kMove{1};
constexpr uint32_t kChunk = 64u << 10;

// Answers GetMap and Heartbeat with the map the test sets.
class FakeCoordinator final : public transport::Service {
 public:
  Response Handle(const Address&, const Request& request) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::holds_alternative<transport::GetMapRequest>(request)) {
      return Response::Ok(transport::GetMapResponse{.state = state_});
    }
    if (std::holds_alternative<transport::HeartbeatRequest>(request)) {
      return Response::Ok(transport::HeartbeatResponse{.epoch = state_.map->epoch()});
    }
    return Response::Error(UnimplementedError("not served by the fake coordinator"));
  }
  void Set(transport::ClusterState state) {
    std::lock_guard<std::mutex> lock(mu_);
    state_ = std::move(state);
  }
  [[nodiscard]] transport::ClusterState state() const {
    std::lock_guard<std::mutex> lock(mu_);
    return state_;
  }

 private:
  mutable std::mutex mu_;
  transport::ClusterState state_;
};

// Serves n1: passes every request to the node, and lets the test rewrite FetchMoveFile answers
// (`tamper` gets the 0-based number of the FetchMoveFile request and its answer).
class SourceFilter final : public transport::Service {
 public:
  using Tamper = std::function<void(int call, Response* response)>;
  explicit SourceFilter(std::shared_ptr<StorageNode> node) : node_(std::move(node)) {}

  Response Handle(const Address& from, const Request& request) override {
    Response response = node_->Handle(from, request);
    if (!std::holds_alternative<transport::FetchMoveFileRequest>(request)) return response;
    std::lock_guard<std::mutex> lock(mu_);
    if (tamper_) tamper_(fetches_, &response);
    ++fetches_;
    return response;
  }
  void SetTamper(Tamper tamper) {
    std::lock_guard<std::mutex> lock(mu_);
    tamper_ = std::move(tamper);
    fetches_ = 0;
  }
  [[nodiscard]] int fetches() const {
    std::lock_guard<std::mutex> lock(mu_);
    return fetches_;
  }

 private:
  std::shared_ptr<StorageNode> node_;
  mutable std::mutex mu_;
  Tamper tamper_;
  int fetches_ = 0;
};

ShardMapPtr Next(const ShardMapPtr& map, const std::function<void(ShardMapEdit&)>& build) {
  ShardMapEdit edit(map->epoch());
  build(edit);
  auto applied = cluster::Apply(*map, edit);
  EXPECT_TRUE(applied.ok()) << applied.status();
  return applied.ok() ? std::make_shared<const ShardMap>(std::move(*applied)) : map;
}

Status StatusOf(const StatusOr<Response>& response) {
  return response.ok() ? response->status : response.status();
}

class MoveFilesTest : public ::testing::Test {
 protected:
  MoveFilesTest()
      : sim_(transport::SimOptions{.seed = 1, .min_delay = 100, .max_delay = 100, .loss = 0}),
        coordinator_(std::make_shared<FakeCoordinator>()) {
    dir_ = test::UniqueTestDir("shoal-move-files-test");
    auto initial = ShardMap::Initial({.nodes = {kN1, kN2}, .bucket_count = 2});
    EXPECT_TRUE(initial.ok()) << initial.status();
    initial_ = std::make_shared<const ShardMap>(std::move(*initial));
    copy_ = Next(initial_, [](ShardMapEdit& e) {
      e.BeginTransition(kB0, kMove, {kN2}, cluster::TransitionMode::kCopyThenSwitch);
    });
    aborted_ = Next(copy_, [](ShardMapEdit& e) { e.AbortTransition(kB0, kMove); });
    coordinator_->Set(transport::ClusterState{
        .map = initial_, .collections = {storage::CollectionSpec{.id = kDocs, .name = "docs"}}});
    for (NodeId id : {kN1, kN2}) {
      NodeOptions& o = options_[id];
      o.id = id;
      o.data_dir = fmt::format("{}/node-{}", dir_, id.value());
      o.store.sync = storage::SyncPolicy::kPeriodic;
      test::UseSmallTestStore(o.store);
      o.call_timeout = 100 * kMs;
      o.heartbeat_interval = 2 * kSecond;
      o.move_file_transfer = MoveFileTransfer::kFetch;
      o.move_chunk_bytes = kChunk;
    }
  }

  ~MoveFilesTest() override {
    sim_.Shutdown();
    filter_.reset();
    nodes_.clear();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Opens n1 behind the filter and n2, both on the initial map; runs `body` on a client task.
  void Run(const std::function<void()>& body) {
    bool finished = false;
    sim_.Spawn(Address::Client(1), "test", [&] {
      sim_.Serve(Address::Coordinator(), coordinator_);
      if (OpenNode(kN1) && OpenNode(kN2)) {
        Install(kN1, initial_);
        Install(kN2, initial_);
        body();
      }
      for (auto& [id, node] : nodes_) EXPECT_TRUE(node->Close().ok());
      sim_.Stop(Address::Coordinator());
      finished = true;
    });
    sim_.RunUntil(24 * 3600 * kSecond);
    EXPECT_TRUE(finished) << "the test task did not finish";
  }

  // (Re)opens a node with options_[id]: n1 behind a new filter, n2 directly.
  bool OpenNode(NodeId id) {
    if (auto it = nodes_.find(id); it != nodes_.end()) {
      EXPECT_TRUE(it->second->Close().ok());
    }
    auto node = StorageNode::Open(sim_, options_[id]);
    if (!node.ok()) {
      ADD_FAILURE() << "open " << id.DebugString() << ": " << node.status();
      return false;
    }
    nodes_[id] = *node;
    if (id == kN1) {
      filter_ = std::make_shared<SourceFilter>(*node);
      sim_.Serve(Address::Node(kN1), filter_);
    } else {
      (*node)->Start();
    }
    return true;
  }

  StorageNode& node(NodeId id) { return *nodes_.at(id); }

  StatusOr<Response> Call(NodeId to, Request request) {
    return sim_.Call(Address::Node(to), std::move(request), 60 * kSecond);
  }

  void Install(NodeId to, const ShardMapPtr& map) {
    transport::ClusterState state = coordinator_->state();
    state.map = map;
    EXPECT_TRUE(StatusOf(Call(to, transport::InstallMapRequest{.state = state})).ok());
  }
  void Publish(const ShardMapPtr& map) {
    transport::ClusterState state = coordinator_->state();
    state.map = map;
    coordinator_->Set(state);
    Install(kN1, map);
    Install(kN2, map);
  }

  // Writes `count` documents of about `body_bytes` each (hard to compress) to b0 at n1.
  void Fill(int count, size_t body_bytes) {
    uint64_t x = 88172645463325252ull;
    int written = 0;
    for (int i = 0; written < count; ++i) {
      const std::string key = fmt::format("k{}", i);
      if (initial_->Lookup(PointOf(kDocs, key)).id != kB0) continue;
      std::string text;
      while (text.size() < body_bytes) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        text += fmt::format("{:016x}", x);
      }
      transport::WriteRequest write;
      write.epoch = initial_->epoch();
      write.op = transport::WriteOp::kUpsert;
      write.collection = kDocs;
      write.primary_key = key;
      write.body = fmt::format(R"({{"v":"{}"}})", text);
      ASSERT_TRUE(StatusOf(Call(kN1, std::move(write))).ok());
      ++written;
    }
  }

  StatusOr<storage::ExportedRange> Export() {
    auto response = Call(kN1, transport::ExportBucketRequest{.move = kMove, .bucket = kB0});
    if (!response.ok()) return response.status();
    SHOAL_ASSIGN_OR_RETURN(auto body,
                           transport::BodyAs<transport::ExportBucketResponse>(*response));
    return body.exported;
  }

  Status Ingest(const storage::ExportedRange& exported) {
    return StatusOf(Call(
        kN2, transport::IngestBucketRequest{.move = kMove, .bucket = kB0, .exported = exported}));
  }

  StatusOr<transport::FetchMoveFileResponse> Fetch(transport::FetchMoveFileRequest request) {
    auto response = Call(kN1, request);
    if (!response.ok()) return response.status();
    return transport::BodyAs<transport::FetchMoveFileResponse>(*response);
  }

  // Documents of b0 stored at n2.
  uint64_t DocumentsAtDestination() {
    const cluster::BucketRange& range = initial_->Find(kB0)->range;
    auto stats = node(kN2).store()->ComputeStats(transport::ToPointRange(range));
    EXPECT_TRUE(stats.ok()) << stats.status();
    return stats.ok() ? stats->documents : 0;
  }

  bool StagingExists() const {
    return std::filesystem::exists(StagingDirectory(options_.at(kN2).data_dir, kMove, kB0));
  }

  static uint64_t FileBytes(const storage::ExportedRange& exported) {
    uint64_t bytes = 0;
    for (const std::string& file : exported.files) bytes += std::filesystem::file_size(file);
    return bytes;
  }

  transport::SimRuntime sim_;
  std::shared_ptr<FakeCoordinator> coordinator_;
  ShardMapPtr initial_;
  ShardMapPtr copy_;
  ShardMapPtr aborted_;
  std::string dir_;
  std::map<NodeId, NodeOptions> options_;
  std::map<NodeId, std::shared_ptr<StorageNode>> nodes_;
  std::shared_ptr<SourceFilter> filter_;
};

TEST_F(MoveFilesTest, AFileOfManyChunksIsCopiedVerifiedAndIngestedWithoutSourcePaths) {
  Run([&] {
    ASSERT_NO_FATAL_FAILURE(Fill(200, 16 << 10));
    Publish(copy_);
    auto exported = Export();
    ASSERT_TRUE(exported.ok()) << exported.status();
    ASSERT_EQ(exported->files.size(), 1u);
    const uint64_t file_bytes = FileBytes(*exported);
    ASSERT_GT(file_bytes, 16u * kChunk) << "the file must span many chunks";

    // The destination gets only paths it cannot open: it must copy by index from the source.
    storage::ExportedRange unreachable = *exported;
    for (std::string& file : unreachable.files) file = "/nonexistent/shoal" + file;
    const Status ingested = Ingest(unreachable);
    ASSERT_TRUE(ingested.ok()) << ingested;

    EXPECT_EQ(DocumentsAtDestination(), 200u);
    const NodeCounters counters = node(kN2).counters();
    EXPECT_EQ(counters.move_files_fetched, 1u);
    EXPECT_EQ(counters.move_bytes_fetched, file_bytes);
    EXPECT_EQ(counters.move_files_read_locally, 0u);
    EXPECT_EQ(counters.move_chunk_retries, 0u);
    EXPECT_EQ(filter_->fetches(), static_cast<int>((file_bytes + kChunk - 1) / kChunk));
    EXPECT_FALSE(StagingExists()) << "the copies are removed after the ingest";
  });
}

TEST_F(MoveFilesTest, ALocalRuntimeReadsReachableFilesByPathAndCopiesUnreachableOnes) {
  options_[kN2].move_file_transfer = MoveFileTransfer::kAuto;
  Run([&] {
    ASSERT_NO_FATAL_FAILURE(Fill(20, 1 << 10));
    Publish(copy_);
    auto exported = Export();
    ASSERT_TRUE(exported.ok()) << exported.status();
    ASSERT_TRUE(Ingest(*exported).ok());
    EXPECT_EQ(node(kN2).counters().move_files_read_locally, 1u);
    EXPECT_EQ(node(kN2).counters().move_files_fetched, 0u);
    EXPECT_EQ(filter_->fetches(), 0);
    // Ingested through a hard link: the source keeps its file (a retried ingest reads it again),
    // and no link is left in the staging directory.
    EXPECT_EQ(node(kN2).counters().move_files_linked, 1u);
    EXPECT_TRUE(std::filesystem::exists(exported->files[0]));
    EXPECT_FALSE(StagingExists());
    ASSERT_TRUE(Ingest(*exported).ok());
    EXPECT_EQ(node(kN2).counters().move_files_linked, 2u);
    EXPECT_EQ(DocumentsAtDestination(), 20u);

    // The same export at paths this node cannot see: copied (and the ingest replaces the range).
    storage::ExportedRange unreachable = *exported;
    unreachable.files[0] += ".elsewhere";
    const Status copied = Ingest(unreachable);
    // (The source's file is still byte for byte what it registered: a linked ingest must not
    // write into it, or this copy's checksum would not match.)
    ASSERT_TRUE(copied.ok()) << std::string(copied.message());
    EXPECT_EQ(node(kN2).counters().move_files_fetched, 1u);
    EXPECT_EQ(node(kN2).counters().move_files_linked, 2u);
    EXPECT_EQ(DocumentsAtDestination(), 20u);
  });
}

TEST_F(MoveFilesTest, ACorruptChunkFailsTheIngestCleanlyAndARetrySucceeds) {
  Run([&] {
    ASSERT_NO_FATAL_FAILURE(Fill(40, 8 << 10));
    Publish(copy_);
    auto exported = Export();
    ASSERT_TRUE(exported.ok()) << exported.status();
    ASSERT_GT(FileBytes(*exported), 3u * kChunk);

    // A bit flipped in the third chunk, its checksum left as sent.
    filter_->SetTamper([](int call, Response* response) {
      if (call != 2) return;
      std::get<transport::FetchMoveFileResponse>(response->body).data[100] ^= 0x04;
    });
    Status ingested = Ingest(*exported);
    EXPECT_EQ(ingested.code(), StatusCode::kDataLoss) << ingested;
    EXPECT_NE(ingested.message().find("checksum mismatch"), std::string::npos) << ingested;
    EXPECT_EQ(DocumentsAtDestination(), 0u);
    EXPECT_FALSE(StagingExists());

    // A chunk altered together with its checksum: the whole file's checksum catches it.
    filter_->SetTamper([](int call, Response* response) {
      if (call != 1) return;
      auto& chunk = std::get<transport::FetchMoveFileResponse>(response->body);
      chunk.data[7] ^= 0x01;
      chunk.chunk_crc32c = Crc32c(chunk.data);
    });
    ingested = Ingest(*exported);
    EXPECT_EQ(ingested.code(), StatusCode::kDataLoss) << ingested;
    EXPECT_NE(ingested.message().find("differs from the source"), std::string::npos) << ingested;
    EXPECT_EQ(DocumentsAtDestination(), 0u);
    EXPECT_FALSE(StagingExists());

    // A short chunk (the source's file shrank under it) is refused as well.
    filter_->SetTamper([](int call, Response* response) {
      if (call != 0) return;
      auto& chunk = std::get<transport::FetchMoveFileResponse>(response->body);
      chunk.data.resize(10);
      chunk.chunk_crc32c = Crc32c(chunk.data);
    });
    EXPECT_EQ(Ingest(*exported).code(), StatusCode::kDataLoss);
    EXPECT_EQ(DocumentsAtDestination(), 0u);

    filter_->SetTamper(nullptr);
    ASSERT_TRUE(Ingest(*exported).ok());
    EXPECT_EQ(DocumentsAtDestination(), 40u);
  });
}

TEST_F(MoveFilesTest, TransientErrorsAreRetriedABoundedNumberOfTimes) {
  options_[kN2].move_chunk_attempts = 3;
  Run([&] {
    ASSERT_NO_FATAL_FAILURE(Fill(20, 8 << 10));
    Publish(copy_);
    auto exported = Export();
    ASSERT_TRUE(exported.ok()) << exported.status();

    // Two lost answers for the first chunk: the third attempt gets it.
    filter_->SetTamper([](int call, Response* response) {
      if (call < 2) *response = Response::Error(UnavailableError("dropped"));
    });
    ASSERT_TRUE(Ingest(*exported).ok());
    EXPECT_EQ(node(kN2).counters().move_chunk_retries, 2u);
    EXPECT_EQ(DocumentsAtDestination(), 20u);

    // One failure more than the attempts: the ingest fails (retryable), nothing stays staged.
    filter_->SetTamper([](int call, Response* response) {
      if (call < 3)
        *response = Response::Error(transport::MakeClusterError(ClusterError::kNotServing, "busy"));
    });
    const Status failed = Ingest(*exported);
    EXPECT_EQ(failed.code(), StatusCode::kUnavailable) << failed;
    EXPECT_EQ(DocumentsAtDestination(), 0u);
    EXPECT_FALSE(StagingExists());

    // A permanent error is not retried.
    filter_->SetTamper(
        [](int, Response* response) { *response = Response::Error(InternalError("broken")); });
    EXPECT_EQ(Ingest(*exported).code(), StatusCode::kInternal);
    EXPECT_EQ(filter_->fetches(), 1);
  });
}

TEST_F(MoveFilesTest, TheSourceServesOnlyFilesOfItsLiveExportWithinTheChunkLimit) {
  Run([&] {
    ASSERT_NO_FATAL_FAILURE(Fill(10, 1 << 10));
    Publish(copy_);
    auto exported = Export();
    ASSERT_TRUE(exported.ok()) << exported.status();
    const uint64_t file_bytes = FileBytes(*exported);
    const transport::FetchMoveFileRequest good{.move = kMove,
                                               .bucket = kB0,
                                               .sequence = exported->sequence,
                                               .file_index = 0,
                                               .offset = 0,
                                               .max_bytes = transport::kMaxMoveFileChunkBytes};
    auto chunk = Fetch(good);
    ASSERT_TRUE(chunk.ok()) << chunk.status();
    EXPECT_EQ(chunk->data.size(), file_bytes);
    EXPECT_EQ(chunk->file_bytes, file_bytes);
    EXPECT_EQ(chunk->file_count, 1u);
    EXPECT_EQ(chunk->chunk_crc32c, Crc32c(chunk->data));
    EXPECT_EQ(chunk->file_crc32c, Crc32c(chunk->data));

    auto with = [&](const std::function<void(transport::FetchMoveFileRequest&)>& change) {
      transport::FetchMoveFileRequest request = good;
      change(request);
      return Fetch(request).status();
    };
    // The chunk limit, exceeded by one byte, and an empty chunk.
    EXPECT_EQ(with([](auto& r) { r.max_bytes = transport::kMaxMoveFileChunkBytes + 1; }).code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(with([](auto& r) { r.max_bytes = 0; }).code(), StatusCode::kInvalidArgument);
    // Past the files or the end of the file.
    EXPECT_EQ(with([](auto& r) { r.file_index = 1; }).code(), StatusCode::kNotFound);
    EXPECT_EQ(with([&](auto& r) { r.offset = file_bytes + 1; }).code(), StatusCode::kNotFound);
    auto end = Fetch(transport::FetchMoveFileRequest{.move = kMove,
                                                     .bucket = kB0,
                                                     .sequence = exported->sequence,
                                                     .file_index = 0,
                                                     .offset = file_bytes,
                                                     .max_bytes = 1});
    ASSERT_TRUE(end.ok()) << end.status();
    EXPECT_TRUE(end->data.empty());
    // Another move, export or bucket.
    for (const Status& s :
         {with([](auto& r) { r.move = MoveId(9); }), with([](auto& r) { r.sequence += 1; }),
          with([](auto& r) { r.bucket = kB1; })}) {
      EXPECT_EQ(transport::ClusterErrorOf(s), ClusterError::kStaleMove) << s;
    }
    // A second export of the move (a retry after more writes) leaves the first one servable.
    ASSERT_NO_FATAL_FAILURE(Fill(11, 1 << 10));
    auto second = Export();
    ASSERT_TRUE(second.ok()) << second.status();
    ASSERT_NE(second->sequence, exported->sequence);
    EXPECT_TRUE(Fetch(good).ok());
    EXPECT_TRUE(with([&](auto& r) { r.sequence = second->sequence; }).ok());
    // Once the move ended the export is served no more.
    Publish(aborted_);
    EXPECT_EQ(transport::ClusterErrorOf(Fetch(good).status()), ClusterError::kStaleMove);
  });
}

TEST_F(MoveFilesTest, AnExportFileThatChangedBeforeItsFirstChunkIsNotServed) {
  Run([&] {
    ASSERT_NO_FATAL_FAILURE(Fill(10, 1 << 10));
    Publish(copy_);
    auto exported = Export();
    ASSERT_TRUE(exported.ok()) << exported.status();
    // The checksum is taken at the first request, against the size registered at the export.
    ASSERT_EQ(exported->files.size(), 1u);
    const uint64_t file_bytes = std::filesystem::file_size(exported->files.front());
    std::filesystem::resize_file(exported->files.front(), file_bytes - 1);
    auto chunk = Fetch(transport::FetchMoveFileRequest{.move = kMove,
                                                       .bucket = kB0,
                                                       .sequence = exported->sequence,
                                                       .file_index = 0,
                                                       .offset = 0,
                                                       .max_bytes = 1 << 20});
    EXPECT_FALSE(chunk.ok());
  });
}

TEST_F(MoveFilesTest, ASourceRestartLosesItsExportAndTheIngestFailsUntilAFreshExport) {
  Run([&] {
    ASSERT_NO_FATAL_FAILURE(Fill(10, 1 << 10));
    Publish(copy_);
    auto exported = Export();
    ASSERT_TRUE(exported.ok()) << exported.status();
    ASSERT_TRUE(OpenNode(kN1));  // a crash and restart of the source
    Install(kN1, copy_);
    const Status stale = Ingest(*exported);
    EXPECT_EQ(transport::ClusterErrorOf(stale), ClusterError::kStaleMove) << stale;
    EXPECT_EQ(DocumentsAtDestination(), 0u);
    EXPECT_FALSE(StagingExists());

    auto again = Export();
    ASSERT_TRUE(again.ok()) << again.status();
    ASSERT_TRUE(Ingest(*again).ok());
    EXPECT_EQ(DocumentsAtDestination(), 10u);
  });
}

TEST_F(MoveFilesTest, ADestinationCrashMidTransferLeavesNothingThatIsIngestedLater) {
  Run([&] {
    ASSERT_NO_FATAL_FAILURE(Fill(40, 8 << 10));
    Publish(copy_);
    auto exported = Export();
    ASSERT_TRUE(exported.ok()) << exported.status();
    int chunks = 0;
    sim_.SetChaosHook([&](const Address& process, std::string_view failpoint) {
      return process == Address::Node(kN2) && failpoint == "destination.after_fetch_chunk" &&
             ++chunks == 2;
    });
    EXPECT_FALSE(Ingest(*exported).ok());
    sim_.SetChaosHook(nullptr);
    EXPECT_TRUE(StagingExists()) << "the crash left a partial copy";

    ASSERT_TRUE(OpenNode(kN2));
    EXPECT_FALSE(StagingExists()) << "opening the node removes it";
    Install(kN2, copy_);
    EXPECT_EQ(DocumentsAtDestination(), 0u);
    ASSERT_TRUE(Ingest(*exported).ok());
    EXPECT_EQ(DocumentsAtDestination(), 40u);
  });
}

TEST_F(MoveFilesTest, OpenRefusesChunkOptionsOutOfRange) {
  Run([&] {
    NodeOptions options = options_[kN2];
    options.data_dir = dir_ + "/other";
    options.move_chunk_bytes = transport::kMaxMoveFileChunkBytes + 1;
    EXPECT_EQ(StorageNode::Open(sim_, options).status().code(), StatusCode::kInvalidArgument);
    options.move_chunk_bytes = 0;
    EXPECT_EQ(StorageNode::Open(sim_, options).status().code(), StatusCode::kInvalidArgument);
    options.move_chunk_bytes = transport::kMaxMoveFileChunkBytes;
    options.move_chunk_attempts = 0;
    EXPECT_EQ(StorageNode::Open(sim_, options).status().code(), StatusCode::kInvalidArgument);
  });
}

}  // namespace
}  // namespace shoal::node
