// Unit tests of StorageNode: one or two nodes on a SimRuntime without loss and with a fixed
// message delay, a fake coordinator whose map the test controls, and requests sent directly from
// a client task. Each test pins one rule of docs/design/cluster.md ("Storage node").

#include "src/node/storage_node.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <numbers>
#include <string>
#include <variant>
#include <vector>

#include "src/cluster/shard_map.h"
#include "src/cluster/shard_map_edit.h"
#include "src/common/point.h"
#include "src/node/sim_test_options.h"
#include "src/storage/errors.h"
#include "src/transport/messages.h"
#include "src/transport/sim_runtime.h"

namespace shoal::node {
namespace {

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

// Answers GetMap and Heartbeat with the state the test sets; counts the map requests.
class FakeCoordinator final : public transport::Service {
 public:
  Response Handle(const Address&, const Request& request) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::holds_alternative<transport::GetMapRequest>(request)) {
      ++get_map_requests_;
      return Response::Ok(transport::GetMapResponse{.state = state_});
    }
    if (std::holds_alternative<transport::HeartbeatRequest>(request)) {
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

 private:
  mutable std::mutex mu_;
  transport::ClusterState state_;
  int get_map_requests_ = 0;
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
  const cluster::BucketRange& range = map.Find(bucket)->range;
  if (range.end_is_max()) return storage::PointRange::From(range.begin());
  return *storage::PointRange::Make(range.begin(), range.end());
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
  // map; closes them afterwards.
  void Run(const std::function<void()>& body) {
    bool finished = false;
    sim_.Spawn(Address::Client(1), "test", [&] {
      sim_.Serve(Address::Coordinator(), coordinator_);
      bool started = true;
      for (NodeId id : {kN1, kN2}) {
        NodeOptions options;
        options.id = id;
        options.data_dir = fmt::format("{}/node-{}", dir_, id.value());
        options.store.sync = storage::SyncPolicy::kPeriodic;
        test::UseSmallTestStore(options.store);
        options.call_timeout = 100 * kMs;
        options.fence_timeout = kFenceTimeout;
        // Maps arrive only when the test says so: no heartbeat within a test after the first.
        // (Not longer: a stopped process's sleeping task ends only at its wake-up time, and
        // Close polls every simulated millisecond until then.)
        options.heartbeat_interval = 2 * kSecond;
        options.queue_poll = 500;
        auto node = StorageNode::Open(sim_, options);
        if (!node.ok()) {
          ADD_FAILURE() << "open " << id.DebugString() << ": " << node.status();
          started = false;
          break;
        }
        (*node)->Start();
        nodes_[id] = *node;
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

  StatusOr<Response> Drop(NodeId to, const ShardMapPtr& justifying_map, BucketId bucket) {
    transport::DropBucketRequest request;
    request.epoch = justifying_map->epoch();
    request.move = kMove;
    request.bucket = bucket;
    request.range = RangeOf(*maps_.initial, bucket);
    return Call(to, std::move(request));
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

  transport::SimRuntime sim_;
  std::shared_ptr<FakeCoordinator> coordinator_;
  MoveMaps maps_;
  std::string dir_;
  std::map<NodeId, std::shared_ptr<StorageNode>> nodes_;
};

TEST_F(StorageNodeTest, WriteToABucketNotOwnedAnswersWrongShardWithTheNodesMap) {
  Run([&] {
    // b1 belongs to n2.
    auto response = Write(kN1, maps_.initial, WriteOp::kUpsert, KeyIn(kB1, 0), R"({"v":1})");
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(transport::ClusterErrorOf(response->status), ClusterError::kWrongShard)
        << response->status;
    EXPECT_EQ(response->status.code(), StatusCode::kFailedPrecondition);
    ASSERT_NE(response->route, nullptr);
    EXPECT_EQ(response->route->epoch(), maps_.initial->epoch());
    EXPECT_EQ(response->route->Find(kB1)->replicas, std::vector<NodeId>{kN2});
    EXPECT_EQ(node(kN1).counters().wrong_shard, 1u);
    EXPECT_EQ(node(kN1).counters().writes, 0u);

    // A read is refused the same way, and the owner serves both.
    auto get = Get(kN1, maps_.initial, KeyIn(kB1, 0));
    EXPECT_EQ(transport::ClusterErrorOf(StatusOf(get)), ClusterError::kWrongShard);
    EXPECT_TRUE(
        StatusOf(Write(kN2, maps_.initial, WriteOp::kUpsert, KeyIn(kB1, 0), R"({"v":1})")).ok());
  });
}

TEST_F(StorageNodeTest, ClientWithAnOlderEpochIsServedWhereTheNodeOwnsTheBucket) {
  Run([&] {
    ShardMapPtr newer = Next(maps_.initial, [](ShardMapEdit& e) { e.AddNode(NodeId(3)); });
    newer = Next(newer, [&](ShardMapEdit& e) {
      e.SplitBucket(kB1, maps_.initial->Find(kB1)->range.Midpoint(), BucketId(2));
    });
    Publish(newer);
    ASSERT_EQ(node(kN1).epoch(), MapEpoch(3));

    const std::string key = KeyIn(kB0, 0);
    auto written = Write(kN1, maps_.initial, WriteOp::kInsert, key, R"({"v":"old epoch"})");
    ASSERT_TRUE(StatusOf(written).ok()) << StatusOf(written);
    auto got = Get(kN1, maps_.initial, key);
    ASSERT_TRUE(StatusOf(got).ok()) << StatusOf(got);
    EXPECT_EQ(std::get<transport::GetResponse>(got->body).document.body, R"({"v":"old epoch"})");
    EXPECT_EQ(node(kN1).counters().wrong_shard, 0u);
  });
}

TEST_F(StorageNodeTest, FencedSourceQueuesThenAnswersNotServing) {
  Run([&] {
    Publish(maps_.copy);
    const std::string key = KeyIn(kB0, 0);
    // The source of an uncommitted move serves until it is fenced.
    ASSERT_TRUE(StatusOf(Write(kN1, maps_.copy, WriteOp::kUpsert, key, R"({"v":1})")).ok());
    EXPECT_EQ(node(kN1).RoleOf(kB0), LocalRole::kLeaving);
    EXPECT_TRUE(node(kN1).CanAcknowledgeWrite(PointOf(kDocs, key)));

    auto fenced = Fence(kN1, kMove, kB0);
    ASSERT_TRUE(StatusOf(fenced).ok()) << StatusOf(fenced);
    EXPECT_GT(std::get<transport::FenceResponse>(fenced->body).sequence, 0u);
    EXPECT_FALSE(node(kN1).CanAcknowledgeWrite(PointOf(kDocs, key)));

    const Micros start = sim_.Now();
    auto write = Write(kN1, maps_.copy, WriteOp::kUpsert, key, R"({"v":2})");
    EXPECT_EQ(transport::ClusterErrorOf(StatusOf(write)), ClusterError::kNotServing)
        << StatusOf(write);
    EXPECT_EQ(StatusOf(write).code(), StatusCode::kUnavailable);
    EXPECT_GE(sim_.Now() - start, kFenceTimeout);
    // Reads are fenced too.
    auto read = Get(kN1, maps_.copy, key);
    EXPECT_EQ(transport::ClusterErrorOf(StatusOf(read)), ClusterError::kNotServing);
    EXPECT_GE(node(kN1).counters().queued, 2u);
    EXPECT_GE(node(kN1).counters().fence_timeouts, 2u);
    // The refused write changed nothing.
    auto stored = node(kN1).store()->Get(kDocs, key);
    ASSERT_TRUE(stored.ok()) << stored.status();
    EXPECT_EQ(stored->body, R"({"v":1})");
  });
}

TEST_F(StorageNodeTest, PrepareMapQueuesAndAnAbortReleasesTheQueuedWrite) {
  Run([&] {
    Publish(maps_.prepare);
    const std::string key = KeyIn(kB0, 1);
    // kPrepare in the map fences the source by itself, without a FenceRequest.
    const Micros start = sim_.Now();
    auto refused = Write(kN1, maps_.prepare, WriteOp::kUpsert, key, R"({"v":"refused"})");
    EXPECT_EQ(transport::ClusterErrorOf(StatusOf(refused)), ClusterError::kNotServing);
    EXPECT_GE(sim_.Now() - start, kFenceTimeout);

    // A write queued while the abort arrives is served once the map without the transition is
    // installed.
    bool done = false;
    Status queued_status;
    Micros queued_for = 0;
    sim_.Spawn(Address::Client(2), "queued-writer", [&] {
      const Micros begin = sim_.Now();
      auto r = Write(kN1, maps_.prepare, WriteOp::kUpsert, key, R"({"v":"queued"})");
      queued_status = StatusOf(r);
      queued_for = sim_.Now() - begin;
      done = true;
    });
    ASSERT_TRUE(sim_.Sleep(10 * kMs).ok());
    EXPECT_FALSE(done);
    Publish(maps_.aborted);
    while (!done) ASSERT_TRUE(sim_.Sleep(kMs).ok());
    EXPECT_TRUE(queued_status.ok()) << queued_status;
    EXPECT_GE(queued_for, 10 * kMs);
    EXPECT_LT(queued_for, kFenceTimeout);
    EXPECT_EQ(node(kN1).RoleOf(kB0), LocalRole::kReadWrite);
    auto got = Get(kN1, maps_.aborted, key);
    ASSERT_TRUE(StatusOf(got).ok()) << StatusOf(got);
    EXPECT_EQ(std::get<transport::GetResponse>(got->body).document.body, R"({"v":"queued"})");
  });
}

TEST_F(StorageNodeTest, AfterTheCommitTheSourceAnswersWrongShardAndTheDestinationServes) {
  Run([&] {
    Publish(maps_.committed);
    const std::string key = KeyIn(kB0, 0);
    EXPECT_EQ(node(kN1).RoleOf(kB0), LocalRole::kLeaving);
    EXPECT_EQ(node(kN2).RoleOf(kB0), LocalRole::kReadWrite);
    EXPECT_FALSE(node(kN1).CanAcknowledgeWrite(PointOf(kDocs, key)));
    EXPECT_TRUE(node(kN2).CanAcknowledgeWrite(PointOf(kDocs, key)));

    auto at_source = Write(kN1, maps_.prepare, WriteOp::kUpsert, key, R"({"v":1})");
    ASSERT_TRUE(at_source.ok()) << at_source.status();
    EXPECT_EQ(transport::ClusterErrorOf(at_source->status), ClusterError::kWrongShard);
    ASSERT_NE(at_source->route, nullptr);
    EXPECT_EQ(at_source->route->epoch(), maps_.committed->epoch());

    auto at_destination = Write(kN2, maps_.committed, WriteOp::kUpsert, key, R"({"v":1})");
    EXPECT_TRUE(StatusOf(at_destination).ok()) << StatusOf(at_destination);
    auto got = Get(kN2, maps_.committed, key);
    EXPECT_TRUE(StatusOf(got).ok()) << StatusOf(got);
  });
}

TEST_F(StorageNodeTest, DestinationOfAnUncommittedMoveDoesNotServe) {
  Run([&] {
    Publish(maps_.copy);
    const std::string key = KeyIn(kB0, 0);
    EXPECT_EQ(node(kN2).RoleOf(kB0), LocalRole::kAdding);
    EXPECT_FALSE(node(kN2).CanAcknowledgeWrite(PointOf(kDocs, key)));

    const int fetches = coordinator_->get_map_requests();
    const Micros start = sim_.Now();
    auto write = Write(kN2, maps_.copy, WriteOp::kUpsert, key, R"({"v":1})");
    EXPECT_EQ(transport::ClusterErrorOf(StatusOf(write)), ClusterError::kNotServing)
        << StatusOf(write);
    EXPECT_GE(sim_.Now() - start, kFenceTimeout);
    // A client that routes to the destination may know the commit: the node asked for the map.
    EXPECT_GT(coordinator_->get_map_requests(), fetches);
    EXPECT_FALSE(node(kN2).store()->Get(kDocs, key).ok());

    // Once the coordinator holds the commit, the same request is served: the node learns it.
    coordinator_->SetMap(maps_.committed);
    auto served = Write(kN2, maps_.committed, WriteOp::kUpsert, key, R"({"v":2})");
    EXPECT_TRUE(StatusOf(served).ok()) << StatusOf(served);
    EXPECT_EQ(node(kN2).epoch(), maps_.committed->epoch());
  });
}

TEST_F(StorageNodeTest, DropBucketIsRefusedWhileTheNodeServesOrReceivesTheRange) {
  Run([&] {
    const std::string key = KeyIn(kB0, 0);
    ASSERT_TRUE(StatusOf(Write(kN1, maps_.initial, WriteOp::kUpsert, key, R"({"v":1})")).ok());

    // Stable replica.
    auto refused = Drop(kN1, maps_.initial, kB0);
    EXPECT_EQ(StatusOf(refused).code(), StatusCode::kFailedPrecondition) << StatusOf(refused);

    Publish(maps_.copy);
    // Source of an uncommitted move, and destination staging it.
    refused = Drop(kN1, maps_.copy, kB0);
    EXPECT_EQ(StatusOf(refused).code(), StatusCode::kFailedPrecondition) << StatusOf(refused);
    refused = Drop(kN2, maps_.copy, kB0);
    EXPECT_EQ(StatusOf(refused).code(), StatusCode::kFailedPrecondition) << StatusOf(refused);
    EXPECT_TRUE(node(kN1).store()->Get(kDocs, key).ok());

    // The drop carries the epoch that justifies it: a node behind it fetches the map first.
    coordinator_->SetMap(maps_.committed);
    auto dropped = Drop(kN1, maps_.committed, kB0);
    EXPECT_TRUE(StatusOf(dropped).ok()) << StatusOf(dropped);
    EXPECT_EQ(node(kN1).epoch(), maps_.committed->epoch());
    EXPECT_TRUE(storage::Is(node(kN1).store()->Get(kDocs, key), storage::ErrorReason::kNotFound));
    // Dropping again is idempotent.
    EXPECT_TRUE(StatusOf(Drop(kN1, maps_.committed, kB0)).ok());

    // The committed destination serves the range: refused there.
    Install(kN2, maps_.committed);
    refused = Drop(kN2, maps_.committed, kB0);
    EXPECT_EQ(StatusOf(refused).code(), StatusCode::kFailedPrecondition) << StatusOf(refused);
  });
}

TEST_F(StorageNodeTest, MoveByHandCarriesEveryWriteIncludingLaterDeletes) {
  Run([&] {
    std::vector<std::string> keys;
    for (int i = 0; i < 8; ++i) keys.push_back(KeyIn(kB0, i));
    // What the source acknowledged: body by key ("" = deleted) and version by key.
    std::map<std::string, std::string> expected;
    std::map<std::string, uint64_t> versions;
    auto write = [&](const ShardMapPtr& map, WriteOp op, const std::string& key,
                     const std::string& body) {
      auto r = Write(kN1, map, op, key, body);
      ASSERT_TRUE(StatusOf(r).ok()) << transport::ToString(op) << " " << key << ": " << StatusOf(r);
      versions[key] = std::get<transport::WriteResponse>(r->body).version;
      expected[key] = op == WriteOp::kDelete ? "" : body;
    };
    for (int i = 0; i < 5; ++i) {
      write(maps_.initial, WriteOp::kInsert, keys[i], fmt::format(R"({{"v":{}}})", i));
    }

    // Snapshot.
    Publish(maps_.copy);
    transport::ExportBucketRequest export_request;
    export_request.move = kMove;
    export_request.bucket = kB0;
    auto exported_response = Call(kN1, export_request);
    ASSERT_TRUE(StatusOf(exported_response).ok()) << StatusOf(exported_response);
    const storage::ExportedRange exported =
        std::get<transport::ExportBucketResponse>(exported_response->body).exported;
    EXPECT_EQ(exported.entries, 5u);
    transport::IngestBucketRequest ingest;
    ingest.move = kMove;
    ingest.bucket = kB0;
    ingest.exported = exported;
    auto ingested = Call(kN2, ingest);
    ASSERT_TRUE(StatusOf(ingested).ok()) << StatusOf(ingested);
    EXPECT_EQ(node(kN2).RoleOf(kB0), LocalRole::kAdding);

    // Writes after the snapshot, including deletes of documents the snapshot holds.
    write(maps_.copy, WriteOp::kUpdate, keys[0], R"({"v":"updated"})");
    write(maps_.copy, WriteOp::kDelete, keys[1], "");
    write(maps_.copy, WriteOp::kInsert, keys[5], R"({"v":"new"})");

    // A catch-up round while the source still serves.
    Publish(maps_.catch_up);
    transport::CatchUpRequest round;
    round.move = kMove;
    round.bucket = kB0;
    round.source = kN1;
    round.after_sequence = exported.sequence;
    round.stop_below = 64;
    auto caught = Call(kN2, round);
    ASSERT_TRUE(StatusOf(caught).ok()) << StatusOf(caught);
    const auto first_round = std::get<transport::CatchUpResponse>(caught->body);
    EXPECT_EQ(first_round.applied, 3u);

    write(maps_.catch_up, WriteOp::kUpsert, keys[2], R"({"v":"upserted"})");
    write(maps_.catch_up, WriteOp::kDelete, keys[3], "");
    write(maps_.catch_up, WriteOp::kInsert, keys[6], R"({"v":"late"})");
    write(maps_.catch_up, WriteOp::kDelete, keys[6], "");

    // Prepare, fence, drain to the fence's sequence.
    Publish(maps_.prepare);
    auto fenced = Fence(kN1, kMove, kB0);
    ASSERT_TRUE(StatusOf(fenced).ok()) << StatusOf(fenced);
    const uint64_t fence_sequence = std::get<transport::FenceResponse>(fenced->body).sequence;
    transport::CatchUpRequest drain;
    drain.move = kMove;
    drain.bucket = kB0;
    drain.source = kN1;
    drain.after_sequence = first_round.applied_sequence;
    drain.until_sequence = fence_sequence;
    drain.stop_below = 0;
    auto drained = Call(kN2, drain);
    ASSERT_TRUE(StatusOf(drained).ok()) << StatusOf(drained);
    EXPECT_GE(std::get<transport::CatchUpResponse>(drained->body).applied_sequence, fence_sequence);

    Publish(maps_.committed);
    uint64_t max_version = 0;
    for (const std::string& key : keys) {
      if (expected.count(key) == 0) continue;
      max_version = std::max(max_version, versions[key]);
      auto got = Get(kN2, maps_.committed, key);
      if (expected[key].empty()) {
        EXPECT_TRUE(storage::Is(StatusOf(got), storage::ErrorReason::kNotFound))
            << key << ": " << StatusOf(got);
        storage::GetOptions with_tombstones;
        with_tombstones.include_tombstones = true;
        auto tombstone = node(kN2).store()->Get(kDocs, key, with_tombstones);
        ASSERT_TRUE(tombstone.ok()) << key << ": " << tombstone.status();
        EXPECT_TRUE(tombstone->tombstone) << key;
        EXPECT_EQ(tombstone->version, versions[key]) << key;
      } else {
        ASSERT_TRUE(StatusOf(got).ok()) << key << ": " << StatusOf(got);
        const auto& document = std::get<transport::GetResponse>(got->body).document;
        EXPECT_EQ(document.body, expected[key]) << key;
        EXPECT_EQ(document.version, versions[key]) << key;
      }
    }
    EXPECT_EQ(node(kN2).counters().changes_applied, 7u);
    // The destination's own writes get versions above everything it received.
    auto own = Write(kN2, maps_.committed, WriteOp::kUpsert, keys[7], R"({"v":"dest"})");
    ASSERT_TRUE(StatusOf(own).ok()) << StatusOf(own);
    EXPECT_GT(std::get<transport::WriteResponse>(own->body).version, max_version);
  });
}

TEST_F(StorageNodeTest, FenceForAMoveMissingFromTheNodesMapFetchesTheMap) {
  Run([&] {
    // The coordinator has begun the move, but n1 has not heard of it.
    coordinator_->SetMap(maps_.copy);
    ASSERT_EQ(node(kN1).epoch(), maps_.initial->epoch());
    const int fetches = coordinator_->get_map_requests();
    auto fenced = Fence(kN1, kMove, kB0);
    ASSERT_TRUE(StatusOf(fenced).ok()) << StatusOf(fenced);
    EXPECT_GT(coordinator_->get_map_requests(), fetches);
    EXPECT_EQ(node(kN1).epoch(), maps_.copy->epoch());
    // The fence holds: the source no longer serves the bucket.
    auto write = Write(kN1, maps_.copy, WriteOp::kUpsert, KeyIn(kB0, 0), R"({"v":1})");
    EXPECT_EQ(transport::ClusterErrorOf(StatusOf(write)), ClusterError::kNotServing);

    // A move that the coordinator's map does not hold either, or a node that is not its source,
    // is refused as stale.
    auto unknown = Fence(kN1, MoveId(99), kB0);
    EXPECT_EQ(transport::ClusterErrorOf(StatusOf(unknown)), ClusterError::kStaleMove)
        << StatusOf(unknown);
    Install(kN2, maps_.copy);
    auto not_source = Fence(kN2, kMove, kB0);
    EXPECT_EQ(transport::ClusterErrorOf(StatusOf(not_source)), ClusterError::kStaleMove)
        << StatusOf(not_source);
    // The other bucket was never fenced.
    EXPECT_TRUE(
        StatusOf(Write(kN2, maps_.copy, WriteOp::kUpsert, KeyIn(kB1, 0), R"({"v":1})")).ok());
  });
}

TEST_F(StorageNodeTest, BackgroundNiceOutsideItsRangeIsRefused) {
  for (const int nice : {-1, kMaxBackgroundNice + 1}) {
    NodeOptions options;
    options.id = kN1;
    options.data_dir = fmt::format("{}/nice-{}", dir_, nice);
    options.background_nice = nice;
    auto node = StorageNode::Open(sim_, options);
    EXPECT_EQ(node.status().code(), StatusCode::kInvalidArgument) << nice;
    // Refused before anything was created.
    EXPECT_FALSE(std::filesystem::exists(options.data_dir)) << nice;
  }
  for (const int nice : {0, kMaxBackgroundNice}) {
    NodeOptions options;
    options.id = kN1;
    options.data_dir = fmt::format("{}/nice-{}", dir_, nice);
    options.background_nice = nice;
    auto node = StorageNode::Open(sim_, options);
    EXPECT_TRUE(node.ok()) << nice << ": " << node.status();
  }
}

TEST_F(StorageNodeTest, LoadReportShowsTheMostWrittenKeyFirst) {
  Run([&] {
    const std::string hot = KeyIn(kB0, 0);
    const std::string cold = KeyIn(kB0, 1);
    const std::string other = KeyIn(kB0, 2);
    for (int i = 0; i < 40; ++i) {
      ASSERT_TRUE(StatusOf(Write(kN1, maps_.initial, WriteOp::kUpsert, hot, R"({"v":1})")).ok());
    }
    ASSERT_TRUE(StatusOf(Write(kN1, maps_.initial, WriteOp::kInsert, cold, R"({"v":1})")).ok());
    ASSERT_TRUE(StatusOf(Write(kN1, maps_.initial, WriteOp::kUpsert, other, R"({"v":1})")).ok());
    ASSERT_TRUE(StatusOf(Write(kN1, maps_.initial, WriteOp::kDelete, other)).ok());
    // Refused writes do not count: a duplicate insert, and a key of n2's bucket.
    for (int i = 0; i < 5; ++i) {
      EXPECT_FALSE(StatusOf(Write(kN1, maps_.initial, WriteOp::kInsert, cold, "{}")).ok());
      EXPECT_FALSE(StatusOf(Write(kN1, maps_.initial, WriteOp::kUpsert, KeyIn(kB1, 0), "{}")).ok());
    }

    auto load = Call(kN1, transport::BucketLoadRequest{});
    ASSERT_TRUE(StatusOf(load).ok()) << StatusOf(load);
    const auto& hot_keys = std::get<transport::BucketLoadResponse>(load->body).hot_keys;
    ASSERT_EQ(hot_keys.size(), 3u);
    EXPECT_EQ(hot_keys[0].collection, kDocs);
    EXPECT_EQ(hot_keys[0].primary_key, hot);
    // Milliseconds of simulated time: 40 writes at a 10 s half-life, barely decayed.
    EXPECT_NEAR(hot_keys[0].writes_per_second, 40 * std::numbers::ln2 / 10, 0.01);
    EXPECT_EQ(hot_keys[0].error_per_second, 0);
    EXPECT_EQ(hot_keys[1].primary_key, other);
    EXPECT_NEAR(hot_keys[1].writes_per_second, hot_keys[0].writes_per_second * 2 / 40, 0.001);
    EXPECT_EQ(hot_keys[2].primary_key, cold);
    EXPECT_NEAR(hot_keys[2].writes_per_second, hot_keys[0].writes_per_second / 40, 0.001);
    // n2 acknowledged nothing.
    auto n2_load = Call(kN2, transport::BucketLoadRequest{});
    ASSERT_TRUE(StatusOf(n2_load).ok()) << StatusOf(n2_load);
    EXPECT_TRUE(std::get<transport::BucketLoadResponse>(n2_load->body).hot_keys.empty());
  });
}

}  // namespace
}  // namespace shoal::node
