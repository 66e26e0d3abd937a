#pragma once

// Test support for the Coalescer and the Pipeline: a scripted node (FakeNode) on a ThreadRuntime
// and request builders. Not part of any library.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/cluster/shard_map.h"
#include "src/transport/messages.h"
#include "src/transport/runtime.h"

namespace shoal::client::test {

using transport::Address;
using transport::ClusterError;
using transport::Request;
using transport::Response;

constexpr CollectionId kCollection(7);

// Waits for `condition` with a generous deadline (the machine may be loaded).
inline bool WaitFor(const std::function<bool()>& condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

inline uint64_t VersionOf(std::string_view key) {
  return 1000 + std::hash<std::string_view>{}(key) % 1000;
}

// A scripted node: answers each key on its own ("wrong*": WRONG_SHARD with `route` unless that is
// null, "missing*":
// NOT_FOUND, "dup*": ALREADY_EXISTS; else OK with VersionOf(key) or a document naming the key),
// records the operations per call, and can hold calls until released.
class FakeNode final : public transport::Service {
 public:
  FakeNode(transport::Runtime& runtime, cluster::ShardMapPtr route)
      : runtime_(runtime), route_(std::move(route)) {}

  Response Handle(const Address&, const Request& request) override {
    const bool batch = std::holds_alternative<transport::BatchWriteRequest>(request) ||
                       std::holds_alternative<transport::BatchGetRequest>(request);
    Hold(batch ? hold_batches : hold_all);
    if (const auto* write = std::get_if<transport::WriteRequest>(&request)) {
      Record({write->primary_key});
      return Write(write->primary_key);
    }
    if (const auto* get = std::get_if<transport::GetRequest>(&request)) {
      Record({get->primary_key});
      return Get(get->primary_key);
    }
    if (const auto* writes = std::get_if<transport::BatchWriteRequest>(&request)) {
      std::vector<std::string> keys;
      transport::BatchWriteResponse out;
      cluster::ShardMapPtr route;
      for (const auto& write : writes->writes) {
        keys.push_back(write.primary_key);
        Response one = Write(write.primary_key);
        if (one.route != nullptr) route = one.route;
        out.results.push_back(transport::BatchWriteResult{
            .status = one.status,
            .version = one.status.ok() ? std::get<transport::WriteResponse>(one.body).version : 0});
      }
      Record(std::move(keys));
      return Response{.status = OkStatus(), .body = std::move(out), .route = route};
    }
    if (const auto* gets = std::get_if<transport::BatchGetRequest>(&request)) {
      std::vector<std::string> keys;
      transport::BatchGetResponse out;
      cluster::ShardMapPtr route;
      for (const auto& get : gets->gets) {
        keys.push_back(get.primary_key);
        Response one = Get(get.primary_key);
        if (one.route != nullptr) route = one.route;
        out.results.push_back(transport::BatchGetResult{
            .status = one.status,
            .document = one.status.ok() ? std::get<transport::GetResponse>(one.body).document
                                        : storage::Document{}});
      }
      Record(std::move(keys));
      return Response{.status = OkStatus(), .body = std::move(out), .route = route};
    }
    return Response::Error(UnimplementedError("not scripted"));
  }

  // The keys of each call, in arrival order.
  std::vector<std::vector<std::string>> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

  std::atomic<bool> hold_all{false};      // every call waits while set
  std::atomic<bool> hold_batches{false};  // batch calls wait while set
  std::atomic<int> held{0};               // calls waiting now

 private:
  void Hold(const std::atomic<bool>& flag) {
    if (!flag.load()) return;
    ++held;
    while (flag.load()) {
      if (!runtime_.Sleep(200).ok()) break;
    }
    --held;
  }
  void Record(std::vector<std::string> keys) {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(std::move(keys));
  }
  Response Write(const std::string& key) {
    if (route_ != nullptr && key.starts_with("wrong")) {
      return Response::Error(MakeClusterError(ClusterError::kWrongShard, "moved"), route_);
    }
    if (key.starts_with("dup")) return Response::Error(AlreadyExistsError("duplicate"));
    return Response::Ok(transport::WriteResponse{.version = VersionOf(key)});
  }
  Response Get(const std::string& key) {
    if (route_ != nullptr && key.starts_with("wrong")) {
      return Response::Error(MakeClusterError(ClusterError::kWrongShard, "moved"), route_);
    }
    if (key.starts_with("missing")) return Response::Error(NotFoundError("no such key"));
    return Response::Ok(transport::GetResponse{.document = {.collection = kCollection,
                                                            .primary_key = key,
                                                            .body = "{\"k\":\"" + key + "\"}",
                                                            .version = VersionOf(key),
                                                            .tombstone = false}});
  }

  transport::Runtime& runtime_;
  const cluster::ShardMapPtr route_;
  mutable std::mutex mu_;
  std::vector<std::vector<std::string>> calls_;
};

inline transport::WriteRequest Upsert(std::string key) {
  return transport::WriteRequest{.epoch = MapEpoch(1),
                                 .op = transport::WriteOp::kUpsert,
                                 .collection = kCollection,
                                 .primary_key = std::move(key),
                                 .body = "{}",
                                 .expected_version = 0,
                                 .via_move = std::nullopt};
}

inline transport::GetRequest Get(std::string key) {
  return transport::GetRequest{.epoch = MapEpoch(1),
                               .collection = kCollection,
                               .primary_key = std::move(key),
                               .via_move = std::nullopt,
                               .include_tombstones = false};
}

// A map of one bucket on `node` at `epoch`.
inline cluster::ShardMapPtr MapOn(uint32_t node, uint64_t epoch) {
  auto initial = cluster::ShardMap::Initial(
      {.nodes = {NodeId(node)}, .bucket_count = 1, .replication_factor = 1});
  EXPECT_TRUE(initial.ok());
  auto map = cluster::ShardMap::Create(MapEpoch(epoch), 1,
                                       {initial->nodes().begin(), initial->nodes().end()},
                                       {initial->buckets().begin(), initial->buckets().end()});
  EXPECT_TRUE(map.ok());
  return std::make_shared<const cluster::ShardMap>(std::move(*map));
}

}  // namespace shoal::client::test
