#pragma once

// ShardCatalog: the shard backends a process can reach, by index. Shards are added before a
// change that needs them begins (paper 000 §4: "after the new database shards are confirmed to
// be available"); the catalog never decides routing. Thread-safe.

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "src/clientside/shard_backend.h"

namespace shoal::clientside {

class ShardCatalog {
 public:
  // Sets shard `index` (replacing any previous backend there).
  void Set(ShardIndex index, std::shared_ptr<ShardBackend> backend) {
    std::unique_lock lock(mu_);
    if (shards_.size() <= index.value()) shards_.resize(index.value() + 1);
    shards_[index.value()] = std::move(backend);
  }
  // Unavailable if the shard is not in the catalog.
  [[nodiscard]] StatusOr<ShardBackend*> Get(ShardIndex index) const {
    std::shared_lock lock(mu_);
    if (index.value() >= shards_.size() || shards_[index.value()] == nullptr) {
      return UnavailableError("shard " + index.DebugString() + " is not in the catalog");
    }
    return shards_[index.value()].get();
  }
  [[nodiscard]] size_t size() const {
    std::shared_lock lock(mu_);
    return shards_.size();
  }

 private:
  mutable std::shared_mutex mu_;
  std::vector<std::shared_ptr<ShardBackend>> shards_;
};

}  // namespace shoal::clientside
