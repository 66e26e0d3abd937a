// BucketStore: single-document reads and mutations, batches (bucket_store.h).

#include <fmt/format.h>
#include <rocksdb/write_batch.h>

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "src/storage/bucket_store.h"
#include "src/storage/codec.h"
#include "src/storage/errors.h"
#include "src/storage/json.h"

namespace shoal::storage {
namespace {

bool IsClientKind(MutationKind kind) { return kind != MutationKind::kApplyIfNewer; }

// Key + body bytes that a document state adds to its bucket's live size (0: absent or deleted).
uint64_t LiveBytes(std::string_view key, bool present, bool tombstone, size_t body_bytes) {
  return present && !tombstone ? key.size() + body_bytes : 0;
}

uint64_t Distance(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

}  // namespace

Status BucketStore::CheckOwnership(Point point, MutationKind kind) const {
  if (!options_.check_ownership) return OkStatus();
  std::optional<BucketEntry> bucket = directory_.Find(point);
  const bool client = IsClientKind(kind);
  if (bucket.has_value()) {
    switch (bucket->state) {
      case BucketState::kReadWrite:
        return OkStatus();
      case BucketState::kLeaving:
        if (client) return OkStatus();
        break;
      case BucketState::kAdding:
        if (!client) return OkStatus();
        break;
    }
  }
  return StorageError(ErrorReason::kBucketState,
                      fmt::format("point {:#018x} is not in a bucket {} here ({})", point.value(),
                                  client ? "served" : "receiving",
                                  bucket.has_value() ? bucket->DebugString() : "none"));
}

Status BucketStore::ValidateMutation(const Mutation& m) const {
  SHOAL_RETURN_IF_ERROR(CheckCollection(m.collection));
  SHOAL_RETURN_IF_ERROR(ValidatePrimaryKey(m.primary_key, options_.limits));
  if (!m.WritesTombstone()) SHOAL_RETURN_IF_ERROR(ValidateJsonBody(m.body, options_.limits));
  if (m.kind == MutationKind::kApplyIfNewer && m.version == 0) {
    return StorageError(ErrorReason::kInvalidArgument, "apply-if-newer needs a version >= 1");
  }
  if (m.kind == MutationKind::kUpdateIf || m.kind == MutationKind::kUpsertIf) {
    SHOAL_RETURN_IF_ERROR(ValidateFilter(m.condition.fields));
  }
  return OkStatus();
}

StatusOr<std::optional<StoredState>> BucketStore::ReadStored(const std::string& key,
                                                             std::string* value) const {
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), documents_, key, value);
  if (s.IsNotFound()) return std::optional<StoredState>();
  SHOAL_RETURN_IF_ERROR(FromRocks(s, "read"));
  SHOAL_ASSIGN_OR_RETURN(StoredValueView view, DecodeStoredValue(*value));
  return std::optional<StoredState>(
      StoredState{.version = view.version, .tombstone = view.tombstone, .body = view.body});
}

StatusOr<Document> BucketStore::Get(CollectionId collection, std::string_view primary_key,
                                    const GetOptions& options) const {
  SHOAL_RETURN_IF_ERROR(CheckCollection(collection));
  SHOAL_RETURN_IF_ERROR(ValidatePrimaryKey(primary_key, options_.limits));
  const Point point = PointOf(collection, primary_key);
  {
    std::shared_lock<std::shared_mutex> lock(directory_mu_);
    SHOAL_RETURN_IF_ERROR(CheckOwnership(point, MutationKind::kUpsert));
  }
  const std::string key = EncodeStoredKey(point, collection, primary_key);
  rocksdb::PinnableSlice value;
  rocksdb::Status s = db_->Get(MakeReadOptions(options.snapshot), documents_, key, &value);
  if (s.IsNotFound()) {
    return StorageError(ErrorReason::kNotFound, fmt::format("{} pk={:?}: nothing stored",
                                                            collection.DebugString(), primary_key));
  }
  SHOAL_RETURN_IF_ERROR(FromRocks(s, "get"));
  SHOAL_ASSIGN_OR_RETURN(StoredValueView view,
                         DecodeStoredValue(std::string_view(value.data(), value.size())));
  if (view.tombstone && !options.include_tombstones) {
    return StorageError(ErrorReason::kNotFound,
                        fmt::format("{} pk={:?}: deleted at version {}", collection.DebugString(),
                                    primary_key, view.version));
  }
  return Document{.collection = collection,
                  .primary_key = std::string(primary_key),
                  .body = std::string(view.body),
                  .version = view.version,
                  .tombstone = view.tombstone};
}

