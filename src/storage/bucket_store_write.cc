// BucketStore: single-document reads and mutations, batches (bucket_store.h).

#include <fmt/format.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <array>

#include "absl/container/flat_hash_map.h"
#include "src/storage/apply_if_newer.h"
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

namespace {

// The document a read of (collection, primary key) found: `s` and `value` as the engine gave them.
StatusOr<Document> DocumentRead(const rocksdb::Status& s, const rocksdb::PinnableSlice& value,
                                CollectionId collection, std::string_view primary_key,
                                const GetOptions& options) {
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

}  // namespace

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
  return DocumentRead(s, value, collection, primary_key, options);
}

std::vector<StatusOr<Document>> BucketStore::GetMany(std::span<const DocumentKey> keys,
                                                     const GetOptions& options) const {
  std::vector<StatusOr<Document>> results(keys.size(), InternalError("unread"));
  std::vector<size_t> slots;  // the keys read, in `reads` order
  std::vector<std::string> encoded;
  slots.reserve(keys.size());
  encoded.reserve(keys.size());
  std::vector<bool> valid(keys.size(), false);
  for (size_t i = 0; i < keys.size(); ++i) {
    Status s = CheckCollection(keys[i].collection);
    if (s.ok()) s = ValidatePrimaryKey(keys[i].primary_key, options_.limits);
    if (s.ok()) {
      valid[i] = true;
    } else {
      results[i] = s;
    }
  }
  {
    std::shared_lock<std::shared_mutex> lock(directory_mu_);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!valid[i]) continue;
      const Point point = PointOf(keys[i].collection, keys[i].primary_key);
      if (Status s = CheckOwnership(point, MutationKind::kUpsert); !s.ok()) {
        results[i] = s;
        continue;
      }
      slots.push_back(i);
      encoded.push_back(EncodeStoredKey(point, keys[i].collection, keys[i].primary_key));
    }
  }
  if (slots.empty()) return results;
  std::vector<rocksdb::Slice> reads(encoded.begin(), encoded.end());
  std::vector<rocksdb::PinnableSlice> values(reads.size());
  std::vector<rocksdb::Status> statuses(reads.size());
  db_->MultiGet(MakeReadOptions(options.snapshot), documents_, reads.size(), reads.data(),
                values.data(), statuses.data());
  for (size_t r = 0; r < slots.size(); ++r) {
    const DocumentKey& key = keys[slots[r]];
    results[slots[r]] =
        DocumentRead(statuses[r], values[r], key.collection, key.primary_key, options);
  }
  return results;
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

  // Only a write that changes something needs the disk (a refused one changes nothing).
  SHOAL_RETURN_IF_ERROR(space_->Admit(key.size() + m.body.size()));
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

