#pragma once

// The networked server roles: a coordinator process and a storage node process, each on its own
// GrpcRuntime (docs/design/network.md). `shoal coordinator` and `shoal node` run one of them
// until SIGTERM; tests start several in one process on loopback.
//
// Thread-safety: Start and Stop are called by the owner; the accessors are thread-safe.

#include <cstdint>
#include <memory>
#include <string>

#include "src/coordinator/coordinator.h"
#include "src/metadata/metadata_store.h"
#include "src/net/grpc_runtime.h"
#include "src/node/storage_node.h"

namespace shoal::net {

struct CoordinatorProcessOptions {
  std::string data_dir{};  // metadata in data_dir/metadata, the address book in data_dir/addresses
  std::string listen = "127.0.0.1:7400";
  // A new cluster only (the stored map wins on restart): nodes 1..initial_nodes and this many
  // buckets.
  uint32_t initial_nodes = 3;
  uint32_t buckets = 32;
  bool sync = true;  // fsync metadata writes
  // Where the metadata lives: "embedded" (RocksDB in data_dir/metadata) or
  // "zk://HOST:PORT[,HOST:PORT...]/PATH" (a ZooKeeper ensemble, under the znode PATH).
  std::string metadata = "embedded";
  coordinator::CoordinatorOptions coordinator{};
  size_t max_message_bytes = kDefaultMaxMessageBytes;
  GrpcServerMode server_mode = GrpcServerMode::kSync;
};

class CoordinatorProcess {
 public:
  [[nodiscard]] static StatusOr<std::unique_ptr<CoordinatorProcess>> Start(
      const CoordinatorProcessOptions& options);
  ~CoordinatorProcess();

  // Stops serving, ends the coordinator's tasks and closes the metadata store. Idempotent.
  void Stop();

  [[nodiscard]] std::string address() const { return runtime_->advertised_address(); }
  [[nodiscard]] coordinator::Coordinator& coordinator() { return *coordinator_; }
  [[nodiscard]] GrpcRuntime& runtime() { return *runtime_; }

 private:
  CoordinatorProcess() = default;

  std::unique_ptr<GrpcRuntime> runtime_;
  std::unique_ptr<metadata::MetadataStore> metadata_;
  std::shared_ptr<coordinator::Coordinator> coordinator_;
  bool stopped_ = false;
};

struct NodeProcessOptions {
  // The node's id; 0 = the id stored in data_dir by an earlier start (data_dir/node-id).
  uint32_t id = 0;
  std::string data_dir{};
  std::string listen = "127.0.0.1:0";
  std::string advertise{};  // see GrpcRuntimeOptions::advertise
  std::string coordinator{};
  bool sync = false;  // fsync every acknowledged write
  size_t max_message_bytes = kDefaultMaxMessageBytes;
  GrpcServerMode server_mode = GrpcServerMode::kSync;
};

class NodeProcess {
 public:
  [[nodiscard]] static StatusOr<std::unique_ptr<NodeProcess>> Start(
      const NodeProcessOptions& options);
  ~NodeProcess();

  // Stops serving, waits for the node's handlers and closes its store. Idempotent.
  [[nodiscard]] Status Stop();

  [[nodiscard]] NodeId id() const { return node_->id(); }
  [[nodiscard]] std::string address() const { return runtime_->advertised_address(); }
  [[nodiscard]] node::StorageNode& node() { return *node_; }

 private:
  NodeProcess() = default;

  std::unique_ptr<GrpcRuntime> runtime_;
  std::shared_ptr<node::StorageNode> node_;
  bool stopped_ = false;
};

// Blocks SIGINT and SIGTERM in the calling thread (call before any thread starts, so every
// thread inherits the mask), then WaitForTermination returns the signal once one arrives.
void BlockTerminationSignals();
[[nodiscard]] int WaitForTermination();

}  // namespace shoal::net
