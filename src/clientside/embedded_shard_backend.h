#pragma once

// EmbeddedShardBackend: a shard that is one collection of a BucketStore (the storage engine).
// Several shards may share one store, each in its own collection.
//
// A shard document is stored as the engine body {"v":<map version>,"t":<tombstone>,"b":<body>},
// so that the conditions of paper 000 §5 on the version and the tombstone attributes are engine
// field predicates and stay atomic. A physical removal (Delete, DeleteIf) leaves an engine
// tombstone, which the shard treats as "not stored". The parameterized upsert and DeleteIf read
// the stored copy and write with the engine's compare-and-set on its own version, retrying on a
// race, so each still linearizes at one engine write.
//
// The engine orders a collection by hash point, not by primary key, so Query reads the whole
// collection and keeps the `limit` smallest keys after the cursor: O(n log limit) per page.
//
// Thread-safe (the engine is).

#include <memory>
#include <string>

#include "src/clientside/shard_backend.h"
#include "src/storage/bucket_store.h"

namespace shoal::clientside {

class EmbeddedShardBackend final : public ShardBackend {
 public:
  // Registers `collection` (named `name`) in `store` if needed. The store must be opened with
  // check_ownership = false.
  [[nodiscard]] static StatusOr<std::unique_ptr<EmbeddedShardBackend>> Create(
      std::shared_ptr<storage::BucketStore> store, CollectionId collection, std::string name);

  [[nodiscard]] std::string Name() const override { return "embedded:" + name_; }
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
  EmbeddedShardBackend(std::shared_ptr<storage::BucketStore> store, CollectionId collection,
                       std::string name)
      : store_(std::move(store)), collection_(collection), name_(std::move(name)) {}

  // The stored engine document (tombstones included), nullopt if never stored.
  [[nodiscard]] StatusOr<std::optional<storage::Document>> ReadRaw(std::string_view pk) const;

  const std::shared_ptr<storage::BucketStore> store_;
  const CollectionId collection_;
  const std::string name_;
};

// The engine body of a shard document, and back (exposed for tests).
[[nodiscard]] std::string EncodeShardBody(const ShardDocument& d);
[[nodiscard]] StatusOr<ShardDocument> DecodeShardBody(std::string primary_key,
                                                      std::string_view stored);
// The conditions of `query` (its filter, tombstones, version) on that stored body; or_version is
// left to the caller.
[[nodiscard]] storage::DocumentFilter StoredFilter(const ShardQuery& query);

}  // namespace shoal::clientside
