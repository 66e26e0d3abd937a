#pragma once

// The state behind include/shoal/shoal.h's Database and Collection, shared by the embedded
// Database (database.cc) and the network one (src/net/remote_database.cc), which defines
// Database::Connect without making this library depend on gRPC.
//
// Thread-safety: as Database's; `mu` guards next_node and closed.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "include/shoal/shoal.h"
#include "src/client/client.h"
#include "src/hotspot/hot_collection.h"
#include "src/server/embedded_cluster.h"
#include "src/transport/thread_runtime.h"

namespace shoal {

// How an operation of Collection needs its collection. Only an operation that can store a
// document where none is (Insert, Upsert, CompareAndSet with expected version 0, a Batch holding
// one of those), Declare and Database::CreateCollection create a collection that does not exist;
// every other one fails with kNotFound (storage reason kUnknownCollection, naming it) and creates
// nothing.
enum class CollectionUse : uint8_t { kCreateIfMissing, kMustExist };

// A collection known to exist: its id and its HotCollection (declared fields; shared per name,
// owned by Collection::Impl).
struct ResolvedCollection {
  CollectionId id;
  hotspot::HotCollection* hot;
};

struct Collection::Impl {
  // `hot_for` gives the collection's shared HotCollection once its id is known.
  Impl(client::Client* client, std::string name,
       std::function<std::shared_ptr<hotspot::HotCollection>(CollectionId)> hot_for)
      : client(client), name(std::move(name)), hot_for_(std::move(hot_for)) {}

  // The collection's id and HotCollection, asking the cluster the first time (and, while the
  // collection does not exist, every time): `use` says whether a missing collection is created.
  [[nodiscard]] StatusOr<ResolvedCollection> Resolve(CollectionUse use);
  // Resolve's answer if it is known without asking the cluster.
  [[nodiscard]] std::optional<ResolvedCollection> Known() const;

  client::Client* const client;
  const std::string name;

 private:
  const std::function<std::shared_ptr<hotspot::HotCollection>(CollectionId)> hot_for_;
  std::mutex mu_;                   // serializes the first resolution
  std::atomic<bool> known_{false};  // set, with release, once id_ and hot_ are
  CollectionId id_{};
  std::shared_ptr<hotspot::HotCollection> hot_;
};

struct Database::Impl {
  // Embedded: the runtime of the in-process cluster (unused by a network client).
  transport::ThreadRuntime runtime;
  // Network: the client's runtime; null when embedded.
  std::unique_ptr<transport::Runtime> remote_runtime;
  std::unique_ptr<server::EmbeddedCluster> cluster;  // null for a network client
  std::unique_ptr<client::Client> client;
  // Network: the client's map watch (src/net/map_watcher.h; opaque here, so that this library
  // does not depend on gRPC). Close ends it before the client and the runtime go.
  std::shared_ptr<void> map_watcher;
  std::mutex mu;
  uint32_t next_node = 0;
  bool closed = false;
  // Collections opened so far, by name; the maintenance thread works through them.
  std::map<std::string, std::shared_ptr<hotspot::HotCollection>, std::less<>> hot;
  std::thread maintainer;
  std::condition_variable maintainer_wake;

  [[nodiscard]] transport::Runtime& ActiveRuntime() {
    return remote_runtime != nullptr ? *remote_runtime : static_cast<transport::Runtime&>(runtime);
  }
  // The collection's shared HotCollection, and the maintenance thread on first use.
  [[nodiscard]] std::shared_ptr<hotspot::HotCollection> HotFor(std::string_view name,
                                                               CollectionId id);
  // Stops the maintenance thread (Close).
  void StopMaintainer();

  // Database's constructor is private: this is how the network client builds one.
  [[nodiscard]] static std::unique_ptr<Database> Wrap(std::unique_ptr<Impl> impl) {
    return std::unique_ptr<Database>(new Database(std::move(impl)));
  }
};

}  // namespace shoal
