#pragma once

// Client: the smart client of a Shoal cluster. It caches the ShardMap, routes every request to
// the node that owns the key at its epoch, and follows the cluster through moves:
//   - WRONG_SHARD carries the answering node's map: the client adopts it when newer (else asks
//     the coordinator) and retries at once; NOT_SERVING (a fenced source, a destination that has
//     not learned the commit) and transport failures are retried with bounded exponential
//     backoff.
//   - A map watch (src/remote/map_watcher.h, over the network) hands newer maps to Adopt, so the
//     client usually learns a move's commit before a request of it hits WRONG_SHARD.
//   - A write whose request or reply was lost in transit (kDeadlineExceeded from the transport)
//     may have been applied; retrying it could apply it again after other writes, so the client
//     returns kUnknown ("outcome unknown") at once, like FoundationDB's commit_unknown_result.
//     Requests that were certainly not handled (kUnavailable, WRONG_SHARD, NOT_SERVING) are
//     retried; every other result is exact.
//   - With ClientOptions::coalesce, the single-key calls of concurrent threads to one node share
//     calls (coalescer.h); each operation keeps the semantics above, retried on its own.
//   - The *Async operations send their first attempt through the Pipeline (pipeline.h): one
//     thread can keep many operations in flight, batched per node. A first attempt that must be
//     retried (WRONG_SHARD, NOT_SERVING, a request certainly not delivered) is finished by the
//     synchronous path on a task of the client's own, so each operation's result is exactly what
//     the synchronous call would have returned. client_async.cc.
//   - Query walks the hash space in (point, collection, primary key) order, one bucket page at a
//     time, and resumes from the last key returned at whichever node owns it now, so each live
//     document is returned exactly once even while buckets move, split or merge (paper 000
//     Algorithm 6 needs a merge because it reads two shards; with one owner per key at every
//     instant, the walk by key order is the merge).
//   - QueryStream is the same walk over streamed scans (Runtime::StreamScan): one stream per
//     bucket, pages arriving without a round trip each; a stream that ends early (WRONG_SHARD,
//     a lost connection, the stream deadline) is reopened at the owner of the last cursor's
//     point under the newest map, so the documents and their order are exactly Query's.
//
// Thread-safety: all methods are thread-safe; calls must come from runtime tasks (or, with
// ThreadRuntime, from any thread).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/client/coalescer.h"
#include "src/client/pipeline.h"
#include "src/cluster/shard_map.h"
#include "src/common/ids.h"
#include "src/common/point.h"
#include "src/common/status.h"
#include "src/storage/document.h"
#include "src/storage/predicate.h"
#include "src/transport/classify.h"
#include "src/transport/runtime.h"

namespace shoal::client {

// ClientOptions::retry_for of the clients applications use (Database::Connect, the embedded
// Database, `shoal demo`): more than a failover takes (failover_timeout + read lease + drift +
// the map edit, about 2.2 s at the defaults), so an operation on a dead primary's bucket waits
// for its replacement instead of failing.
inline constexpr transport::Micros kApplicationRetryFor = 5'000'000;

struct ClientOptions {
  transport::Micros call_timeout = 1'000'000;
  // Failures that are safe to retry (a node that does not answer, NOT_SERVING, a stale route)
  // are retried while the operation has made fewer than max_attempts attempts OR less than
  // retry_for has passed since its first one, so that an operation waits out a failover
  // (docs/design/replication.md §4: 1-2 s) instead of failing. 0: max_attempts alone.
  int max_attempts = 12;
  transport::Micros retry_for = 0;
  transport::Micros initial_backoff = 1'000;
  transport::Micros max_backoff = 200'000;
  // Bounds one streamed scan (QueryStream); a stream cut by it resumes from its last cursor.
  transport::Micros stream_timeout = 60'000'000;
  // Sends the single-key gets and writes that concurrent threads issue to one node as batches
  // while a call to that node is in flight (coalescer.h). Only for runtimes whose tasks are OS
  // threads (GrpcRuntime, ThreadRuntime), never the simulation; the network client turns it on.
  bool coalesce = false;
  // Calls in flight per node and kind for the *Async operations (PipelineOptions).
  size_t async_calls_in_flight = 1;
};

struct QueryOptions {
  CollectionId collection;
  storage::DocumentFilter filter;
  uint32_t limit = 1000;  // documents per page, >= 1
  std::string cursor;     // QueryPage::next_cursor of the previous page; "" = from the start
};

struct QueryPage {
  std::vector<storage::Document> documents;
  std::string next_cursor;  // "" = no more documents
};

struct ClientCounters {
  uint64_t wrong_shard = 0;
  uint64_t retries = 0;
  uint64_t map_refreshes = 0;
  uint64_t maps_adopted = 0;    // by Adopt (a map watch)
  CoalescerCounters coalescer;  // all zero unless ClientOptions::coalesce
  PipelineCounters pipeline;    // the *Async operations' first attempts
  uint64_t async_retried = 0;   // *Async operations finished by the synchronous path
};

class Client {
 public:
  Client(transport::Runtime& runtime, const ClientOptions& options = {});
  // Waits for the asynchronous operations (WaitAsync).
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Fetches the map from the coordinator.
  [[nodiscard]] Status Refresh();
  // Adopts `map` if it is newer than the cached one (epochs only go up); true if it did.
  bool Adopt(const cluster::ShardMapPtr& map);
  // Creates the collection if needed and returns its id. A name outside
  // storage::ValidateCollectionName is kInvalidArgument, and is not sent.
  [[nodiscard]] StatusOr<CollectionId> OpenCollection(std::string_view name);
  // The id of the existing collection `name`, from the coordinator's current state; never
  // creates it. A collection that does not exist is kNotFound with storage reason
  // kUnknownCollection, naming it; a name outside the rule is kInvalidArgument, and is not sent.
  [[nodiscard]] StatusOr<CollectionId> FindCollection(std::string_view name);

