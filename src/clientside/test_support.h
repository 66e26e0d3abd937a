#pragma once

// Shared builders for the client-side sharding tests: temporary directories, an embedded
// metadata store, a factory of embedded shards (one engine, one collection per shard), and JSON
// comparison that ignores the formatting a backend applies (PostgreSQL normalizes JSONB).

#include <memory>
#include <string>

#include "src/clientside/embedded_shard_backend.h"
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

// {"n":i,"s":{"t":"x<i>"}}
[[nodiscard]] std::string NumberedBody(int i);

// The ShardBackend contract of shard_backend.h, checked with gtest expectations on an empty shard.
void CheckBackendContract(ShardBackend& shard);

}  // namespace shoal::clientside::testing
