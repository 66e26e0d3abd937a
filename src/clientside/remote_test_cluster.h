#pragma once

// RemoteTestCluster: a Shoal cluster on loopback for the remote shard backend's tests and the
// benchmark: a coordinator and `nodes` storage nodes, each on its own GrpcRuntime (real gRPC on
// a free port) in this process, and a network client (Database::Connect) to it. NewShard opens
// a new collection of the cluster as a RemoteShardBackend.
//
// Thread-safety: Start and the destructor from one thread; NewShard is not thread-safe; the
// shards are.

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "include/shoal/shoal.h"
#include "src/clientside/shard_backend.h"
#include "src/process/processes.h"

namespace shoal::clientside::testing {

class RemoteTestCluster {
 public:
  // Under `dir` (which must exist); `name` prefixes the collections.
  [[nodiscard]] static StatusOr<std::unique_ptr<RemoteTestCluster>> Start(const std::string& dir,
                                                                          uint32_t nodes,
                                                                          std::string name);
  ~RemoteTestCluster();
  RemoteTestCluster(const RemoteTestCluster&) = delete;
  RemoteTestCluster& operator=(const RemoteTestCluster&) = delete;

  [[nodiscard]] StatusOr<std::shared_ptr<ShardBackend>> NewShard();
  [[nodiscard]] Database& db() { return *db_; }

 private:
  explicit RemoteTestCluster(std::string name) : name_(std::move(name)) {}

  const std::string name_;
  int next_shard_ = 0;
  std::unique_ptr<process::CoordinatorProcess> coordinator_;
  std::map<uint32_t, std::unique_ptr<process::NodeProcess>> nodes_;
  std::unique_ptr<Database> db_;
};

}  // namespace shoal::clientside::testing