  [[nodiscard]] StatusOr<uint64_t> Insert(CollectionId c, std::string_view pk,
                                          std::string_view json);
  [[nodiscard]] StatusOr<uint64_t> Update(CollectionId c, std::string_view pk,
                                          std::string_view json);
  [[nodiscard]] StatusOr<uint64_t> Upsert(CollectionId c, std::string_view pk,
                                          std::string_view json);
  [[nodiscard]] StatusOr<uint64_t> Delete(CollectionId c, std::string_view pk);
  // Writes iff the stored version equals `expected_version`.
  [[nodiscard]] StatusOr<uint64_t> CompareAndSet(CollectionId c, std::string_view pk,
                                                 uint64_t expected_version, std::string_view json);
  // Applies `writes` (each a WriteRequest without epoch or via_move) and returns one result per
  // write, in input order. Not atomic: each write succeeds or fails on its own, with the result
  // the same write would have alone. The writes are grouped by owning node and the groups sent
  // concurrently (one BatchWriteRequest each); writes answered WRONG_SHARD or NOT_SERVING are
  // re-routed and resent, within max_attempts rounds; a group whose request or reply was lost
  // gets kUnknown in each of its slots. The call itself fails only for a batch outside the
  // limits of transport::ValidateBatch (then nothing is sent) or when the caller was stopped.
  // client_batch.cc.
  [[nodiscard]] StatusOr<std::vector<StatusOr<uint64_t>>> Batch(
      std::vector<transport::WriteRequest> writes);
  [[nodiscard]] StatusOr<storage::Document> Get(CollectionId c, std::string_view pk);
  // A read any copy may answer, possibly stale (docs/design/replication.md §5): the copies of
  // the key's bucket take turns; a backup answers with a committed value at most
  // NodeOptions::max_staleness behind its primary, and any other answer sends the read to the
  // primary (Get). Unreplicated buckets read their only copy.
  [[nodiscard]] StatusOr<storage::Document> GetAnyReplica(CollectionId c, std::string_view pk);
  [[nodiscard]] StatusOr<QueryPage> Query(const QueryOptions& options);
  // Calls `fn` with every matching live document, in Query's order, from options.cursor to the
  // end; options.limit is the documents per streamed message (1..the server's stream limit,
  // 1000 by default). A non-OK status from `fn` cancels the stream and is returned as is.
  [[nodiscard]] Status QueryStream(const QueryOptions& options,
                                   const std::function<Status(storage::Document)>& fn);

  // Asynchronous single-key operations: each returns at once and calls `done` exactly once with
  // what the synchronous operation would have returned. `done` runs on a transport thread, on a
  // task of this client, or (when the request fails before it is sent) on the calling thread; it
  // must not block, and may start more asynchronous operations. Operations in flight at once are
  // concurrent (no order between them): to order two, start the second from the first's `done`.
  // Each must finish before the runtime shuts down: see WaitAsync.
  using WriteDone = std::function<void(StatusOr<uint64_t>)>;
  using GetDone = std::function<void(StatusOr<storage::Document>)>;
  // `request`: a WriteRequest without epoch or via_move, as for Batch.
  void WriteAsync(transport::WriteRequest request, WriteDone done);
  void GetAsync(CollectionId c, std::string pk, GetDone done);
  // Runs `fn` (which may block) on a task of this client, counted as an asynchronous operation.
  void RunAsync(std::function<void()> fn);
  // Waits until every asynchronous operation started so far has called its `done`.
  void WaitAsync();

