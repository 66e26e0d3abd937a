#pragma once

// Shared builders for the client-side sharding tests: temporary directories, an embedded
// metadata store, a factory of embedded shards (one engine, one collection per shard), and JSON
// comparison that ignores the formatting a backend applies (PostgreSQL normalizes JSONB).

#include <memory>
#include <string>
#include <utility>

#include "src/clientside/embedded_shard_backend.h"
#include "src/clientside/memory_shard_backend.h"
#include "src/clientside/shard_backend.h"
#include "src/clientside/stress_harness.h"
#include "src/metadata/embedded_metadata_store.h"

namespace shoal::clientside::testing {

// A fresh directory under the system temp dir, removed on destruction.
class ScopedTempDir {
 public:
  ScopedTempDir();
  ~ScopedTempDir();
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

[[nodiscard]] std::unique_ptr<metadata::EmbeddedMetadataStore> OpenMetadata(
    const std::string& path);

// Embedded shards: one BucketStore, a new collection per call.
class EmbeddedShards {
 public:
  explicit EmbeddedShards(const std::string& path);
  [[nodiscard]] std::shared_ptr<ShardBackend> NewShard();

 private:
  std::shared_ptr<storage::BucketStore> store_;
  uint32_t next_collection_ = 1;
};

// A memory shard whose calls pass through unchanged; a test derives from it and overrides the
// calls it observes or fails. Thread-safe as MemoryShardBackend is.
class ForwardingMemoryShard : public ShardBackend {
 public:
  explicit ForwardingMemoryShard(std::string name) : inner_(std::move(name)) {}

  std::string Name() const override { return inner_.Name(); }
  Status Insert(const ShardDocument& d) override { return inner_.Insert(d); }
  Status Delete(std::string_view pk) override { return inner_.Delete(pk); }
  Status DeleteIf(std::string_view pk, const ShardCondition& c) override {
    return inner_.DeleteIf(pk, c);
  }
  Status Update(const ShardDocument& d) override { return inner_.Update(d); }
  Status UpdateIf(const ShardDocument& d, const ShardCondition& c) override {
    return inner_.UpdateIf(d, c);
  }
  Status Upsert(const ShardDocument& d) override { return inner_.Upsert(d); }
  Status UpsertIf(const ShardDocument& d, const ShardCondition& c) override {
    return inner_.UpsertIf(d, c);
  }
  StatusOr<ShardDocument> Get(std::string_view pk) override { return inner_.Get(pk); }
  StatusOr<ShardPage> Query(const ShardQuery& q) override { return inner_.Query(q); }

 protected:
  MemoryShardBackend& inner() { return inner_; }

 private:
  MemoryShardBackend inner_;
};

// {"n":i,"s":{"t":"x<i>"}}
[[nodiscard]] std::string NumberedBody(int i);

// The ShardBackend contract of shard_backend.h, checked with gtest expectations on an empty shard.
void CheckBackendContract(ShardBackend& shard);

}  // namespace shoal::clientside::testing
