#pragma once

// The fixture of StorageNode's unit tests: one or two nodes on a SimRuntime without loss and with
// a fixed message delay, a fake coordinator whose map the test controls, and requests sent
// directly from a client task. Shared by storage_node_test.cc and storage_node_move_test.cc.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "src/cluster/shard_map.h"
#include "src/cluster/shard_map_edit.h"
#include "src/common/point.h"
#include "src/node/sim_test_options.h"
#include "src/node/storage_node.h"
#include "src/storage/errors.h"
#include "src/transport/messages.h"
#include "src/transport/point_ranges.h"
#include "src/transport/sim_runtime.h"

namespace shoal::node::test {

using cluster::ShardMap;
using cluster::ShardMapEdit;
using cluster::ShardMapPtr;
using cluster::TransitionStage;
using transport::Address;
using transport::ClusterError;
using transport::Micros;
using transport::Request;
using transport::Response;
using transport::WriteOp;

constexpr Micros kMs = 1000;
constexpr Micros kSecond = 1'000'000;
constexpr Micros kFenceTimeout = 50 * kMs;
constexpr CollectionId kDocs{1};
constexpr NodeId kN1{1};
constexpr NodeId kN2{2};
constexpr BucketId kB0{0};
constexpr BucketId kB1{1};
constexpr MoveId kMove{1};
constexpr MoveId kRetry{2};  // a retry of kMove

// Answers GetMap and Heartbeat with the state the test sets; counts the map requests.
class FakeCoordinator final : public transport::Service {
 public:
  Response Handle(const Address&, const Request& request) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::holds_alternative<transport::GetMapRequest>(request)) {
      ++get_map_requests_;
      return Response::Ok(transport::GetMapResponse{.state = state_});
    }
    if (const auto* heartbeat = std::get_if<transport::HeartbeatRequest>(&request)) {
      heartbeats_[heartbeat->node] = *heartbeat;
      return Response::Ok(transport::HeartbeatResponse{
          .epoch = state_.map == nullptr ? MapEpoch(0) : state_.map->epoch()});
    }
    return Response::Error(UnimplementedError("not served by the fake coordinator"));
  }

  void SetMap(ShardMapPtr map) {
    std::lock_guard<std::mutex> lock(mu_);
    state_.map = std::move(map);
  }
  void SetCollections(std::vector<storage::CollectionSpec> collections) {
    std::lock_guard<std::mutex> lock(mu_);
    state_.collections = std::move(collections);
  }
  [[nodiscard]] transport::ClusterState state() const {
    std::lock_guard<std::mutex> lock(mu_);
    return state_;
  }
  [[nodiscard]] int get_map_requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return get_map_requests_;
  }
  // The latest heartbeat of `node` (a default one before any).
  [[nodiscard]] transport::HeartbeatRequest last_heartbeat(NodeId node) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = heartbeats_.find(node);
    return it == heartbeats_.end() ? transport::HeartbeatRequest{} : it->second;
  }

 private:
  mutable std::mutex mu_;
  transport::ClusterState state_;
  int get_map_requests_ = 0;
  std::map<NodeId, transport::HeartbeatRequest> heartbeats_;
};

// The map of `map`'s epoch + 1 after the edit `build` makes.
ShardMapPtr Next(const ShardMapPtr& map, const std::function<void(ShardMapEdit&)>& build) {
  ShardMapEdit edit(map->epoch());
  build(edit);
  auto applied = cluster::Apply(*map, edit);
  if (!applied.ok()) {
    ADD_FAILURE() << "Apply: " << applied.status();
    return map;
  }
  return std::make_shared<const ShardMap>(std::move(*applied));
}

storage::PointRange RangeOf(const ShardMap& map, BucketId bucket) {
  return transport::ToPointRange(map.Find(bucket)->range);
}

// The maps of one move of b0 from n1 to n2, stage by stage.
struct MoveMaps {
  ShardMapPtr initial;    // e1: b0 on n1, b1 on n2
  ShardMapPtr copy;       // e2: m1 in kCopy
  ShardMapPtr catch_up;   // e3: kCatchUp
  ShardMapPtr prepare;    // e4: kPrepare
  ShardMapPtr committed;  // e5: kCommitted
  ShardMapPtr aborted;    // e5: rolled back from kPrepare (instead of committed)
};

