#include "src/clientside/embedded_shard_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <queue>

#include "src/storage/errors.h"

namespace shoal::clientside {

namespace {

using storage::CompareOp;
using storage::DocumentFilter;
using storage::FieldPredicate;

constexpr std::string_view kVersionPrefix = "{\"v\":";
constexpr std::string_view kTombTrue = ",\"t\":true,\"b\":";
constexpr std::string_view kTombFalse = ",\"t\":false,\"b\":";

// The engine field predicates of `condition`. Always non-empty, so it never holds for an
// engine tombstone (a removed document).
DocumentFilter ToFilter(const ShardCondition& condition) {
  DocumentFilter filter;
  if (condition.tombstone.has_value()) {
    filter.all_of.push_back({.path = "t", .op = CompareOp::kEq, .value = *condition.tombstone});
  }
  if (condition.version.has_value()) {
    filter.all_of.push_back({.path = "v",
                             .op = CompareOp::kEq,
                             .value = static_cast<int64_t>(condition.version->value())});
  }
  if (filter.empty()) {
    filter.all_of.push_back({.path = "v", .op = CompareOp::kGe, .value = int64_t{0}});
  }
  return filter;
}

// Engine results in the shard's vocabulary: a failed condition is NOT_FOUND (000 §5).
Status FromEngine(const Status& status) {
  if (status.ok()) return status;
  if (status.code() == StatusCode::kFailedPrecondition) return NotFoundError(MessageOf(status));
  return status;
}

}  // namespace

std::string EncodeShardBody(const ShardDocument& d) {
  std::string out;
  out.reserve(d.body.size() + 40);
  out += kVersionPrefix;
  out += std::to_string(d.version.value());
  out += d.tombstone ? kTombTrue : kTombFalse;
  out += d.tombstone || d.body.empty() ? std::string_view("{}") : std::string_view(d.body);
  out += '}';
  return out;
}

DocumentFilter StoredFilter(const ShardQuery& query) {
  DocumentFilter filter;
  for (const FieldPredicate& p : query.filter.all_of) {
    filter.all_of.push_back({.path = "b." + p.path, .op = p.op, .value = p.value});
  }
  if (!query.filter.empty() || !query.include_tombstones) {
    filter.all_of.push_back({.path = "t", .op = CompareOp::kEq, .value = false});
  }
  if (query.version.has_value()) {
    filter.all_of.push_back(
        {.path = "v", .op = CompareOp::kEq, .value = static_cast<int64_t>(query.version->value())});
  }
  return filter;
}

StatusOr<ShardDocument> DecodeShardBody(std::string primary_key, std::string_view stored) {
  auto corrupt = [&] {
    return MakeStatus(StatusCode::kDataLoss,
                      fmt::format("shard document {} does not decode", primary_key));
  };
  if (!stored.starts_with(kVersionPrefix) || !stored.ends_with('}')) return corrupt();
  stored.remove_prefix(kVersionPrefix.size());
  uint64_t version = 0;
  auto [end, ec] = std::from_chars(stored.data(), stored.data() + stored.size(), version);
  if (ec != std::errc()) return corrupt();
  stored.remove_prefix(static_cast<size_t>(end - stored.data()));
  bool tombstone = false;
  if (stored.starts_with(kTombTrue)) {
    tombstone = true;
    stored.remove_prefix(kTombTrue.size());
  } else if (stored.starts_with(kTombFalse)) {
    stored.remove_prefix(kTombFalse.size());
  } else {
    return corrupt();
  }
  stored.remove_suffix(1);
  return ShardDocument{.primary_key = std::move(primary_key),
                       .body = tombstone ? std::string() : std::string(stored),
                       .version = MapVersion(version),
                       .tombstone = tombstone};
}

StatusOr<std::unique_ptr<EmbeddedShardBackend>> EmbeddedShardBackend::Create(
    std::shared_ptr<storage::BucketStore> store, CollectionId collection, std::string name) {
  SHOAL_RETURN_IF_ERROR(store->CreateCollection({.id = collection, .name = name}));
  return std::unique_ptr<EmbeddedShardBackend>(
      new EmbeddedShardBackend(std::move(store), collection, std::move(name)));
}

StatusOr<std::optional<storage::Document>> EmbeddedShardBackend::ReadRaw(
    std::string_view pk) const {
  auto doc = store_->Get(collection_, pk, {.include_tombstones = true, .snapshot = nullptr});
  if (doc.ok()) return std::optional<storage::Document>(*std::move(doc));
  if (doc.status().code() == StatusCode::kNotFound) return std::optional<storage::Document>();
  return doc.status();
}

Status EmbeddedShardBackend::Insert(const ShardDocument& d) {
  return store_->Insert(collection_, d.primary_key, EncodeShardBody(d)).status();
}

Status EmbeddedShardBackend::Delete(std::string_view primary_key) {
  return store_->Delete(collection_, primary_key).status();
}

Status EmbeddedShardBackend::DeleteIf(std::string_view primary_key,
                                      const ShardCondition& condition) {
  for (;;) {
    SHOAL_ASSIGN_OR_RETURN(std::optional<storage::Document> raw, ReadRaw(primary_key));
    if (!raw.has_value() || raw->tombstone) {
      return NotFoundError(fmt::format("not found {}", primary_key));
    }
    SHOAL_ASSIGN_OR_RETURN(ShardDocument stored,
                           DecodeShardBody(std::string(primary_key), raw->body));
    if (!condition.Holds(stored)) return NotFoundError(fmt::format("not found {}", primary_key));
    auto written = store_->Apply({.kind = storage::MutationKind::kCompareAndSet,
                                  .collection = collection_,
                                  .primary_key = primary_key,
                                  .body = {},
                                  .tombstone = true,
                                  .condition = {},
                                  .version = raw->version});
    if (written.ok()) return OkStatus();
    if (written.status().code() != StatusCode::kFailedPrecondition) return written.status();
  }
}

Status EmbeddedShardBackend::Update(const ShardDocument& d) {
  return store_->Update(collection_, d.primary_key, EncodeShardBody(d)).status();
}

Status EmbeddedShardBackend::UpdateIf(const ShardDocument& d, const ShardCondition& condition) {
  storage::Condition engine_condition{.fields = ToFilter(condition)};
  return FromEngine(
      store_->UpdateIf(collection_, d.primary_key, EncodeShardBody(d), engine_condition).status());
}

Status EmbeddedShardBackend::Upsert(const ShardDocument& d) {
  return store_->Upsert(collection_, d.primary_key, EncodeShardBody(d)).status();
}

Status EmbeddedShardBackend::UpsertIf(const ShardDocument& d, const ShardCondition& condition) {
  const std::string body = EncodeShardBody(d);
  for (;;) {
    SHOAL_ASSIGN_OR_RETURN(std::optional<storage::Document> raw, ReadRaw(d.primary_key));
    uint64_t expected = 0;
    if (raw.has_value()) {
      expected = raw->version;
      if (!raw->tombstone) {
        SHOAL_ASSIGN_OR_RETURN(ShardDocument stored, DecodeShardBody(d.primary_key, raw->body));
        if (!condition.Holds(stored)) {
          return AlreadyExistsError(fmt::format("duplicate {}", d.primary_key));
        }
      }
    }
    auto written = store_->CompareAndSet(collection_, d.primary_key, expected, body);
    if (written.ok()) return OkStatus();
    const StatusCode code = written.status().code();
    if (code != StatusCode::kFailedPrecondition && code != StatusCode::kNotFound) {
      return written.status();
    }
  }
}

StatusOr<ShardDocument> EmbeddedShardBackend::Get(std::string_view primary_key) {
  SHOAL_ASSIGN_OR_RETURN(storage::Document doc, store_->Get(collection_, primary_key));
  return DecodeShardBody(std::move(doc.primary_key), doc.body);
}

StatusOr<ShardPage> EmbeddedShardBackend::Query(const ShardQuery& query) {
  SHOAL_RETURN_IF_ERROR(storage::ValidateFilter(query.filter));
  if (query.limit == 0) return InvalidArgumentError("query limit must be >= 1");
  const DocumentFilter filter = StoredFilter(query);
  // The limit + 1 smallest keys after the cursor, in a max-heap on the key.
  auto by_key = [](const storage::Document& a, const storage::Document& b) {
    return a.primary_key < b.primary_key;
  };
  std::priority_queue<storage::Document, std::vector<storage::Document>, decltype(by_key)> best(
      by_key);
  storage::ScanOptions scan;
  scan.collection = collection_;
  // With or_version the filter is evaluated here, since a document of that version is taken
  // whether it matches or not.
  std::unique_ptr<storage::FilterEvaluator> evaluator;
  if (query.or_version.has_value()) {
    evaluator = std::make_unique<storage::FilterEvaluator>(filter);
  } else {
    scan.filter = filter;
  }
  const std::string extra_prefix =
      query.or_version.has_value()
          ? std::string(kVersionPrefix) + std::to_string(query.or_version->value()) + ","
          : std::string();
  Status inner = OkStatus();
  // A document of or_version that the filter rejects is kept as its shadow row.
  const std::string shadow_body =
      query.or_version.has_value() ? EncodeShardBody(ShadowRow("", *query.or_version)) : "";
  SHOAL_RETURN_IF_ERROR(store_->ForEach(scan, [&](const storage::Document& doc) {
    if (query.has_after_key && doc.primary_key <= query.after_key) return true;
    bool shadow = false;
    if (evaluator != nullptr) {
      StatusOr<bool> match = evaluator->Matches(doc.body);
      if (!match.ok()) {
        inner = match.status();
        return false;
      }
      if (!*match && !doc.body.starts_with(extra_prefix)) return true;
      shadow = !*match;
    }
    if (best.size() <= query.limit || doc.primary_key < best.top().primary_key) {
      if (best.size() > query.limit) best.pop();
      storage::Document kept = doc;
      if (shadow) kept.body = shadow_body;
      best.push(std::move(kept));
    }
    return true;
  }));
  SHOAL_RETURN_IF_ERROR(inner);
  ShardPage page;
  page.done = best.size() <= query.limit;
  if (!page.done) best.pop();
  std::vector<storage::Document> sorted;
  sorted.reserve(best.size());
  while (!best.empty()) {
    sorted.push_back(best.top());
    best.pop();
  }
  std::reverse(sorted.begin(), sorted.end());
  for (storage::Document& doc : sorted) {
    SHOAL_ASSIGN_OR_RETURN(ShardDocument d, DecodeShardBody(std::move(doc.primary_key), doc.body));
    page.documents.push_back(std::move(d));
  }
  return page;
}

}  // namespace shoal::clientside