  [[nodiscard]] cluster::ShardMapPtr map() const;
  [[nodiscard]] ClientCounters counters() const;

 private:
  [[nodiscard]] StatusOr<uint64_t> Write(transport::WriteRequest request);
  // What one attempt of CallOwner came to (transport::Classify); shared by CallOwner and
  // CallOwnerAsync. `error`: for kUnknownOutcome and kGiveUp, the status to return.
  struct Attempt {
    transport::RetryAction action;
    Status error;
  };
  [[nodiscard]] static Attempt Judge(const StatusOr<transport::Response>& response,
                                     bool idempotent);
  // Whether an operation (or a scan's step) that made `attempts` attempts, the first at
  // `started`, may make another (ClientOptions::max_attempts and retry_for).
  [[nodiscard]] bool MayRetry(int attempts, transport::Micros started) const;
  // The error of a call that used up its attempts, `last` its latest failure: kUnavailable,
  // carrying NOT_ENOUGH_REPLICAS or NOT_SERVING when `last` does.
  [[nodiscard]] Status GaveUp(const Status& last, int attempts, transport::Micros started) const;
  // CallOwner's first attempt through the Pipeline, then (if it must be retried) CallOwner
  // itself on a task; `done` gets CallOwner's result.
  void CallOwnerAsync(Point point, std::function<transport::Request(MapEpoch)> make_request,
                      bool idempotent, std::function<void(StatusOr<transport::Response>)> done);
  // Counts one more asynchronous operation; returns the process its tasks act for.
  transport::Address BeginAsync();
  void EndAsync();
  // Sends make_request(epoch) to the owner of `point` under the cached map, following
  // WRONG_SHARD routes and retrying what was certainly not handled; a lost request or reply is
  // retried only when `idempotent`, otherwise it is kUnknown. Returns an OK response or the error.
  [[nodiscard]] StatusOr<transport::Response> CallOwner(
      Point point, const std::function<transport::Request(MapEpoch)>& make_request,
      bool idempotent);
  // Adopts `route` if it is newer than the cached map, else refreshes from the coordinator.
  void LearnRoute(const cluster::ShardMapPtr& route);
  [[nodiscard]] Status Backoff(int attempt);
  // The coordinator's state (one GetMap call); adopts its map if newer than the cached one.
  [[nodiscard]] StatusOr<transport::ClusterState> FetchState();
  [[nodiscard]] StatusOr<cluster::ShardMapPtr> CurrentMap();
  // Sends each of `calls` (node, request) and returns the answers in that order: the first on
  // the calling task, the others on tasks of their own that run concurrently.
  [[nodiscard]] std::vector<StatusOr<transport::Response>> CallAll(
      std::vector<std::pair<NodeId, transport::Request>> calls);
  // What to do after a scan of the walk failed with `status` (`route`: its WRONG_SHARD map):
  // OK to retry (after learning the route or backing off), else the error to return.
  // `retries`: the scan step's failed attempts, and when the first began (MayRetry); a step
  // that delivered pages starts afresh.
  struct ScanRetries {
    int attempts = 0;
    transport::Micros started = 0;
  };
  [[nodiscard]] Status AfterScanFailure(const Status& status, transport::StatusOrigin origin,
                                        const cluster::ShardMapPtr& route, bool delivered,
                                        ScanRetries* retries);

  transport::Runtime& runtime_;
  const ClientOptions options_;
  const std::unique_ptr<Coalescer> coalescer_;  // null unless options_.coalesce
  std::atomic<uint64_t> next_replica_{0};       // GetAnyReplica's turn
  const std::unique_ptr<Pipeline> pipeline_;
  mutable absl::Mutex mu_;
  cluster::ShardMapPtr map_ ABSL_GUARDED_BY(mu_);
  ClientCounters counters_ ABSL_GUARDED_BY(mu_);
  absl::Mutex async_mu_;
  absl::CondVar async_idle_;  // async_outstanding_ became 0
  uint64_t async_outstanding_ ABSL_GUARDED_BY(async_mu_) = 0;
  // The process the client's tasks act for: the first asynchronous caller's (not known at
  // construction: the simulation has no process outside its tasks).
  std::optional<transport::Address> self_ ABSL_GUARDED_BY(async_mu_);
};

// The node that acknowledges writes (and serves reads) of `bucket` at its map's epoch.
using cluster::OwnerOf;

}  // namespace shoal::client