MoveMaps BuildMoveMaps() {
  MoveMaps maps;
  auto initial = ShardMap::Initial({.nodes = {kN1, kN2}, .bucket_count = 2});
  EXPECT_TRUE(initial.ok()) << initial.status();
  maps.initial = std::make_shared<const ShardMap>(std::move(*initial));
  maps.copy = Next(maps.initial, [](ShardMapEdit& e) {
    e.BeginTransition(kB0, kMove, {kN2}, cluster::TransitionMode::kCopyThenSwitch);
  });
  maps.catch_up = Next(
      maps.copy, [](ShardMapEdit& e) { e.AdvanceStage(kB0, kMove, TransitionStage::kCatchUp); });
  maps.prepare = Next(maps.catch_up, [](ShardMapEdit& e) {
    e.AdvanceStage(kB0, kMove, TransitionStage::kPrepare);
  });
  maps.committed = Next(maps.prepare, [](ShardMapEdit& e) { e.CommitTransition(kB0, kMove); });
  maps.aborted = Next(maps.prepare, [](ShardMapEdit& e) { e.AbortTransition(kB0, kMove); });
  return maps;
}

// m1 aborted in kCopy and retried at once as `retry` (b0 from n1 to n2), stage by stage.
struct RetryMaps {
  ShardMapPtr aborted;   // m1 aborted in kCopy
  ShardMapPtr copy;      // the retry in kCopy
  ShardMapPtr catch_up;  // kCatchUp
  ShardMapPtr prepare;   // kPrepare
  ShardMapPtr committed;
};

inline RetryMaps BuildRetryMaps(const MoveMaps& maps, MoveId retry) {
  RetryMaps out;
  out.aborted = Next(maps.copy, [](ShardMapEdit& e) { e.AbortTransition(kB0, kMove); });
  out.copy = Next(out.aborted, [&](ShardMapEdit& e) {
    e.BeginTransition(kB0, retry, {kN2}, cluster::TransitionMode::kCopyThenSwitch);
  });
  out.catch_up = Next(
      out.copy, [&](ShardMapEdit& e) { e.AdvanceStage(kB0, retry, TransitionStage::kCatchUp); });
  out.prepare = Next(out.catch_up, [&](ShardMapEdit& e) {
    e.AdvanceStage(kB0, retry, TransitionStage::kPrepare);
  });
  out.committed = Next(out.prepare, [&](ShardMapEdit& e) { e.CommitTransition(kB0, retry); });
  return out;
}

// Status of a response, or of the transport if the call itself failed.
Status StatusOf(const StatusOr<Response>& response) {
  return response.ok() ? response->status : response.status();
}

class StorageNodeTest : public ::testing::Test {
 protected:
  StorageNodeTest()
      : sim_(transport::SimOptions{.seed = 1, .min_delay = 100, .max_delay = 100, .loss = 0}),
        coordinator_(std::make_shared<FakeCoordinator>()),
        maps_(BuildMoveMaps()) {
    dir_ = test::UniqueTestDir("shoal-node-test");
    coordinator_->SetCollections({storage::CollectionSpec{.id = kDocs, .name = "docs"}});
    coordinator_->SetMap(maps_.initial);
  }

