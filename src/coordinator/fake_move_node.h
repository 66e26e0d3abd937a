#pragma once

// Test support for the coordinator's parts: a scripted storage node (FakeMoveNode) that answers
// the coordinator's move calls without a store, and a fixture (PartsTest) that runs the parts on
// a SimRuntime with a metadata store in a temporary directory and fake nodes n1..n3. Not part of
// any library.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/coordinator/map_committer.h"
#include "src/coordinator/membership.h"
#include "src/coordinator/move_executor.h"
#include "src/coordinator/move_progress.h"
#include "src/metadata/embedded_metadata_store.h"
#include "src/transport/messages.h"
#include "src/transport/sim_runtime.h"

namespace shoal::coordinator::test {

using transport::Address;
using transport::Micros;
using transport::Request;
using transport::Response;

constexpr Micros kMs = 1000;
constexpr Micros kSecond = 1'000'000;
constexpr NodeId kN1{1};
constexpr NodeId kN2{2};
constexpr NodeId kN3{3};
constexpr BucketId kB0{0};
constexpr BucketId kB1{1};

// A node that answers each move call at once: Export with kExportedBytes at sequence
// kExportSequence, ResumeCopy with a refusal (no copy held), Fence with kFenceSequence, CatchUp
// with the position it was asked to reach, Transfer in one page, every other call with an Ack. It
// records the name of each request it received, and answers a request whose name is in `failures`
// with that status.
class FakeMoveNode final : public transport::Service {
 public:
  static constexpr uint64_t kExportedBytes = 4096;
  static constexpr uint64_t kExportSequence = 5;
  static constexpr uint64_t kFenceSequence = 9;

  Response Handle(const Address&, const Request& request) override {
    const std::string name(transport::RequestName(request));
    {
      std::lock_guard<std::mutex> lock(mu_);
      received_.push_back(name);
      if (auto it = failures_.find(name); it != failures_.end()) {
        return Response::Error(it->second);
      }
    }
    if (std::holds_alternative<transport::ExportBucketRequest>(request)) {
      transport::ExportBucketResponse out;
      out.exported.bytes = kExportedBytes;
      out.exported.sequence = kExportSequence;
      return Response::Ok(out);
    }
    if (std::holds_alternative<transport::ResumeCopyRequest>(request)) {
      return Response::Ok(transport::ResumeCopyResponse{.refused = "a fake node holds no copy"});
    }
    if (std::holds_alternative<transport::FenceRequest>(request)) {
      return Response::Ok(transport::FenceResponse{.sequence = kFenceSequence});
    }
    if (const auto* catch_up = std::get_if<transport::CatchUpRequest>(&request)) {
      return Response::Ok(transport::CatchUpResponse{
          .applied_sequence = catch_up->until_sequence.value_or(catch_up->after_sequence),
          .applied = 0,
          .applied_bytes = 0,
          .read_micros = 0,
          .apply_micros = 0});
    }
    if (std::holds_alternative<transport::TransferBucketRequest>(request)) {
      return Response::Ok(
          transport::TransferBucketResponse{.next_cursor = "", .documents = 3, .bytes = 300});
    }
    if (std::holds_alternative<transport::BucketLoadRequest>(request)) {
      std::lock_guard<std::mutex> lock(mu_);
      return Response::Ok(load_);
    }
    return Response::Ok();
  }

  // Answers every request named `name` with `status` from now on.
  void Fail(const std::string& name, Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    failures_[name] = std::move(status);
  }
  void SetLoad(transport::BucketLoadResponse load) {
    std::lock_guard<std::mutex> lock(mu_);
    load_ = std::move(load);
  }
  [[nodiscard]] std::vector<std::string> received() const {
    std::lock_guard<std::mutex> lock(mu_);
    return received_;
  }
  // The requests received named `name`.
  [[nodiscard]] int Count(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(std::count(received_.begin(), received_.end(), name));
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> received_;
  std::map<std::string, Status> failures_;
  transport::BucketLoadResponse load_;
};

// The coordinator's parts on a SimRuntime, with fake nodes n1..n3 serving and a first map of
// n1 and n2 with two buckets (b0 on n1, b1 on n2).
class PartsTest : public ::testing::Test {
 protected:
  PartsTest()
      : sim_(transport::SimOptions{.seed = 3, .min_delay = 100, .max_delay = 300, .loss = 0}) {
    static std::atomic<int> counter{0};
    dir_ = (std::filesystem::temp_directory_path() /
            fmt::format("shoal-coordinator-parts-{}-{}", getpid(), counter++))
               .string();
    options_.call_timeout = 200 * kMs;
    options_.node_timeout = 1 * kSecond;
    options_.retry_backoff = 10 * kMs;
    options_.max_bytes_per_second = 0;
    options_.auto_balance = false;
    options_.balance_interval = 100 * kMs;
  }

  ~PartsTest() override {
    sim_.Shutdown();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Opens the store and the parts, starts the fake nodes and runs `body` on a task; then stops
  // every task of the coordinator process (a BalancerLoop the body started, say).
  void Run(const std::function<void()>& body) {
    std::filesystem::create_directories(dir_);
    auto store = metadata::EmbeddedMetadataStore::Open(
        {.path = dir_ + "/meta", .sync = false, .now_micros = [this] { return sim_.Now(); }});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    for (NodeId id : {kN1, kN2, kN3}) nodes_[id] = std::make_shared<FakeMoveNode>();
    membership_ = std::make_shared<Membership>(sim_, options_.node_timeout, options_.call_timeout);
    committer_ = std::make_shared<MapCommitter>(sim_, *store_, membership_, options_.call_timeout);
    progress_ = std::make_shared<ProgressCounters>();
    executor_ =
        std::make_shared<MoveExecutor>(sim_, *store_, committer_, membership_, progress_, options_);
    bool finished = false;
    sim_.Spawn(Address::Client(1), "test", [&] {
      for (auto& [id, fake] : nodes_) sim_.Serve(Address::Node(id), fake);
      EXPECT_TRUE(committer_->Load().ok());
      EXPECT_TRUE(committer_->Initialize({kN1, kN2}, 2).ok());
      body();
      sim_.Stop(Address::Coordinator());
      finished = true;
    });
    sim_.RunUntil(3600 * kSecond);
    EXPECT_TRUE(finished) << "the test task did not finish";
  }

  // The move log record of `move`, or "" without one.
  std::string LogOf(MoveId move) {
    auto record = store_->Get(fmt::format("moves/{:020}", move.value()));
    return record.ok() ? record->value : std::string();
  }

  const cluster::BucketPlacement& Placement(BucketId bucket) {
    map_ = committer_->map();
    return *map_->Find(bucket);
  }

  FakeMoveNode& node(NodeId id) { return *nodes_.at(id); }

  transport::SimRuntime sim_;
  std::string dir_;
  CoordinatorOptions options_;
  std::unique_ptr<metadata::EmbeddedMetadataStore> store_;
  std::map<NodeId, std::shared_ptr<FakeMoveNode>> nodes_;
  std::shared_ptr<Membership> membership_;
  std::shared_ptr<MapCommitter> committer_;
  std::shared_ptr<ProgressCounters> progress_;
  std::shared_ptr<MoveExecutor> executor_;
  cluster::ShardMapPtr map_;
};

}  // namespace shoal::coordinator::test
