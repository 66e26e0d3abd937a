#pragma once

// Shoal's public client API: open a cluster, get collections, read and write JSON documents.
//
//   auto db = shoal::Database::OpenEmbedded({.data_dir = "/var/lib/shoal"});
//   // or, to a running cluster: shoal::Database::Connect("shoal://127.0.0.1:7400")
//   auto users = (*db)->GetCollection("users");
//   users->Insert("alice", R"({"name": "Alice", "age": 31})");
//   auto doc = users->Get("alice");                       // doc->json, doc->version
//   auto page = users->Query({.filter = {{"age", shoal::Op::kGe, "30"}}, .limit = 100});
//
// Errors are shoal::Status values, never exceptions. Codes and what they mean:
//   kAlreadyExists        Insert of a key that holds a live document (DUPLICATE)
//   kNotFound             Get/Update/Delete of an absent key; an operation that does not
//                         create a collection, on one that does not exist (GetCollection)
//   kFailedPrecondition   CompareAndSet whose expected version does not match
//   kInvalidArgument      malformed JSON, a body that is not an object, an empty key, a bad
//                         filter, cursor or collection name
//   kResourceExhausted    key > 8 KiB, body > 1 MiB, nesting > 64
//   kUnknown              a write whose outcome is unknown (its request or reply was lost):
//                         read the key to find out
//   kUnavailable          the cluster could not serve the request within the retry budget
// Thread-safety: Database and Collection are thread-safe; share them between threads.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "include/shoal/status.h"

namespace shoal {

struct Document {
  std::string key;
  std::string json;
  uint64_t version = 0;  // changes with every write of the document
};

enum class Op : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };

// `path` is a dotted path of object members ("address.zip"); `json_value` a JSON literal
// ("30", "\"Paris\"", "true", "null").
struct Condition {
  std::string path;
  Op op = Op::kEq;
  std::string json_value;
};

struct QueryOptions {
  std::vector<Condition> filter{};  // all must hold; empty = every document
  uint32_t limit = 1000;            // documents per page
  std::string cursor{};             // QueryPage::next_cursor of the previous page
};

struct QueryPage {
  std::vector<Document> documents;  // in a stable order; each live document exactly once
  std::string next_cursor;          // empty when there is nothing more
};

// Sharded fields and entity groups (paper 003; docs/design/hotspot.md). A collection declares
// hot fields; their values live in shard documents and Get, Query and the mapper fold them.
struct ApplyOptions {
  bool retry_on_conflict = true;  // false: a conflicting update fails with kAborted
  // Concurrent Apply calls of this process on one field share writes when all its shards are
  // busy (one write carries the fold of their operands; each call returns when it lands). For
  // many threads of a networked client on one hot field; in an embedded Database on few cores
  // the hand-offs between threads cost more than the conflicts they save
  // (docs/design/hotspot.md, "Combining").
  bool combine = false;
};

struct ApplyResult {
  uint32_t conflicts = 0;  // conflicting attempts before the update landed
  uint32_t members = 1;    // updates carried by the write that carried this one (combine)
};

enum class ReadMode : uint8_t {
  kLatest,    // every update acknowledged before the read began; some concurrent ones
  kSnapshot,  // the values held at one instant (may fail with kAborted under heavy writes)
  // Any copy of the document may answer (spreads reads over the K copies). Possibly stale: it
  // reflects every update acknowledged at least 1 s (the nodes' max_staleness) before the read
  // began, and never an update that is not yet on every copy. Sharded fields fold as kLatest.
  kAnyReplica,
};

struct ReadOptions {
  ReadMode mode = ReadMode::kLatest;
};

// One write of Collection::Batch. `json` is ignored by kDelete; `expected_version` is used only
// by kCompareAndSet.
enum class BatchOp : uint8_t { kInsert, kUpdate, kUpsert, kDelete, kCompareAndSet };
struct BatchWrite {
  BatchOp op = BatchOp::kUpsert;
  std::string key;
  std::string json;
  uint64_t expected_version = 0;
};
// Limits of one Batch: 1 to kMaxBatchWrites writes, at most kMaxBatchBytes of keys plus JSON.
inline constexpr size_t kMaxBatchWrites = 1000;
inline constexpr size_t kMaxBatchBytes = size_t{16} << 20;

struct ShardingInfo {
  std::string kind;             // "static", "dynamic", "auto" or "entity_group"
  uint32_t active_cells = 0;    // shard documents taking updates (groups for entity groups)
  uint32_t retiring_cells = 0;  // being folded away by a shrink
  uint32_t pending_cells = 0;   // dynamic: cells the compactor has not folded yet
  uint32_t distinct_buckets = 0;
  uint32_t distinct_nodes = 0;
};