StatusOr<MutationResult> BucketStore::Apply(const Mutation& m, WalSync wal_sync) {
  SHOAL_RETURN_IF_ERROR(ValidateMutation(m));
  const Point point = PointOf(m.collection, m.primary_key);
  const std::string key = EncodeStoredKey(point, m.collection, m.primary_key);
  std::shared_lock<std::shared_mutex> directory_lock(directory_mu_);
  SHOAL_RETURN_IF_ERROR(CheckOwnership(point, m.kind));
  std::lock_guard<std::mutex> stripe(stripes_[point.value() % options_.lock_stripes].mu);

  std::string current;
  SHOAL_ASSIGN_OR_RETURN(std::optional<StoredState> stored, ReadStored(key, &current));
  std::optional<FilterEvaluator> evaluator;
  if (!m.condition.fields.empty()) evaluator.emplace(m.condition.fields);
  SHOAL_ASSIGN_OR_RETURN(Decision decision,
                         Decide(m, stored, evaluator.has_value() ? &*evaluator : nullptr));
  if (decision == Decision::kSkip) {
    return MutationResult{.version = stored->version, .applied = false};
  }

  uint64_t version = m.version;
  if (m.kind == MutationKind::kApplyIfNewer) {
    SHOAL_RETURN_IF_ERROR(clock_->Observe(version));
  } else {
    SHOAL_ASSIGN_OR_RETURN(version, clock_->Allocate(1));
  }
  rocksdb::WriteBatch batch;
  batch.Put(documents_, key, EncodeStoredValue(version, m.WritesTombstone(), m.body));
  SHOAL_RETURN_IF_ERROR(WriteBatchToEngine(&batch, wal_sync));
  AddChurn(point,
           Distance(LiveBytes(key, stored.has_value(), stored.has_value() && stored->tombstone,
                              stored.has_value() ? stored->body.size() : 0),
                    LiveBytes(key, true, m.WritesTombstone(), m.body.size())));
  return MutationResult{.version = version, .applied = true};
}

