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
//   kNotFound             Get/Update/Delete of an absent key; an unknown collection
//   kFailedPrecondition   CompareAndSet whose expected version does not match
//   kInvalidArgument      malformed JSON, a body that is not an object, an empty key, a bad
//                         filter or cursor
//   kResourceExhausted    key > 8 KiB, body > 1 MiB, nesting > 64
//   kUnknown              a write whose outcome is unknown (its request or reply was lost):
//                         read the key to find out
//   kUnavailable          the cluster could not serve the request within the retry budget
// Thread-safety: Database and Collection are thread-safe; share them between threads.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/status.h"

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

class Database {
 public:
  // A coordinator and `nodes` storage nodes in this process, on `data_dir`.
  [[nodiscard]] static StatusOr<std::unique_ptr<Database>> OpenEmbedded(
      const EmbeddedOptions& options);
  // A client of a running cluster: "shoal://HOST:PORT" (or "HOST:PORT") of its coordinator.
  // Link shoal_net_client for it. The same data API as embedded; AddNode and RemoveNode answer
  // kUnimplemented over the network (use the coordinator's admin commands).
  [[nodiscard]] static StatusOr<std::unique_ptr<Database>> Connect(std::string_view uri);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Creates the collection if it does not exist.
  [[nodiscard]] StatusOr<Collection> GetCollection(std::string_view name);
  // Adds a storage node; buckets move to it in the background.
  [[nodiscard]] StatusOr<uint32_t> AddNode();
  // Decommissions a node: its buckets move away in the background, then it leaves.
  [[nodiscard]] Status RemoveNode(uint32_t node);
  // Closes every process; the data stays in data_dir.
  [[nodiscard]] Status Close();

 private:
  struct Impl;
  explicit Database(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shoal