class Collection {
 public:
  [[nodiscard]] StatusOr<uint64_t> Insert(std::string_view key, std::string_view json);
  [[nodiscard]] StatusOr<uint64_t> Update(std::string_view key, std::string_view json);
  [[nodiscard]] StatusOr<uint64_t> Upsert(std::string_view key, std::string_view json);
  [[nodiscard]] StatusOr<uint64_t> Delete(std::string_view key);
  [[nodiscard]] StatusOr<uint64_t> CompareAndSet(std::string_view key, uint64_t expected_version,
                                                 std::string_view json);
  [[nodiscard]] StatusOr<Document> Get(std::string_view key);
  [[nodiscard]] StatusOr<QueryPage> Query(const QueryOptions& options);
  // Many writes in few round trips: one result per write, in input order, each what the same
  // single call would have returned (a version or its error). NOT atomic: each write is
  // atomic and durable once acknowledged, independently of the others; two writes to one key
  // apply in input order. The call fails as a whole, writing nothing, only for an empty batch
  // (kInvalidArgument) or one over kMaxBatchWrites writes or kMaxBatchBytes bytes
  // (kResourceExhausted).
  [[nodiscard]] StatusOr<std::vector<StatusOr<uint64_t>>> Batch(std::span<const BatchWrite> writes);

  // Asynchronous single-key operations, for keeping many operations in flight from few threads:
  // each returns at once and later calls `done` exactly once with what the synchronous call
  // would have returned. Over the network, operations in flight to one node go out together as
  // batch calls (docs/design/network.md, "Asynchronous operations").
  //   - `done` runs on a client thread (or on the calling thread when the operation fails
  //     before anything is sent): it must not block or call the synchronous API; it may start
  //     more asynchronous operations.
  //   - Operations in flight at once are concurrent, applied in any order: to order two writes,
  //     start the second from the first's `done`.
  //   - Database::WaitAsync waits for every `done`; Close and the destructor do too.
  using WriteCallback = std::function<void(StatusOr<uint64_t>)>;
  using GetCallback = std::function<void(StatusOr<Document>)>;
  void InsertAsync(std::string_view key, std::string_view json, WriteCallback done);
  void UpdateAsync(std::string_view key, std::string_view json, WriteCallback done);
  void UpsertAsync(std::string_view key, std::string_view json, WriteCallback done);
  void DeleteAsync(std::string_view key, WriteCallback done);
  void GetAsync(std::string_view key, GetCallback done);
  // Calls `fn` with every matching live document exactly once, in Query's order, from
  // options.cursor to the end, as pages stream in (one stream per bucket over the network);
  // options.limit is the documents per streamed message (at most the server's limit, 1000 by
  // default). Returning a non-OK status from `fn` stops the stream and is returned as is.
  [[nodiscard]] Status QueryStream(const QueryOptions& options,
                                   const std::function<Status(const Document&)>& fn);

  // Declares sharded fields and entity groups (merged into the collection's schema), e.g.
  //   R"({"votes": {"fold": "sum", "neutral": 0, "shards": 10}})"
  // Writes that set a declared field directly are then kInvalidArgument: use Apply.
  [[nodiscard]] Status Declare(std::string_view schema_json);
  // The collection's declared fields as JSON ("{}" when none).
  [[nodiscard]] StatusOr<std::string> Schema();
  // Folds `operand_json` into one shard of the sharded `field` of `key` (e.g. "1" for a vote).
  [[nodiscard]] StatusOr<ApplyResult> Apply(std::string_view key, std::string_view field,
                                            std::string_view operand_json,
                                            const ApplyOptions& options = {});
  [[nodiscard]] StatusOr<Document> Get(std::string_view key, const ReadOptions& options);
  // Entity groups: adds (or replaces) and removes one member of `key`'s group `field`.
  [[nodiscard]] Status PutMember(std::string_view key, std::string_view field,
                                 std::string_view member, std::string_view json);
  [[nodiscard]] Status RemoveMember(std::string_view key, std::string_view field,
                                    std::string_view member);
  // How `field` of `key` is spread now.
  [[nodiscard]] StatusOr<ShardingInfo> Sharding(std::string_view key, std::string_view field);
  // Sets the number of shards of a static or auto field of one document.
  [[nodiscard]] Status Reshard(std::string_view key, std::string_view field, uint32_t shards);
  // Folds pending dynamic cells and finishes interrupted reshards of `key` now.
  [[nodiscard]] Status Compact(std::string_view key);

