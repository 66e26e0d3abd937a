#pragma once

// The state behind include/shoal/shoal.h's Database and Collection, shared by the embedded
// Database (database.cc) and the network one (src/net/remote_database.cc), which defines
// Database::Connect without making this library depend on gRPC.
//
// Thread-safety: as Database's; `mu` guards next_node and closed.

#include <memory>
#include <mutex>

#include "include/shoal/shoal.h"
#include "src/client/client.h"
#include "src/server/embedded_cluster.h"
#include "src/transport/thread_runtime.h"

namespace shoal {

struct Collection::Impl {
  client::Client* client;
  CollectionId id;
};

struct Database::Impl {
  // Embedded: the runtime of the in-process cluster (unused by a network client).
  transport::ThreadRuntime runtime;
  // Network: the client's runtime; null when embedded.
  std::unique_ptr<transport::Runtime> remote_runtime;
  std::unique_ptr<server::EmbeddedCluster> cluster;  // null for a network client
  std::unique_ptr<client::Client> client;
  std::mutex mu;
  uint32_t next_node = 0;
  bool closed = false;

  // Database's constructor is private: this is how the network client builds one.
  [[nodiscard]] static std::unique_ptr<Database> Wrap(std::unique_ptr<Impl> impl) {
    return std::unique_ptr<Database>(new Database(std::move(impl)));
  }
};

}  // namespace shoal