StatusOr<std::vector<MutationResult>> BucketStore::ApplyBatch(std::span<const Mutation> ms,
                                                              WalSync wal_sync) {
  struct Prepared {
    Point point;
    std::string key;
  };
  std::vector<Prepared> prepared;
  prepared.reserve(ms.size());
  size_t bytes = 0;
  uint64_t fresh_versions = 0;
  uint64_t max_carried = 0;
  for (size_t i = 0; i < ms.size(); ++i) {
    SHOAL_RETURN_IF_ERROR(Prefixed(ValidateMutation(ms[i]), fmt::format("batch[{}]", i)));
    const Point point = PointOf(ms[i].collection, ms[i].primary_key);
    prepared.push_back({point, EncodeStoredKey(point, ms[i].collection, ms[i].primary_key)});
    bytes += prepared.back().key.size() + ms[i].body.size();
    if (ms[i].kind == MutationKind::kApplyIfNewer) {
      max_carried = std::max(max_carried, ms[i].version);
    } else {
      ++fresh_versions;
    }
  }
  if (bytes > options_.max_batch_bytes) {
    return StorageError(ErrorReason::kTooLarge, fmt::format("batch of {} bytes exceeds {}", bytes,
                                                            options_.max_batch_bytes));
  }
  if (ms.empty()) return std::vector<MutationResult>();

  std::shared_lock<std::shared_mutex> directory_lock(directory_mu_);
  for (size_t i = 0; i < ms.size(); ++i) {
    SHOAL_RETURN_IF_ERROR(
        Prefixed(CheckOwnership(prepared[i].point, ms[i].kind), fmt::format("batch[{}]", i)));
  }
  std::vector<size_t> stripe_ids;
  stripe_ids.reserve(ms.size());
  for (const Prepared& p : prepared) stripe_ids.push_back(p.point.value() % options_.lock_stripes);
  std::sort(stripe_ids.begin(), stripe_ids.end());
  stripe_ids.erase(std::unique(stripe_ids.begin(), stripe_ids.end()), stripe_ids.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  locks.reserve(stripe_ids.size());
  for (size_t id : stripe_ids) locks.emplace_back(stripes_[id].mu);

  // Decide every mutation first; versions are taken only once the whole batch is known to
  // apply, so a refused batch consumes none. While deciding, a fresh write of this batch counts as
  // newer than any version (it will be: fresh versions are allocated after observing the carried
  // ones), so a later kApplyIfNewer on the same key skips, as it would after the commit.
  constexpr uint64_t kFresh = ~0ull;
  struct Pending {
    uint64_t version = 0;
    bool tombstone = false;
    std::string body;
  };
  absl::flat_hash_map<std::string, Pending> pending;
  std::vector<MutationResult> results(ms.size());
  std::vector<size_t> writes;
  std::string current;
  std::vector<uint64_t> churn(ms.size(), 0);
  for (size_t i = 0; i < ms.size(); ++i) {
    const Mutation& m = ms[i];
    std::optional<StoredState> stored;
    if (auto it = pending.find(prepared[i].key); it != pending.end()) {
      stored = StoredState{it->second.version, it->second.tombstone, it->second.body};
    } else {
      SHOAL_ASSIGN_OR_RETURN(stored, ReadStored(prepared[i].key, &current));
    }
    std::optional<FilterEvaluator> evaluator;
    if (!m.condition.fields.empty()) evaluator.emplace(m.condition.fields);
    StatusOr<Decision> decision = Decide(m, stored, evaluator.has_value() ? &*evaluator : nullptr);
    if (!decision.ok()) return Prefixed(decision.status(), fmt::format("batch[{}]", i));
    if (*decision == Decision::kSkip) {
      results[i] = MutationResult{.version = stored->version, .applied = false};
      continue;
    }
    const bool tombstone = m.WritesTombstone();
    churn[i] = Distance(
        LiveBytes(prepared[i].key, stored.has_value(), stored.has_value() && stored->tombstone,
                  stored.has_value() ? stored->body.size() : 0),
        LiveBytes(prepared[i].key, true, tombstone, m.body.size()));
    const uint64_t version = m.kind == MutationKind::kApplyIfNewer ? m.version : kFresh;
    pending[prepared[i].key] =
        Pending{version, tombstone, tombstone ? std::string() : std::string(m.body)};
    writes.push_back(i);
  }
  if (writes.empty()) return results;
  if (max_carried > 0) SHOAL_RETURN_IF_ERROR(clock_->Observe(max_carried));
  uint64_t next_version = 0;
  if (fresh_versions > 0) {
    SHOAL_ASSIGN_OR_RETURN(next_version, clock_->Allocate(fresh_versions));
  }
  rocksdb::WriteBatch batch;
  for (size_t i : writes) {
    const Mutation& m = ms[i];
    const uint64_t version = m.kind == MutationKind::kApplyIfNewer ? m.version : next_version++;
    batch.Put(documents_, prepared[i].key, EncodeStoredValue(version, m.WritesTombstone(), m.body));
    results[i] = MutationResult{.version = version, .applied = true};
  }
  SHOAL_RETURN_IF_ERROR(WriteBatchToEngine(&batch, wal_sync));
  for (size_t i : writes) AddChurn(prepared[i].point, churn[i]);
  return results;
}

StatusOr<std::vector<MutationResult>> BucketStore::ApplyChanges(std::span<const Document> changes,
                                                                WalSync wal_sync) {
  std::vector<Mutation> mutations;
  mutations.reserve(changes.size());
  for (const Document& d : changes) {
    mutations.push_back(Mutation{.kind = MutationKind::kApplyIfNewer,
                                 .collection = d.collection,
                                 .primary_key = d.primary_key,
                                 .body = d.body,
                                 .tombstone = d.tombstone,
                                 .version = d.version});
  }
  return ApplyBatch(mutations, wal_sync);
}

void BucketStore::AddChurn(Point point, uint64_t bytes) {
  if (bytes == 0) return;
  live_bytes_churn_[point.value() >> kChurnSlotShift].fetch_add(bytes, std::memory_order_relaxed);
}

uint64_t BucketStore::LiveBytesChurn(const PointRange& range) const {
  if (range.empty()) return 0;
  const uint64_t last = range.end_is_max() ? ~uint64_t{0} : range.end() - 1;
  uint64_t sum = 0;
  for (uint64_t slot = range.begin() >> kChurnSlotShift; slot <= last >> kChurnSlotShift; ++slot) {
    sum += live_bytes_churn_[slot].load(std::memory_order_relaxed);
  }
  return sum;
}

// --- the named operations: one Mutation each ---

namespace {

StatusOr<uint64_t> VersionOf(StatusOr<MutationResult> result) {
  if (!result.ok()) return result.status();
  return result->version;
}

}  // namespace

StatusOr<uint64_t> BucketStore::Insert(CollectionId c, std::string_view pk, std::string_view body,
                                       WalSync wal_sync) {
  return VersionOf(Apply(
      {.kind = MutationKind::kInsert, .collection = c, .primary_key = pk, .body = body}, wal_sync));
}

StatusOr<uint64_t> BucketStore::Update(CollectionId c, std::string_view pk, std::string_view body,
                                       WalSync wal_sync) {
  return VersionOf(Apply(
      {.kind = MutationKind::kUpdate, .collection = c, .primary_key = pk, .body = body}, wal_sync));
}

StatusOr<uint64_t> BucketStore::Upsert(CollectionId c, std::string_view pk, std::string_view body,
                                       WalSync wal_sync) {
  return VersionOf(Apply(
      {.kind = MutationKind::kUpsert, .collection = c, .primary_key = pk, .body = body}, wal_sync));
}

StatusOr<uint64_t> BucketStore::Delete(CollectionId c, std::string_view pk, WalSync wal_sync) {
  return VersionOf(
      Apply({.kind = MutationKind::kDelete, .collection = c, .primary_key = pk}, wal_sync));
}

StatusOr<uint64_t> BucketStore::UpdateIf(CollectionId c, std::string_view pk, std::string_view body,
                                         const Condition& condition) {
  return VersionOf(Apply({.kind = MutationKind::kUpdateIf,
                          .collection = c,
                          .primary_key = pk,
                          .body = body,
                          .condition = condition}));
}

StatusOr<uint64_t> BucketStore::UpsertIf(CollectionId c, std::string_view pk, std::string_view body,
                                         const Condition& condition) {
  return VersionOf(Apply({.kind = MutationKind::kUpsertIf,
                          .collection = c,
                          .primary_key = pk,
                          .body = body,
                          .condition = condition}));
}

StatusOr<uint64_t> BucketStore::CompareAndSet(CollectionId c, std::string_view pk,
                                              uint64_t expected_version, std::string_view body,
                                              WalSync wal_sync) {
  return VersionOf(Apply({.kind = MutationKind::kCompareAndSet,
                          .collection = c,
                          .primary_key = pk,
                          .body = body,
                          .version = expected_version},
                         wal_sync));
}

}  // namespace shoal::storage