 private:
  friend class Database;
  struct Impl;
  explicit Collection(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

struct EmbeddedOptions {
  std::string data_dir;   // created if missing; reopening it recovers everything
  uint32_t nodes = 3;     // storage nodes of a new cluster
  uint32_t buckets = 32;  // initial buckets of a new cluster
  bool sync = true;       // fsync every acknowledged write (survives a machine crash)
};

// How Database::Connect's client talks to the cluster.
struct ConnectOptions {
  // Gets and single writes that threads sharing one Database issue concurrently to the same
  // node share calls: while a call to a node is in flight, the next ones queue and go out
  // together as one batch call when it returns (no timer: a lone operation is sent at once).
  // Each operation keeps its own result, errors and deadline (docs/design/network.md,
  // "Coalescing").
  bool coalesce = true;
  // Batch calls in flight at once per node and kind for the asynchronous operations (>= 1):
  // while that many are in flight, further operations queue and go out together next.
  size_t async_calls_in_flight = 1;
  // The asynchronous operations' calls to a node go as messages of one stream per node (a
  // Shoal.Pipe) instead of one RPC each (docs/design/network.md, "Pipe").
  bool pipe = false;
  // Transport security (docs/security.md). The cluster is reached over mutual TLS with the
  // first identity that applies: `certs_dir` (its ca.crt and client.<user>.crt/.key from `shoal
  // certs`); else this cluster's entry in `credentials_file`, else in the file named by
  // $SHOAL_CREDENTIALS, else in ~/.config/shoal/credentials (`shoal local` registers its cluster
  // there). `insecure` is plaintext, for a cluster started with --insecure. With none of them,
  // Connect fails with kFailedPrecondition naming each way.
  bool insecure = false;
  std::string certs_dir{};
  std::string user{};  // whose client certificate in certs_dir ("" = "admin")
  std::string credentials_file{};
  // Databases of one process that reach the same cluster with the same identity share one
  // connection per node (gRPC multiplexes their calls), with or without TLS. False: this
  // Database opens connections of its own, as a separate process would.
  bool share_connections = true;
  // How long Connect keeps trying a coordinator that does not answer or refuses the connection
  // (one that is starting or restarting) before it fails with kUnavailable. The `shoal`
  // commands wait 3 s.
  uint32_t connect_patience_ms = 10'000;
};

class Database {
 public:
  // A coordinator and `nodes` storage nodes in this process, on `data_dir`. Link shoal_server
  // for it.
  [[nodiscard]] static StatusOr<std::unique_ptr<Database>> OpenEmbedded(
      const EmbeddedOptions& options);
  // A client of a running cluster: "shoal://HOST:PORT" (or "HOST:PORT") of its coordinator.
  // Link shoal_remote for it. The same data API as embedded; AddNode and RemoveNode answer
  // kUnimplemented over the network (use the coordinator's admin commands).
  [[nodiscard]] static StatusOr<std::unique_ptr<Database>> Connect(
      std::string_view uri, const ConnectOptions& options = {});
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // A handle of the collection `name`: 1 to 256 bytes of letters, digits, '_', '.' and '-',
  // starting with a letter, a digit or '_' (otherwise kInvalidArgument). A collection that does
  // not exist is created by CreateCollection or by the first Insert, Upsert, CompareAndSet with
  // expected version 0, Batch holding one of those, or Declare; every other operation on it (Get,
  // Query, QueryStream, Update, Delete, ...) fails with kNotFound, reason UNKNOWN_COLLECTION,
  // naming it, and creates nothing.
  [[nodiscard]] StatusOr<Collection> GetCollection(std::string_view name);
  // GetCollection's handle, with the collection created now if it does not exist.
  [[nodiscard]] StatusOr<Collection> CreateCollection(std::string_view name);
  // Adds a storage node; buckets move to it in the background.
  [[nodiscard]] StatusOr<uint32_t> AddNode();
  // Decommissions a node: its buckets move away in the background, then it leaves.
  [[nodiscard]] Status RemoveNode(uint32_t node);
  // Waits until every asynchronous operation started so far (Collection::*Async) has called
  // its callback.
  void WaitAsync();
  // Waits for the asynchronous operations, then closes every process; the data stays in
  // data_dir.
  [[nodiscard]] Status Close();

 private:
  struct Impl;
  explicit Database(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shoal
