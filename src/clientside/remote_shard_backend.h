#pragma once

// RemoteShardBackend: a shard that is one collection of a Shoal cluster reached over the
// network through the public client API (include/shoal/shoal.h, Database::Connect). Several
// shards may be several collections of one cluster, or each its own cluster.
//
// Stored encoding. A shard document is stored as the body of the embedded backend
// ({"v":<map version>,"t":<tombstone>,"b":<body>}, EncodeShardBody). The public API has no
// conditional delete and no way to read the version of a removed key, so a removal (Delete,
// DeleteIf) does not remove the Shoal document: it compare-and-sets it to the marker
// kRemovedMarker, which every operation treats as "not stored" (invisible to Get and Query). A
// later insert of the key compare-and-sets over the marker. Limit: each removed key keeps a
// 12-byte marker in the cluster until it is written again.
//
// Linearization points (each operation takes effect at exactly one cluster operation):
//   Insert    the Shoal Insert that succeeds, the compare-and-set over a marker that succeeds,
//             or, for DUPLICATE, the Get that read a shard document.
//   Upsert    the Shoal Upsert (unconditional; it may overwrite a marker).
//   Update, UpdateIf, Delete, DeleteIf, UpsertIf
//             the compare-and-set on the version just read that succeeds; for NOT_FOUND or
//             DUPLICATE, the Get that read the state deciding it. A compare-and-set that finds
//             another version (a concurrent write) rereads and tries again, so the condition is
//             checked on exactly the copy that is replaced. UpsertIf first tries a Shoal Insert
//             (its insert branch: the key was never stored), and on kAlreadyExists reads and
//             compare-and-sets as above.
//   Get       the Shoal Get.
//   Query     not atomic as a whole (neither is the contract's): each document is read at one
//             instant, the cluster's query returns each live key once.
// The cluster orders a collection by hash, not by key: Query reads the whole collection (with
// the filter pushed down when it can be) and keeps the `limit` smallest keys after the cursor.
// A write whose outcome the network lost is returned as kUnknown (a shard failure).
//
// Thread-safe (the Collection is). The Database must outlive the backend.

#include <memory>
#include <string>

#include "include/shoal/shoal.h"
#include "src/clientside/shard_backend.h"

namespace shoal::clientside {

// What a removed key holds (never a valid shard document: it has no "v").
inline constexpr std::string_view kRemovedMarker = R"({"gone":1})";
// Limits: the cluster's document limits (include/shoal/shoal.h) apply to the stored encoding, so
// a shard body may nest one level less than the cluster allows, and its size plus the wrapper
// ({"v":<version>,"t":<bool>,"b": and }, 22 to 41 bytes for a live document) must fit the cluster's
// 1 MiB. Beyond them the write fails as the cluster reports it (kResourceExhausted or
// kInvalidArgument).
inline constexpr size_t kRemoteMaxBodyDepth = 63;
inline constexpr size_t kRemoteMaxStoredBytes = size_t{1} << 20;

class RemoteShardBackend final : public ShardBackend {
 public:
  // Opens (creating if needed) `collection` of the cluster behind `db`.
  [[nodiscard]] static StatusOr<std::unique_ptr<RemoteShardBackend>> Create(
      Database& db, const std::string& collection);

  [[nodiscard]] std::string Name() const override { return "remote:" + name_; }
  [[nodiscard]] bool RemoteCalls() const override { return true; }
  [[nodiscard]] Status Insert(const ShardDocument& d) override;
  [[nodiscard]] Status Delete(std::string_view primary_key) override;
  [[nodiscard]] Status DeleteIf(std::string_view primary_key,
                                const ShardCondition& condition) override;
  [[nodiscard]] Status Update(const ShardDocument& d) override;
  [[nodiscard]] Status UpdateIf(const ShardDocument& d, const ShardCondition& condition) override;
  [[nodiscard]] Status Upsert(const ShardDocument& d) override;
  [[nodiscard]] Status UpsertIf(const ShardDocument& d, const ShardCondition& condition) override;
  [[nodiscard]] StatusOr<ShardDocument> Get(std::string_view primary_key) override;
  [[nodiscard]] StatusOr<ShardPage> Query(const ShardQuery& query) override;

 private:
  // What a key holds in the cluster: nothing (version 0), a marker, or a shard document.
  struct Stored {
    uint64_t version = 0;  // the Shoal version to compare-and-set against; 0 = never stored
    std::optional<ShardDocument> document{};  // set iff a shard document (live or tombstone)
  };

  RemoteShardBackend(Collection collection, std::string name)
      : collection_(std::move(collection)), name_(std::move(name)) {}

  [[nodiscard]] StatusOr<Stored> Read(std::string_view primary_key);
  // Replaces the key's shard document by `body` iff it is stored and `condition` holds on it,
  // retrying on concurrent writes. kNotFound otherwise.
  [[nodiscard]] Status ReplaceIf(std::string_view primary_key, const ShardCondition& condition,
                                 std::string_view body);
  // Writes `body` over what `stored` read: Insert when never stored, else compare-and-set.
  // True when written, false when another write came first (kAlreadyExists/kFailedPrecondition/
  // kNotFound of the write).
  [[nodiscard]] StatusOr<bool> WriteOver(std::string_view primary_key, const Stored& stored,
                                         std::string_view body);

  Collection collection_;
  const std::string name_;
};

}  // namespace shoal::clientside
