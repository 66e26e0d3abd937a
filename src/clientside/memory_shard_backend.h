#pragma once

// MemoryShardBackend: a ShardBackend in a std::map, for the interleaving tests (which build
// thousands of fresh shards) and as the reference the other backends are compared with. Every
// operation holds one mutex, so each is trivially atomic. Thread-safe.

#include <map>
#include <mutex>
#include <string>

#include "src/clientside/shard_backend.h"

namespace shoal::clientside {

class MemoryShardBackend final : public ShardBackend {
 public:
  explicit MemoryShardBackend(std::string name) : name_(std::move(name)) {}

  [[nodiscard]] std::string Name() const override { return "memory:" + name_; }
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
  const std::string name_;
  std::mutex mu_;
  std::map<std::string, ShardDocument, std::less<>> docs_;  // guarded by mu_
};

}  // namespace shoal::clientside
