#pragma once

// The state behind include/shoal/shoal.h's Database and Collection. One implementation of the
// public API (database.cc, database_async.cc, database_hotspot.cc) runs on the smart client of a
// DatabaseBackend, which says how the cluster is reached: in this process
// (src/server/embedded_database.cc, Database::OpenEmbedded) or over the network
// (src/remote/remote_database.cc, Database::Connect). This library links neither: an application
// that only connects links no server library, and one that only embeds links no gRPC.
//
// Thread-safety: as Database's; `mu` guards closed, hot and the maintenance thread's start.

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
#include "src/transport/runtime.h"

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
  // `status` in the caller's words: the collection's internal id where the nodes' messages name
  // the collection by it ("collection c4", "c4 pk=") becomes its name, and "pk=" becomes "key ";
  // code and reason are kept. Quoted text (the caller's keys) is never rewritten.
  [[nodiscard]] Status InUserWords(const Status& status) const;
  template <typename T>
  [[nodiscard]] StatusOr<T> InUserWords(StatusOr<T> result) const {
    if (result.ok()) return result;
    return InUserWords(result.status());
  }

  client::Client* const client;
  const std::string name;

 private:
  const std::function<std::shared_ptr<hotspot::HotCollection>(CollectionId)> hot_for_;
  std::mutex mu_;                   // serializes the first resolution
  std::atomic<bool> known_{false};  // set, with release, once id_ and hot_ are
  CollectionId id_{};
  std::shared_ptr<hotspot::HotCollection> hot_;
};

// How a Database reaches its cluster. The backend owns the runtime, the client and whatever
// serves them (an embedded cluster, a map watch); Database owns the backend.
class DatabaseBackend {
 public:
  virtual ~DatabaseBackend() = default;

  // The runtime the client runs on (the hot collections' clock).
  [[nodiscard]] virtual transport::Runtime& runtime() = 0;
  // The smart client every operation goes through; valid until the backend is destroyed.
  [[nodiscard]] virtual client::Client& client() = 0;
  // Database::AddNode and Database::RemoveNode (kUnimplemented where the backend cannot).
  [[nodiscard]] virtual StatusOr<uint32_t> AddNode() = 0;
  [[nodiscard]] virtual Status RemoveNode(uint32_t node) = 0;
  // Stops what the backend runs, once, after Database::Close waited for the asynchronous
  // operations and stopped the maintenance thread. The client stays until destruction.
  [[nodiscard]] virtual Status Shutdown() = 0;
};

struct Database::Impl {
  explicit Impl(std::unique_ptr<DatabaseBackend> backend_in)
      : backend(std::move(backend_in)), client(&backend->client()) {}

  const std::unique_ptr<DatabaseBackend> backend;
  client::Client* const client;  // the backend's
  std::mutex mu;
  bool closed = false;
  // Collections opened so far, by name; the maintenance thread works through them.
  std::map<std::string, std::shared_ptr<hotspot::HotCollection>, std::less<>> hot;
  std::thread maintainer;
  std::condition_variable maintainer_wake;

  // The collection's shared HotCollection, and the maintenance thread on first use.
  [[nodiscard]] std::shared_ptr<hotspot::HotCollection> HotFor(std::string_view name,
                                                               CollectionId id);
  // Stops the maintenance thread (Close).
  void StopMaintainer();

  // Database's constructor is private: this is how a backend's entry point (OpenEmbedded,
  // Connect) builds one.
  [[nodiscard]] static std::unique_ptr<Database> Wrap(std::unique_ptr<DatabaseBackend> backend) {
    return std::unique_ptr<Database>(new Database(std::make_unique<Impl>(std::move(backend))));
  }
};

}  // namespace shoal
