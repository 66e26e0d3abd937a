#pragma once

// The fixture of the Coordinator's unit tests: an EmbeddedCluster (coordinator, metadata store,
// three storage nodes) on a SimRuntime without loss, loaded with kDocuments documents. Shared by
// coordinator_test.cc and switch_then_copy_test.cc.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rocksdb/env.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/client/client.h"
#include "src/common/point.h"
#include "src/coordinator/coordinator.h"
#include "src/metadata/embedded_metadata_store.h"
#include "src/node/sim_test_options.h"
#include "src/server/embedded_cluster.h"
#include "src/transport/point_ranges.h"
#include "src/transport/sim_runtime.h"

namespace shoal::coordinator::test {

using cluster::ShardMapPtr;
using transport::Address;
using transport::Micros;

constexpr Micros kMs = 1000;
constexpr Micros kSecond = 1'000'000;
constexpr NodeId kN1{1};
constexpr NodeId kN2{2};
constexpr NodeId kN3{3};
constexpr BucketId kB0{0};
constexpr int kDocuments = 40;

inline std::string Key(int i) { return fmt::format("d{}", i); }
inline std::string Body(int i) { return fmt::format(R"({{"i":{}}})", i); }

inline storage::PointRange RangeOf(const cluster::BucketPlacement& bucket) {
  return transport::ToPointRange(bucket.range);
}

class CoordinatorTest : public ::testing::Test {
 protected:
  CoordinatorTest()
      : sim_(transport::SimOptions{.seed = 11, .min_delay = 100, .max_delay = 300, .loss = 0}) {
    dir_ = node::test::UniqueTestDir("shoal-coordinator-test");
  }