StatusOr<std::vector<StatusOr<MutationResult>>> BucketStore::ApplyMutations(
    std::span<const Mutation> ms, WalSync wal_sync, BatchFailure failure, const BatchHook* hook) {
  const bool whole = failure == BatchFailure::kWhole;
  std::vector<StatusOr<MutationResult>> results(ms.size(), InternalError("undecided"));
  // A slot that failed stays out of everything below (per slot only: a whole batch returns).
  std::vector<bool> failed(ms.size(), false);
  // Failed before its decision (validation, ownership): its result never depends on the others.
  std::vector<bool> invalid(ms.size(), false);
  // (Unprefixed: a slot's error reads as the same mutation's alone would.)
  auto fail = [&](size_t i, const Status& s) {
    results[i] = s;
    failed[i] = true;
  };
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
    const Point point = PointOf(ms[i].collection, ms[i].primary_key);
    prepared.push_back({point, EncodeStoredKey(point, ms[i].collection, ms[i].primary_key)});
    bytes += prepared.back().key.size() + ms[i].body.size();
    if (Status s = ValidateMutation(ms[i]); !s.ok()) {
      if (whole) return Prefixed(s, fmt::format("batch[{}]", i));
      fail(i, s);
      invalid[i] = true;
    }
  }
  if (bytes > options_.max_batch_bytes) {
    return StorageError(ErrorReason::kTooLarge, fmt::format("batch of {} bytes exceeds {}", bytes,
                                                            options_.max_batch_bytes));
  }
  if (ms.empty()) return results;

  std::shared_lock<std::shared_mutex> directory_lock(directory_mu_);
  for (size_t i = 0; i < ms.size(); ++i) {
    if (failed[i]) continue;
    if (Status s = CheckOwnership(prepared[i].point, ms[i].kind); !s.ok()) {
      if (whole) return Prefixed(s, fmt::format("batch[{}]", i));
      fail(i, s);
      invalid[i] = true;
    }
  }
  std::vector<size_t> stripe_ids;
  stripe_ids.reserve(ms.size());
  for (const Prepared& p : prepared) stripe_ids.push_back(p.point.value() % options_.lock_stripes);
  std::sort(stripe_ids.begin(), stripe_ids.end());
  stripe_ids.erase(std::unique(stripe_ids.begin(), stripe_ids.end()), stripe_ids.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  locks.reserve(stripe_ids.size());
  for (size_t id : stripe_ids) locks.emplace_back(stripes_[id].mu);

  // The stored state of every distinct key, in one MultiGet (the stripes are held: it cannot
  // change before the write).
  absl::flat_hash_map<std::string_view, size_t> read_index;  // key -> index in `reads`
  std::vector<rocksdb::Slice> read_keys;
  for (size_t i = 0; i < ms.size(); ++i) {
    if (failed[i]) continue;
    if (read_index.try_emplace(prepared[i].key, read_keys.size()).second) {
      read_keys.emplace_back(prepared[i].key);
    }
  }
  std::vector<rocksdb::PinnableSlice> read_values(read_keys.size());
  std::vector<rocksdb::Status> read_statuses(read_keys.size());
  if (!read_keys.empty()) {
    db_->MultiGet(rocksdb::ReadOptions(), documents_, read_keys.size(), read_keys.data(),
                  read_values.data(), read_statuses.data());
  }
  std::vector<std::optional<StatusOr<std::optional<StoredState>>>> decoded(read_keys.size());
  auto stored_of = [&](size_t r) -> StatusOr<std::optional<StoredState>> {
    if (!decoded[r].has_value()) {
      const rocksdb::Status& s = read_statuses[r];
      if (s.IsNotFound()) {
        decoded[r] = std::optional<StoredState>();
      } else if (Status error = FromRocks(s, "read"); !error.ok()) {
        decoded[r] = error;
      } else {
        StatusOr<StoredValueView> view =
            DecodeStoredValue(std::string_view(read_values[r].data(), read_values[r].size()));
        if (view.ok()) {
          decoded[r] = std::optional<StoredState>(StoredState{
              .version = view->version, .tombstone = view->tombstone, .body = view->body});
        } else {
          decoded[r] = view.status();
        }
      }
    }
    return *decoded[r];
  };

  // Decide every mutation in order first; versions are taken only once the writes are known, so
  // a refused batch consumes none. While deciding, a fresh write of this batch counts as newer
  // than any version (it will be: fresh versions are allocated after observing the carried
  // ones), so a later kApplyIfNewer on the same key skips, as it would after the commit.
  constexpr uint64_t kFresh = ~0ull;
  struct Pending {
    uint64_t version = 0;
    bool tombstone = false;
    std::string_view body;  // the mutation's own (valid for the call)
  };
  // By the key in `prepared` (not resized from here on).
  absl::flat_hash_map<std::string_view, Pending> pending;
  std::vector<size_t> writes;
  std::vector<uint64_t> churn(ms.size(), 0);
  for (size_t i = 0; i < ms.size(); ++i) {
    if (failed[i]) continue;
    const Mutation& m = ms[i];
    std::optional<StoredState> stored;
    if (auto it = pending.find(prepared[i].key); it != pending.end()) {
      stored = StoredState{it->second.version, it->second.tombstone, it->second.body};
    } else {
      StatusOr<std::optional<StoredState>> read = stored_of(read_index.at(prepared[i].key));
      if (!read.ok()) {
        if (whole) return read.status();
        fail(i, read.status());
        continue;
      }
      stored = *read;
    }
    std::optional<FilterEvaluator> evaluator;
    if (!m.condition.fields.empty()) evaluator.emplace(m.condition.fields);
    StatusOr<Decision> decision = Decide(m, stored, evaluator.has_value() ? &*evaluator : nullptr);
    if (!decision.ok()) {
      if (whole) return Prefixed(decision.status(), fmt::format("batch[{}]", i));
      fail(i, decision.status());
      continue;
    }
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
    if (m.kind == MutationKind::kApplyIfNewer) {
      max_carried = std::max(max_carried, m.version);
    } else {
      ++fresh_versions;
    }
    pending[prepared[i].key] = Pending{version, tombstone, tombstone ? std::string_view() : m.body};
    writes.push_back(i);
  }
  if (writes.empty()) return results;
  // A failure from here on fails every write of the call: none of them was written.
  auto fail_writes = [&](const Status& s) -> StatusOr<std::vector<StatusOr<MutationResult>>> {
    if (whole) return s;
    // Also the slots decided against an earlier write of this batch to their key (an insert
    // found DUPLICATE after an upsert, say): that write never happened.
    for (size_t i = 0; i < ms.size(); ++i) {
      if (!invalid[i] && pending.contains(prepared[i].key)) results[i] = s;
    }
    return results;
  };
  if (Status s = space_->Admit(bytes); !s.ok()) return fail_writes(s);
  if (max_carried > 0) {
    if (Status s = clock_->Observe(max_carried); !s.ok()) return fail_writes(s);
  }
  uint64_t next_version = 0;
  if (fresh_versions > 0) {
    StatusOr<uint64_t> first = clock_->Allocate(fresh_versions);
    if (!first.ok()) return fail_writes(first.status());
    next_version = *first;
  }
  rocksdb::WriteBatch batch;
  for (size_t i : writes) {
    const Mutation& m = ms[i];
    const uint64_t version = m.kind == MutationKind::kApplyIfNewer ? m.version : next_version++;
    const bool tombstone = m.WritesTombstone();
    // Header and body as two parts: the batch copies them once, into its own buffer.
    const std::array<char, kStoredValueHeaderBytes> header =
        EncodeStoredValueHeader(version, tombstone);
    const rocksdb::Slice key(prepared[i].key);
    const std::array<rocksdb::Slice, 2> value = {
        rocksdb::Slice(header.data(), header.size()),
        tombstone ? rocksdb::Slice() : rocksdb::Slice(m.body.data(), m.body.size())};
    if (rocksdb::Status s = batch.Put(documents_, rocksdb::SliceParts(&key, 1),
                                      rocksdb::SliceParts(value.data(), 2));
        !s.ok()) {
      return fail_writes(FromRocks(s, "batch"));
    }
    results[i] = MutationResult{.version = version, .applied = true};
  }
  if (hook != nullptr) {
    if (Status s = hook->prepare(writes, results, &batch); !s.ok()) return fail_writes(s);
  }
  if (Status s = WriteBatchToEngine(&batch, wal_sync); !s.ok()) return fail_writes(s);
  if (hook != nullptr) hook->written();
  for (size_t i : writes) AddChurn(prepared[i].point, churn[i]);
  return results;
}

StatusOr<std::vector<MutationResult>> BucketStore::ApplyBatch(std::span<const Mutation> ms,
                                                              WalSync wal_sync) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<StatusOr<MutationResult>> slots,
                         ApplyMutations(ms, wal_sync, BatchFailure::kWhole));
  std::vector<MutationResult> results;
  results.reserve(slots.size());
  for (StatusOr<MutationResult>& slot : slots) {
    if (!slot.ok()) return InternalError("a whole batch returned a failed slot");
    results.push_back(*slot);
  }
  return results;
}

StatusOr<std::vector<StatusOr<MutationResult>>> BucketStore::ApplyEach(std::span<const Mutation> ms,
                                                                       WalSync wal_sync) {
  return ApplyMutations(ms, wal_sync, BatchFailure::kPerSlot);
}

StatusOr<std::vector<MutationResult>> BucketStore::ApplyChanges(std::span<const Document> changes,
                                                                WalSync wal_sync) {
  std::vector<Mutation> mutations;
  mutations.reserve(changes.size());
  for (const Document& d : changes) mutations.push_back(ApplyIfNewerOf(d));
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