  ~StorageNodeTest() override {
    sim_.Shutdown();
    nodes_.clear();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Runs `body` on a client task of the simulation, with nodes n1 and n2 started on the initial
  // map (StartNode); closes them afterwards.
  void Run(const std::function<void()>& body) {
    bool finished = false;
    sim_.Spawn(Address::Client(1), "test", [&] {
      sim_.Serve(Address::Coordinator(), coordinator_);
      bool started = true;
      for (NodeId id : {kN1, kN2}) {
        if (!StartNode(id, fmt::format("{}/node-{}", dir_, id.value()))) {
          started = false;
          break;
        }
      }
      if (started) {
        Install(kN1, maps_.initial);
        Install(kN2, maps_.initial);
        body();
      }
      for (auto& [id, node] : nodes_) EXPECT_TRUE(node->Close().ok());
      sim_.Stop(Address::Coordinator());
      finished = true;
    });
    sim_.RunUntil(24 * 3600 * kSecond);
    EXPECT_TRUE(finished) << "the test task did not finish";
  }

  // The options of node `id` on `data_dir` in these tests.
  NodeOptions TestNodeOptions(NodeId id, const std::string& data_dir) const {
    NodeOptions options;
    options.id = id;
    options.data_dir = data_dir;
    options.store.sync = storage::SyncPolicy::kPeriodic;
    test::UseSmallTestStore(options.store);
    options.call_timeout = 100 * kMs;
    options.fence_timeout = kFenceTimeout;
    // Maps arrive only when the test says so: no heartbeat within a test after the first.
    // (Not longer: a stopped process's sleeping task ends only at its wake-up time, and
    // Close polls every simulated millisecond until then.)
    options.heartbeat_interval = 2 * kSecond;
    options.queue_poll = 500;
    return options;
  }

  // Opens and starts node `id` on `data_dir` (a test fixture may open it differently); false,
  // with a test failure, if it does not open.
  virtual bool StartNode(NodeId id, const std::string& data_dir) {
    return OpenAndStart(TestNodeOptions(id, data_dir));
  }

  bool OpenAndStart(const NodeOptions& options) {
    auto node = StorageNode::Open(sim_, options);
    if (!node.ok()) {
      ADD_FAILURE() << "open " << options.id.DebugString() << ": " << node.status();
      return false;
    }
    (*node)->Start();
    nodes_[options.id] = *node;
    return true;
  }

  StorageNode& node(NodeId id) { return *nodes_.at(id); }

  StatusOr<Response> Call(NodeId to, Request request) {
    return sim_.Call(Address::Node(to), std::move(request), 10 * kSecond);
  }

  void Install(NodeId to, const ShardMapPtr& map) {
    transport::ClusterState state = coordinator_->state();
    state.map = map;
    auto response = Call(to, transport::InstallMapRequest{.state = state});
    EXPECT_TRUE(StatusOf(response).ok()) << StatusOf(response);
  }

  // The coordinator's map becomes `map`, and both nodes install it.
  void Publish(const ShardMapPtr& map) {
    coordinator_->SetMap(map);
    Install(kN1, map);
    Install(kN2, map);
  }

  StatusOr<Response> Write(NodeId to, const ShardMapPtr& client_map, WriteOp op,
                           const std::string& key, const std::string& body = "") {
    transport::WriteRequest request;
    request.epoch = client_map->epoch();
    request.op = op;
    request.collection = kDocs;
    request.primary_key = key;
    request.body = body;
    return Call(to, std::move(request));
  }

  StatusOr<Response> Get(NodeId to, const ShardMapPtr& client_map, const std::string& key) {
    transport::GetRequest request;
    request.epoch = client_map->epoch();
    request.collection = kDocs;
    request.primary_key = key;
    return Call(to, std::move(request));
  }

  // One scan page of `range`, naming `bucket`, from a client at `epoch`.
  StatusOr<Response> Scan(NodeId to, MapEpoch epoch, BucketId bucket,
                          const storage::PointRange& range, uint32_t max_documents = 1000) {
    transport::ScanRequest request;
    request.epoch = epoch;
    request.bucket = bucket;
    request.range = range;
    request.collection = kDocs;
    request.max_documents = max_documents;
    return Call(to, std::move(request));
  }

  StatusOr<Response> Drop(NodeId to, const ShardMapPtr& justifying_map, BucketId bucket,
                          transport::DropReason reason = transport::DropReason::kLeavingCopy) {
    transport::DropBucketRequest request;
    request.epoch = justifying_map->epoch();
    request.move = kMove;
    request.bucket = bucket;
    request.range = RangeOf(*maps_.initial, bucket);
    request.reason = reason;
    return Call(to, std::move(request));
  }

  // The node's load report, by bucket (empty, with a test failure, if the call fails).
  std::map<BucketId, transport::BucketLoad> Loads(NodeId to) {
    std::map<BucketId, transport::BucketLoad> out;
    auto response = Call(to, transport::BucketLoadRequest{});
    EXPECT_TRUE(StatusOf(response).ok()) << StatusOf(response);
    if (!StatusOf(response).ok()) return out;
    for (const auto& bucket : std::get<transport::BucketLoadResponse>(response->body).buckets) {
      out[bucket.bucket] = bucket;
    }
    return out;
  }

  // A move's snapshot by hand: exports `bucket` for `move` at n1 and ingests it at n2; returns
  // the export (empty, with a test failure, if either call fails).
  storage::ExportedRange SnapshotToN2(MoveId move, BucketId bucket) {
    auto exported = Call(kN1, transport::ExportBucketRequest{.move = move, .bucket = bucket});
    EXPECT_TRUE(StatusOf(exported).ok()) << StatusOf(exported);
    if (!StatusOf(exported).ok()) return {};
    storage::ExportedRange range =
        std::get<transport::ExportBucketResponse>(exported->body).exported;
    auto ingested = Call(
        kN2, transport::IngestBucketRequest{.move = move, .bucket = bucket, .exported = range});
    EXPECT_TRUE(StatusOf(ingested).ok()) << StatusOf(ingested);
    return range;
  }

  StatusOr<Response> Fence(NodeId to, MoveId move, BucketId bucket) {
    transport::FenceRequest request;
    request.move = move;
    request.bucket = bucket;
    return Call(to, std::move(request));
  }

  // The `index`-th key ("k<i>") whose point lies in `bucket` of the initial map.
  std::string KeyIn(BucketId bucket, int index) const {
    for (int i = 0;; ++i) {
      std::string key = fmt::format("k{}", i);
      if (maps_.initial->Lookup(PointOf(kDocs, key)).id != bucket) continue;
      if (index-- == 0) return key;
    }
  }

  // A write through n1 under `map` that must succeed; `expected` records the key's body ("" =
  // deleted) for CommitRetryAndExpect.
  void WriteExpecting(std::map<std::string, std::string>& expected, const ShardMapPtr& map,
                      WriteOp op, const std::string& key, const std::string& body) {
    ASSERT_TRUE(StatusOf(Write(kN1, map, op, key, body)).ok()) << key;
    expected[key] = op == WriteOp::kDelete ? "" : body;
  }

  // Carries `retry` (its snapshot ingested at n2 from `snapshot_sequence`) to its commit by
  // hand: one catch-up round, the fence, the drain to the fence's sequence, the commit. Then
  // every key of `expected` reads back at n2 with its body ("" = deleted).
  void CommitRetryAndExpect(MoveId retry, const RetryMaps& maps, uint64_t snapshot_sequence,
                            const std::map<std::string, std::string>& expected) {
    Publish(maps.catch_up);
    auto round = Call(kN2, transport::CatchUpRequest{.move = retry,
                                                     .bucket = kB0,
                                                     .source = kN1,
                                                     .after_sequence = snapshot_sequence,
                                                     .until_sequence = {}});
    ASSERT_TRUE(StatusOf(round).ok()) << StatusOf(round);
    Publish(maps.prepare);
    auto fenced = Fence(kN1, retry, kB0);
    ASSERT_TRUE(StatusOf(fenced).ok()) << StatusOf(fenced);
    auto drained = Call(
        kN2,
        transport::CatchUpRequest{
            .move = retry,
            .bucket = kB0,
            .source = kN1,
            .after_sequence = std::get<transport::CatchUpResponse>(round->body).applied_sequence,
            .until_sequence = std::get<transport::FenceResponse>(fenced->body).sequence,
            .stop_below = 0});
    ASSERT_TRUE(StatusOf(drained).ok()) << StatusOf(drained);
    Publish(maps.committed);
    for (const auto& [key, body] : expected) {
      auto got = Get(kN2, maps.committed, key);
      if (body.empty()) {
        EXPECT_TRUE(storage::Is(StatusOf(got), storage::ErrorReason::kNotFound))
            << key << ": " << StatusOf(got);
      } else {
        ASSERT_TRUE(StatusOf(got).ok()) << key << ": " << StatusOf(got);
        EXPECT_EQ(std::get<transport::GetResponse>(got->body).document.body, body) << key;
      }
    }
  }

  // Inserts `count` documents {"v":"aaaa"} into `bucket` of the initial map, through n1.
  void InsertInto(BucketId bucket, int count) {
    for (int i = 0; i < count; ++i) {
      ASSERT_TRUE(
          StatusOf(Write(kN1, maps_.initial, WriteOp::kInsert, KeyIn(bucket, i), R"({"v":"aaaa"})"))
              .ok());
    }
  }

  transport::SimRuntime sim_;
  std::shared_ptr<FakeCoordinator> coordinator_;
  MoveMaps maps_;
  std::string dir_;
  std::map<NodeId, std::shared_ptr<StorageNode>> nodes_;
};

}  // namespace shoal::node::test