  ~CoordinatorTest() override {
    sim_.Shutdown();
    client_.reset();
    cluster_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Starts the cluster on a task, loads kDocuments documents, runs `body`, closes the cluster.
  void Run(bool auto_balance, const std::function<void()>& body) {
    server::EmbeddedClusterOptions options;
    options.data_dir = dir_;
    options.initial_nodes = 3;
    options.buckets = bucket_count_;
    options.replication_factor = replication_factor_;
    options.sync = false;
    options.coordinator.auto_balance = auto_balance;
    options.coordinator.balance_interval = 100 * kMs;
    options.coordinator.call_timeout = 200 * kMs;
    options.coordinator.node_timeout = 2 * kSecond;
    options.coordinator.stale_copy_grace = stale_copy_grace_;
    options.coordinator.min_buckets = min_buckets_;
    options.node.call_timeout = 200 * kMs;
    options.node.fence_timeout = 500 * kMs;
    options.node.heartbeat_interval = 50 * kMs;
    node::test::UseSmallTestStore(options.node.store);
    options.node.store.env = node_env_.get();
    options.node.store.disk_check_interval = node_disk_check_interval_;
    options.wrap_metadata = wrap_metadata_;
    cluster_ = std::make_unique<server::EmbeddedCluster>(sim_, options);
    client_ = std::make_unique<client::Client>(sim_);
    bool finished = false;
    sim_.Spawn(Address::Client(1), "test", [&] {
      if (Start()) body();
      EXPECT_TRUE(cluster_->StopAll().ok());
      finished = true;
    });
    sim_.RunUntil(3600 * kSecond);
    EXPECT_TRUE(finished) << "the test task did not finish";
  }

  bool Start() {
    if (Status s = cluster_->Start(); !s.ok()) {
      ADD_FAILURE() << "start: " << s;
      return false;
    }
    if (!WaitFor([&] { return coordinator().recovered(); })) return false;
    auto collection = client_->OpenCollection("docs");
    if (!collection.ok()) {
      ADD_FAILURE() << "collection: " << collection.status();
      return false;
    }
    collection_ = *collection;
    for (int i = 0; i < kDocuments; ++i) {
      auto written = client_->Insert(collection_, Key(i), Body(i));
      if (!written.ok()) {
        ADD_FAILURE() << "insert " << Key(i) << ": " << written.status();
        return false;
      }
    }
    return true;
  }

  Coordinator& coordinator() { return *cluster_->coordinator(); }
  ShardMapPtr map() { return cluster_->coordinator()->map(); }

  // Runs `fn` on a task of the coordinator process (so that a coordinator crash cancels it, as
  // it would a real admin request) and waits for it.
  Status Admin(std::function<Status(Coordinator&)> fn) {
    struct State {
      bool done = false;
      Status status;
    };
    auto state = std::make_shared<State>();
    std::shared_ptr<Coordinator> coordinator = cluster_->coordinator();
    sim_.Spawn(Address::Coordinator(), "admin", [coordinator, fn = std::move(fn), state] {
      state->status = fn(*coordinator);
      state->done = true;
    });
    while (!state->done) {
      if (!sim_.Sleep(kMs).ok()) return CancelledError("test task stopped");
    }
    return state->status;
  }

  // Polls `condition` every 10 ms of simulated time, for at most `limit`.
  bool WaitFor(const std::function<bool()>& condition, Micros limit = 60 * kSecond) {
    const Micros deadline = sim_.Now() + limit;
    while (!condition()) {
      if (sim_.Now() > deadline || !sim_.Sleep(10 * kMs).ok()) {
        ADD_FAILURE() << "condition not reached within " << limit << " us";
        return false;
      }
    }
    return true;
  }

  // Every loaded document reads back with its body (through a fresh client).
  void ExpectAllDocumentsReadable() {
    client::Client reader(sim_);
    for (int i = 0; i < kDocuments; ++i) {
      auto got = reader.Get(collection_, Key(i));
      ASSERT_TRUE(got.ok()) << Key(i) << ": " << got.status();
      EXPECT_EQ(got->body, Body(i)) << Key(i);
    }
  }

  // After a move of b0 from n1 to n2 ended (committed: on n2, else back on n1): once both nodes
  // hold the final map exactly the owner acknowledges writes to b0, every document reads back,
  // and every document takes an update.
  void ExpectB0EndedOn(bool committed) {
    const NodeId owner = committed ? kN2 : kN1;
    EXPECT_EQ(map()->Find(kB0)->replicas, std::vector<NodeId>{owner});
    ExpectOnlyOwnerAcknowledgesB0(owner);
    ExpectAllDocumentsReadable();
    client::Client writer(sim_);
    for (int i = 0; i < kDocuments; ++i) {
      auto written = writer.Update(collection_, Key(i), Body(i));
      EXPECT_TRUE(written.ok()) << Key(i) << ": " << written.status();
    }
  }

  // Once n1 and n2 hold the coordinator's map, `owner` (n1 or n2) acknowledges writes to b0 and
  // the other does not.
  void ExpectOnlyOwnerAcknowledgesB0(NodeId owner) {
    const NodeId other = owner == kN1 ? kN2 : kN1;
    ASSERT_TRUE(WaitFor([&] {
      return cluster_->node(kN1)->epoch() == map()->epoch() &&
             cluster_->node(kN2)->epoch() == map()->epoch();
    }));
    const Point point(map()->Find(kB0)->range.begin());
    EXPECT_TRUE(cluster_->node(owner)->CanAcknowledgeWrite(point));
    EXPECT_FALSE(cluster_->node(other)->CanAcknowledgeWrite(point));
  }

  // A client task that updates `documents` in rounds (document i gets Body(round * kDocuments +
  // i)), `pause` apart, until `stop`. Per document it records the last round acknowledged and the
  // last round tried: an update that failed may still have been applied.
  struct RoundWriter {
    bool stop = false;
    bool done = false;
    std::map<int, int> acknowledged;
    std::map<int, int> tried;
    uint64_t acknowledged_writes = 0;
  };

  std::shared_ptr<RoundWriter> StartRoundWriter(const std::vector<int>& documents, Micros pause) {
    auto w = std::make_shared<RoundWriter>();
    auto client = std::make_shared<client::Client>(sim_);
    sim_.Spawn(Address::Client(2), "round-writer",
               [this, w, client, documents, pause, c = collection_] {
                 for (int round = 1; !w->stop; ++round) {
                   for (int i : documents) {
                     w->tried[i] = round;
                     if (client->Update(c, Key(i), Body(round * kDocuments + i)).ok()) {
                       w->acknowledged[i] = round;
                       ++w->acknowledged_writes;
                     }
                   }
                   if (!sim_.Sleep(pause).ok()) break;
                 }
                 w->done = true;
               });
    return w;
  }

  // Stops the writer and waits for its task to end.
  void StopRoundWriter(RoundWriter& w) {
    w.stop = true;
    EXPECT_TRUE(WaitFor([&] { return w.done; }));
  }

  // Every bucket has K copies and no move is in flight.
  bool FullyReplicated() {
    return std::all_of(map()->buckets().begin(), map()->buckets().end(), [&](const auto& b) {
      return b.replicas.size() == map()->replication_factor() && !b.transition.has_value();
    });
  }

  // Whether some bucket of the current map lists `node` as a replica.
  bool Holds(NodeId node) {
    return std::any_of(map()->buckets().begin(), map()->buckets().end(),
                       [&](const auto& b) { return b.HasReplica(node); });
  }

  // The indices of every loaded document (a RoundWriter's whole set).
  std::vector<int> AllDocuments() const {
    std::vector<int> all;
    for (int i = 0; i < kDocuments; ++i) all.push_back(i);
    return all;
  }

  // Writes go on: the writer gets two more rounds' worth of writes acknowledged.
  void ExpectWritesGoOn(const RoundWriter& w) {
    const uint64_t before = w.acknowledged_writes;
    ASSERT_TRUE(WaitFor([&] { return w.acknowledged_writes >= before + 2 * kDocuments; }));
  }

  // Every document of a stopped writer holds the body of its last acknowledged round, or of a
  // later round tried (outcome unknown); returns the bodies read.
  std::map<int, std::string> ExpectNoAcknowledgedRoundLost(const RoundWriter& w,
                                                           const std::vector<int>& documents) {
    std::map<int, std::string> bodies;
    client::Client reader(sim_);
    for (int i : documents) {
      auto got = reader.Get(collection_, Key(i));
      EXPECT_TRUE(got.ok()) << Key(i) << ": " << got.status();
      if (!got.ok()) continue;
      bodies[i] = got->body;
      const int acknowledged = w.acknowledged.contains(i) ? w.acknowledged.at(i) : 0;
      const int tried = w.tried.contains(i) ? w.tried.at(i) : 0;
      bool allowed = false;
      for (int round = acknowledged; round <= tried && !allowed; ++round) {
        allowed = got->body == (round == 0 ? Body(i) : Body(round * kDocuments + i));
      }
      EXPECT_TRUE(allowed) << Key(i) << " reads " << got->body << ", last acknowledged round "
                           << acknowledged << ", last tried " << tried;
    }
    return bodies;
  }

  // Every copy of every bucket equals its primary's, key by key (version, tombstone, body), once
  // the primaries' last entries have reached their backups.
  void ExpectCopiesEqual() {
    ASSERT_TRUE(sim_.Sleep(500 * kMs).ok());
    for (const auto& bucket : map()->buckets()) {
      const auto range = RangeOf(bucket);
      auto primary = cluster_->node(bucket.replicas[0])->store()->DigestRange(range);
      ASSERT_TRUE(primary.ok()) << primary.status();
      const auto state = cluster_->node(bucket.replicas[0])->store()->GetReplicaState(bucket.id);
      for (size_t i = 1; i < bucket.replicas.size(); ++i) {
        auto* store = cluster_->node(bucket.replicas[i])->store();
        auto copy = store->DigestRange(range);
        ASSERT_TRUE(copy.ok()) << copy.status();
        EXPECT_EQ(*copy, *primary)
            << bucket.id.DebugString() << " on " << bucket.replicas[i].DebugString();
        EXPECT_EQ(store->GetReplicaState(bucket.id).position, state.position)
            << bucket.id.DebugString() << " on " << bucket.replicas[i].DebugString();
      }
    }
  }

  // Documents of the loaded set whose point lies in `bucket` of `map`.
  int DocumentsIn(const cluster::ShardMap& map, BucketId bucket) const {
    int count = 0;
    for (int i = 0; i < kDocuments; ++i) {
      if (map.Lookup(PointOf(collection_, Key(i))).id == bucket) ++count;
    }
    return count;
  }

  // Live documents a node stores in `range` (an exact scan of its store).
  uint64_t StoredIn(NodeId node, const storage::PointRange& range) {
    auto stats = cluster_->node(node)->store()->ComputeStats(range);
    EXPECT_TRUE(stats.ok()) << stats.status();
    return stats.ok() ? stats->documents : 0;
  }

  // The move log (moves/<id> -> record), read from the metadata store once the cluster is gone.
  std::map<std::string, std::string> MoveLog() { return MetadataEntries("moves/"); }

  // The metadata store's keys under `prefix` with their values, read once the cluster is gone.
  std::map<std::string, std::string> MetadataEntries(const std::string& prefix) {
    cluster_.reset();
    metadata::EmbeddedMetadataOptions options;
    options.path = dir_ + "/metadata";
    options.sync = false;
    auto store = metadata::EmbeddedMetadataStore::Open(options);
    EXPECT_TRUE(store.ok()) << store.status();
    if (!store.ok()) return {};
    auto entries = (*store)->List(prefix);
    EXPECT_TRUE(entries.ok()) << entries.status();
    std::map<std::string, std::string> out;
    if (entries.ok()) {
      for (const auto& [key, value] : *entries) out[key] = value.value;
    }
    return out;
  }

  static std::string LogKey(uint64_t move) { return fmt::format("moves/{:020}", move); }

  transport::SimRuntime sim_;
  // Set before Run: K, the copies of every bucket.
  uint32_t replication_factor_ = 1;
  // Set before Run: the buckets of the new cluster.
  uint32_t bucket_count_ = 8;
  // Set before Run: CoordinatorOptions::stale_copy_grace.
  transport::Micros stale_copy_grace_ = kDefaultStaleCopyGrace;
  // Set before Run: CoordinatorOptions::min_buckets (0: no floor).
  uint32_t min_buckets_ = 0;
  // Set before Run: EmbeddedClusterOptions::wrap_metadata.
  std::function<std::unique_ptr<metadata::MetadataStore>(std::unique_ptr<metadata::MetadataStore>)>
      wrap_metadata_;
  // Set before Run: every node's StoreOptions::env (unset: the default). Outlives the cluster,
  // which the destructor closes first.
  std::unique_ptr<rocksdb::Env> node_env_;
  // Set before Run: every node's StoreOptions::disk_check_interval.
  std::chrono::milliseconds node_disk_check_interval_ = storage::StoreOptions{}.disk_check_interval;
  std::string dir_;
  std::unique_ptr<server::EmbeddedCluster> cluster_;
  std::unique_ptr<client::Client> client_;
  CollectionId collection_;
};

}  // namespace shoal::coordinator::test
