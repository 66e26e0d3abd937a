#include "src/clientside/memory_shard_backend.h"

#include <fmt/format.h>

namespace shoal::clientside {

namespace {

Status Duplicate(std::string_view pk) {
  return AlreadyExistsError(fmt::format("duplicate {}", pk));
}
Status Missing(std::string_view pk) { return NotFoundError(fmt::format("not found {}", pk)); }

}  // namespace

Status MemoryShardBackend::Insert(const ShardDocument& d) {
  std::lock_guard lock(mu_);
  if (!docs_.emplace(d.primary_key, d).second) return Duplicate(d.primary_key);
  return OkStatus();
}

Status MemoryShardBackend::Delete(std::string_view primary_key) {
  std::lock_guard lock(mu_);
  auto it = docs_.find(primary_key);
  if (it == docs_.end()) return Missing(primary_key);
  docs_.erase(it);
  return OkStatus();
}

Status MemoryShardBackend::DeleteIf(std::string_view primary_key, const ShardCondition& condition) {
  std::lock_guard lock(mu_);
  auto it = docs_.find(primary_key);
  if (it == docs_.end() || !condition.Holds(it->second)) return Missing(primary_key);
  docs_.erase(it);
  return OkStatus();
}

Status MemoryShardBackend::Update(const ShardDocument& d) {
  std::lock_guard lock(mu_);
  auto it = docs_.find(d.primary_key);
  if (it == docs_.end()) return Missing(d.primary_key);
  it->second = d;
  return OkStatus();
}

Status MemoryShardBackend::UpdateIf(const ShardDocument& d, const ShardCondition& condition) {
  std::lock_guard lock(mu_);
  auto it = docs_.find(d.primary_key);
  if (it == docs_.end() || !condition.Holds(it->second)) return Missing(d.primary_key);
  it->second = d;
  return OkStatus();
}

Status MemoryShardBackend::Upsert(const ShardDocument& d) {
  std::lock_guard lock(mu_);
  docs_.insert_or_assign(d.primary_key, d);
  return OkStatus();
}

Status MemoryShardBackend::UpsertIf(const ShardDocument& d, const ShardCondition& condition) {
  std::lock_guard lock(mu_);
  auto it = docs_.find(d.primary_key);
  if (it == docs_.end()) {
    docs_.emplace(d.primary_key, d);
    return OkStatus();
  }
  if (!condition.Holds(it->second)) return Duplicate(d.primary_key);
  it->second = d;
  return OkStatus();
}

StatusOr<ShardDocument> MemoryShardBackend::Get(std::string_view primary_key) {
  std::lock_guard lock(mu_);
  auto it = docs_.find(primary_key);
  if (it == docs_.end()) return Missing(primary_key);
  return it->second;
}

StatusOr<ShardPage> MemoryShardBackend::Query(const ShardQuery& query) {
  SHOAL_RETURN_IF_ERROR(storage::ValidateFilter(query.filter));
  storage::FilterEvaluator evaluator(query.filter);
  ShardPage page;
  std::lock_guard lock(mu_);
  auto it = query.has_after_key ? docs_.upper_bound(query.after_key) : docs_.begin();
  for (; it != docs_.end(); ++it) {
    const ShardDocument& d = it->second;
    bool selected = !(query.version.has_value() && d.version != *query.version) &&
                    !(d.tombstone && (!query.include_tombstones || !query.filter.empty()));
    if (selected && !d.tombstone && !query.filter.empty()) {
      SHOAL_ASSIGN_OR_RETURN(selected, evaluator.Matches(d.body));
    }
    const bool shadow = !selected && query.or_version.has_value() && d.version == *query.or_version;
    if (!selected && !shadow) continue;
    if (page.documents.size() == query.limit) return page;
    page.documents.push_back(shadow ? ShadowRow(d.primary_key, d.version) : d);
  }
  page.done = true;
  return page;
}

}  // namespace shoal::clientside
