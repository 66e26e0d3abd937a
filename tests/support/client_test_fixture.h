#pragma once

// The fixture of the Client's unit tests: an EmbeddedCluster (coordinator, metadata store, three
// storage nodes, no balancer) on a SimRuntime without loss, and one Client. Shared by
// client_test.cc and client_batch_test.cc.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "src/client/client.h"
#include "src/coordinator/coordinator.h"
#include "src/node/sim_test_options.h"
#include "src/server/embedded_cluster.h"
#include "src/storage/errors.h"
#include "src/transport/sim_runtime.h"

namespace shoal::client::test {

using cluster::ShardMapPtr;
using storage::ErrorReason;
using transport::Address;
using transport::Micros;

constexpr Micros kMs = 1000;
constexpr Micros kSecond = 1'000'000;

inline std::string Key(int i) { return fmt::format("d{}", i); }
inline std::string Body(int i) { return fmt::format(R"({{"i":{}}})", i); }

class ClientTest : public ::testing::Test {
 protected:
  ClientTest()
      : sim_(transport::SimOptions{.seed = 5, .min_delay = 100, .max_delay = 300, .loss = 0}) {
    dir_ = node::test::UniqueTestDir("shoal-client-test");
  }

  ~ClientTest() override {
    sim_.Shutdown();
    client_.reset();
    cluster_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Starts the cluster (no balancer) on a task, opens the collection, runs `body`, closes.
  void Run(const std::function<void()>& body) {
    server::EmbeddedClusterOptions options;
    options.data_dir = dir_;
    options.initial_nodes = 3;
    options.buckets = 8;
    options.sync = false;
    options.coordinator.auto_balance = false;
    options.coordinator.call_timeout = 200 * kMs;
    options.node.call_timeout = 200 * kMs;
    options.node.fence_timeout = 500 * kMs;
    options.node.heartbeat_interval = 50 * kMs;
    node::test::UseSmallTestStore(options.node.store);
    cluster_ = std::make_unique<server::EmbeddedCluster>(sim_, options);
    client_ = std::make_unique<Client>(sim_);
    bool finished = false;
    sim_.Spawn(Address::Client(1), "test", [&] {
      if (Status s = cluster_->Start(); !s.ok()) {
        ADD_FAILURE() << "start: " << s;
      } else if (auto collection = client_->OpenCollection("docs"); !collection.ok()) {
        ADD_FAILURE() << "collection: " << collection.status();
      } else {
        collection_ = *collection;
        body();
      }
      EXPECT_TRUE(cluster_->StopAll().ok());
      finished = true;
    });
    sim_.RunUntil(3600 * kSecond);
    EXPECT_TRUE(finished) << "the test task did not finish";
  }

  coordinator::Coordinator& coordinator() { return *cluster_->coordinator(); }

  void Load(int documents) {
    for (int i = 0; i < documents; ++i) {
      auto written = client_->Insert(collection_, Key(i), Body(i));
      ASSERT_TRUE(written.ok()) << Key(i) << ": " << written.status();
    }
  }

  // Runs `fn` on a task of the coordinator process and waits for it.
  Status Admin(std::function<Status(coordinator::Coordinator&)> fn) {
    struct State {
      bool done = false;
      Status status;
    };
    auto state = std::make_shared<State>();
    std::shared_ptr<coordinator::Coordinator> c = cluster_->coordinator();
    sim_.Spawn(Address::Coordinator(), "admin", [c, fn = std::move(fn), state] {
      state->status = fn(*c);
      state->done = true;
    });
    while (!state->done) {
      if (!sim_.Sleep(kMs).ok()) return CancelledError("test task stopped");
    }
    return state->status;
  }

  // Moves `bucket` to the next node (in id order) that does not hold it.
  Status MoveToNextNode(BucketId bucket) {
    ShardMapPtr map = coordinator().map();
    const cluster::BucketPlacement* placement = map->Find(bucket);
    if (placement == nullptr) return NotFoundError(bucket.DebugString());
    const uint32_t from = placement->replicas.front().value();
    const NodeId to(from % 3 + 1);
    return Admin([bucket, to](coordinator::Coordinator& c) { return c.MoveBucket(bucket, to); });
  }

  // A task that moves buckets (one to the next node every 1 ms, every fifth round a split
  // instead) until `stop`; it counts the moves and collects the failures.
  struct Mover {
    bool stop = false;
    bool done = false;
    int moves = 0;
    std::vector<std::string> failures;
  };
  std::shared_ptr<Mover> StartMover() {
    auto mover = std::make_shared<Mover>();
    sim_.Spawn(Address::Client(2), "mover", [this, mover] {
      for (uint32_t round = 0; !mover->stop; ++round) {
        const auto buckets = coordinator().map()->buckets();
        const BucketId bucket = buckets[round % buckets.size()].id;
        Status status =
            round % 5 == 4
                ? Admin([bucket](coordinator::Coordinator& c) { return c.SplitBucket(bucket); })
                : MoveToNextNode(bucket);
        if (status.ok()) {
          ++mover->moves;
        } else {
          mover->failures.push_back(status.ToString());
        }
        if (!sim_.Sleep(kMs).ok()) break;
      }
      mover->done = true;
    });
    return mover;
  }
  void StopMover(Mover& mover) {
    mover.stop = true;
    while (!mover.done) {
      if (!sim_.Sleep(kMs).ok()) break;
    }
  }

  transport::SimRuntime sim_;
  std::string dir_;
  std::unique_ptr<server::EmbeddedCluster> cluster_;
  std::unique_ptr<Client> client_;
  CollectionId collection_;
};

}  // namespace shoal::client::test
