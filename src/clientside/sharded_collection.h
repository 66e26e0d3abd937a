#pragma once

// ShardedCollection: the client library of a client-side sharded collection (paper 000). Routes
// each operation by hash mod n in `normal`, runs Algorithms 1-4 and 6 in `rebalancing`, and
// queues requests in the barrier states and in `cleanup` (Table 1). Design and invariants:
// docs/design/client-side-sharding.md, sharding_state.h, consistent_ops.h.
//
// Membership and barriers (§4): Open() starts a metadata session, registers the client as an
// ephemeral member, then reads the state (in that order, so a barrier that began before the
// client registered can never complete without it). A watch on the collection's metadata wakes a
// control thread, which on a barrier state stops admitting operations, waits for the ones in
// flight to finish, joins the barrier and tries to complete it; on `normal` or `rebalancing` it
// releases the queued requests, which then run with the algorithm of that state.
//
// Queries: Query() is admitted like an operation, registers an ephemeral query key, and fixes
// its shards and algorithm when opened; the cursor may then be read in any state until it is
// exhausted or destroyed, and the rebalancer waits for it before removing anything (§6.5).
//
// Thread-safety: every method may be called concurrently; a QueryCursor is used by one thread.
// Close() (or the destructor) must not race with other calls.

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/clientside/merge_query.h"
#include "src/clientside/shard_catalog.h"
#include "src/clientside/sharding_state.h"
#include "src/metadata/metadata_store.h"

namespace shoal::clientside {

struct ShardedCollectionOptions {
  metadata::MetadataStore* metadata = nullptr;  // outlives the collection
  std::shared_ptr<ShardCatalog> catalog{};
  std::string collection{};   // the metadata namespace; the state must exist (InitShardingState)
  std::string client_name{};  // unique among live clients; "" = derived from the session
  std::chrono::milliseconds session_ttl{10000};
  size_t query_page_size = 256;
  // A query's first page per shard in `rebalancing` (MergeQueryOptions::first_page_size): the
  // old shards also hold the matches of the keys moving away, and every shard adds a shadow row
  // (key and version, no body) per new-version copy that does not match, so the first page is
  // larger there to keep a query that fits in one page per shard in `normal` at one round trip
  // on its critical path. Later pages are query_page_size.
  size_t rebalancing_first_page_size = 1024;
};

class ShardedCollection;

// An open query (Algorithm 6). Deregisters itself when exhausted or destroyed.
class QueryCursor {
 public:
  ~QueryCursor();
  QueryCursor(const QueryCursor&) = delete;
  QueryCursor& operator=(const QueryCursor&) = delete;

  // Up to `max` next documents in primary-key order; empty when exhausted.
  [[nodiscard]] StatusOr<std::vector<ShardDocument>> Next(size_t max);

 private:
  friend class ShardedCollection;
  QueryCursor(metadata::MetadataStore* store, std::string key, std::unique_ptr<MergeQuery> query)
      : store_(store), key_(std::move(key)), query_(std::move(query)) {}
  void Deregister();

  metadata::MetadataStore* store_;
  std::string key_;  // "" once deregistered
  std::unique_ptr<MergeQuery> query_;
};

class ShardedCollection {
 public:
  [[nodiscard]] static StatusOr<std::unique_ptr<ShardedCollection>> Open(
      ShardedCollectionOptions options);
  ~ShardedCollection();
  ShardedCollection(const ShardedCollection&) = delete;
  ShardedCollection& operator=(const ShardedCollection&) = delete;

  // Waits for operations in flight, leaves the member set (which may complete a barrier).
  // Queued requests fail with kCancelled. Idempotent.
  [[nodiscard]] Status Close();

  // Paper 000 §6. kAlreadyExists (DUPLICATE), kNotFound, kCancelled after Close, or a shard
  // failure. `body` is a JSON object text.
  [[nodiscard]] Status Add(std::string_view primary_key, std::string_view body);
  [[nodiscard]] Status Update(std::string_view primary_key, std::string_view body);
  [[nodiscard]] Status Delete(std::string_view primary_key);
  [[nodiscard]] StatusOr<ShardDocument> Get(std::string_view primary_key);
  [[nodiscard]] StatusOr<std::unique_ptr<QueryCursor>> Query(storage::DocumentFilter filter);

  // The state this client currently acts on.
  [[nodiscard]] ShardingState state() const;
  [[nodiscard]] const std::string& client_name() const { return client_name_; }
  [[nodiscard]] Status CheckInvariants() const;

 private:
  explicit ShardedCollection(ShardedCollectionOptions options);
  [[nodiscard]] Status Start();
  // Blocks until the state admits operations; counts one in flight.
  [[nodiscard]] StatusOr<ShardingState> Admit();
  void Release();
  // The shards of `primary_key` under `state`; `consistent` iff Algorithms 1-4 apply.
  struct Targets {
    ShardBackend* old_shard = nullptr;
    ShardBackend* new_shard = nullptr;
    bool consistent = false;
  };
  [[nodiscard]] StatusOr<Targets> Resolve(const ShardingState& state,
                                          std::string_view primary_key) const;
  void ControlLoop();
  [[nodiscard]] Status Refresh();

  const ShardedCollectionOptions options_;
  const StateKeys keys_;
  metadata::SessionId session_{};
  std::string client_name_;
  metadata::WatchId watch_{};

  mutable std::mutex mu_;
  std::condition_variable cv_;  // state_ changed, in_flight_ dropped, dirty_ set, closing_
  ShardingState state_{};       // guarded by mu_
  bool joined_ = false;         // joined the barrier of state_ (mu_)
  size_t in_flight_ = 0;        // admitted operations running (mu_)
  bool dirty_ = true;           // the metadata changed since the control loop last looked (mu_)
  bool closing_ = false;        // (mu_)
  bool lost_ = false;           // the session expired: no longer a member (mu_)
  uint64_t next_query_ = 0;     // (mu_)
  std::string last_join_key_;   // the barrier key joined last; control thread only
  std::thread control_;
  bool closed_ = false;
};

}  // namespace shoal::clientside
