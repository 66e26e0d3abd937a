#include "src/clientside/remote_shard_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <queue>
#include <variant>

#include "src/clientside/embedded_shard_backend.h"

namespace shoal::clientside {

namespace {

using storage::CompareOp;
using storage::DocumentFilter;
using storage::FieldPredicate;

// Documents per page of the cluster's query.
constexpr uint32_t kScanPage = 1000;

Status Missing(std::string_view pk) { return NotFoundError(fmt::format("not found {}", pk)); }
Status Duplicate(std::string_view pk) {
  return AlreadyExistsError(fmt::format("duplicate {}", pk));
}

// Results of a write that mean "another write came first": reread and try again.
bool LostRace(const Status& s) {
  return s.code() == StatusCode::kFailedPrecondition || s.code() == StatusCode::kNotFound ||
         s.code() == StatusCode::kAlreadyExists;
}

Op ToOp(CompareOp op) {
  switch (op) {
    case CompareOp::kEq:
      return Op::kEq;
    case CompareOp::kNe:
      return Op::kNe;
    case CompareOp::kLt:
      return Op::kLt;
    case CompareOp::kLe:
      return Op::kLe;
    case CompareOp::kGt:
      return Op::kGt;
    case CompareOp::kGe:
      return Op::kGe;
  }
  return Op::kEq;
}

std::string JsonLiteral(const storage::FieldValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::nullptr_t>) {
          return "null";
        } else {
          return nlohmann::json(v).dump();
        }
      },
      value);
}

std::vector<Condition> ToConditions(const DocumentFilter& filter) {
  std::vector<Condition> out;
  out.reserve(filter.all_of.size());
  for (const FieldPredicate& p : filter.all_of) {
    out.push_back({.path = p.path, .op = ToOp(p.op), .json_value = JsonLiteral(p.value)});
  }
  return out;
}

// Holds for every shard document and never for a removal marker (which has no "v").
Condition AnyShardDocument() { return {.path = "v", .op = Op::kGe, .json_value = "0"}; }

}  // namespace

StatusOr<std::unique_ptr<RemoteShardBackend>> RemoteShardBackend::Create(
    Database& db, const std::string& collection) {
  SHOAL_ASSIGN_OR_RETURN(Collection c, db.CreateCollection(collection));
  return std::unique_ptr<RemoteShardBackend>(new RemoteShardBackend(std::move(c), collection));
}

StatusOr<RemoteShardBackend::Stored> RemoteShardBackend::Read(std::string_view primary_key) {
  StatusOr<Document> got = collection_.Get(primary_key);
  if (!got.ok()) {
    if (got.status().code() == StatusCode::kNotFound) return Stored{};
    return got.status();
  }
  if (got->json == kRemovedMarker) return Stored{.version = got->version, .document = {}};
  SHOAL_ASSIGN_OR_RETURN(ShardDocument d, DecodeShardBody(std::string(primary_key), got->json));
  return Stored{.version = got->version, .document = std::move(d)};
}

StatusOr<bool> RemoteShardBackend::WriteOver(std::string_view primary_key, const Stored& stored,
                                             std::string_view body) {
  Status written = stored.version == 0
                       ? collection_.Insert(primary_key, body).status()
                       : collection_.CompareAndSet(primary_key, stored.version, body).status();
  if (written.ok()) return true;
  if (LostRace(written)) return false;
  return written;
}

Status RemoteShardBackend::ReplaceIf(std::string_view primary_key, const ShardCondition& condition,
                                     std::string_view body) {
  for (;;) {
    SHOAL_ASSIGN_OR_RETURN(Stored stored, Read(primary_key));
    if (!stored.document.has_value() || !condition.Holds(*stored.document)) {
      return Missing(primary_key);
    }
    SHOAL_ASSIGN_OR_RETURN(bool written, WriteOver(primary_key, stored, body));
    if (written) return OkStatus();
  }
}

Status RemoteShardBackend::Insert(const ShardDocument& d) {
  const std::string body = EncodeShardBody(d);
  Stored stored;  // first try a plain insert: one round trip for a new key
  for (;;) {
    SHOAL_ASSIGN_OR_RETURN(bool written, WriteOver(d.primary_key, stored, body));
    if (written) return OkStatus();
    SHOAL_ASSIGN_OR_RETURN(stored, Read(d.primary_key));
    if (stored.document.has_value()) return Duplicate(d.primary_key);
  }
}

Status RemoteShardBackend::Delete(std::string_view primary_key) {
  return ReplaceIf(primary_key, ShardCondition{}, kRemovedMarker);
}

Status RemoteShardBackend::DeleteIf(std::string_view primary_key, const ShardCondition& condition) {
  return ReplaceIf(primary_key, condition, kRemovedMarker);
}

Status RemoteShardBackend::Update(const ShardDocument& d) {
  return ReplaceIf(d.primary_key, ShardCondition{}, EncodeShardBody(d));
}

Status RemoteShardBackend::UpdateIf(const ShardDocument& d, const ShardCondition& condition) {
  return ReplaceIf(d.primary_key, condition, EncodeShardBody(d));
}

Status RemoteShardBackend::Upsert(const ShardDocument& d) {
  return collection_.Upsert(d.primary_key, EncodeShardBody(d)).status();
}

Status RemoteShardBackend::UpsertIf(const ShardDocument& d, const ShardCondition& condition) {
  const std::string body = EncodeShardBody(d);
  // First a plain insert (the insert branch, one round trip when the key is new: the consistent
  // add, update and delete of a document still on its old shard), then read and compare-and-set.
  SHOAL_ASSIGN_OR_RETURN(bool inserted, WriteOver(d.primary_key, Stored{}, body));
  if (inserted) return OkStatus();
  for (;;) {
    SHOAL_ASSIGN_OR_RETURN(Stored stored, Read(d.primary_key));
    if (stored.document.has_value() && !condition.Holds(*stored.document)) {
      return Duplicate(d.primary_key);
    }
    SHOAL_ASSIGN_OR_RETURN(bool written, WriteOver(d.primary_key, stored, body));
    if (written) return OkStatus();
  }
}

StatusOr<ShardDocument> RemoteShardBackend::Get(std::string_view primary_key) {
  SHOAL_ASSIGN_OR_RETURN(Stored stored, Read(primary_key));
  if (!stored.document.has_value()) return Missing(primary_key);
  return *std::move(stored.document);
}

StatusOr<ShardPage> RemoteShardBackend::Query(const ShardQuery& query) {
  SHOAL_RETURN_IF_ERROR(storage::ValidateFilter(query.filter));
  if (query.limit == 0) return InvalidArgumentError("query limit must be >= 1");
  // The same filter on the stored encoding as the embedded backend.
  const DocumentFilter filter = StoredFilter(query);
  // With or_version the filter is evaluated here, since a document of that version is taken
  // whether it matches or not; otherwise the cluster evaluates it.
  std::unique_ptr<storage::FilterEvaluator> evaluator;
  QueryOptions scan{.filter = {}, .limit = kScanPage, .cursor = {}};
  if (query.or_version.has_value() || filter.empty()) {
    scan.filter.push_back(AnyShardDocument());
    if (query.or_version.has_value()) {
      evaluator = std::make_unique<storage::FilterEvaluator>(filter);
    }
  } else {
    scan.filter = ToConditions(filter);
  }
  const std::string or_prefix =
      query.or_version.has_value() ? fmt::format("{{\"v\":{},", query.or_version->value()) : "";
  // The limit + 1 smallest keys after the cursor, in a max-heap on the key.
  auto by_key = [](const Document& a, const Document& b) { return a.key < b.key; };
  std::priority_queue<Document, std::vector<Document>, decltype(by_key)> best(by_key);
  // A document of or_version that the filter rejects is kept as its shadow row.
  const std::string shadow_body =
      query.or_version.has_value() ? EncodeShardBody(ShadowRow("", *query.or_version)) : "";
  for (;;) {
    SHOAL_ASSIGN_OR_RETURN(QueryPage page, collection_.Query(scan));
    for (Document& doc : page.documents) {
      if (query.has_after_key && doc.key <= query.after_key) continue;
      if (doc.json == kRemovedMarker) continue;
      if (evaluator != nullptr) {
        SHOAL_ASSIGN_OR_RETURN(bool match, evaluator->Matches(doc.json));
        if (!match && !doc.json.starts_with(or_prefix)) continue;
        if (!match) doc.json = shadow_body;
      }
      if (best.size() <= query.limit) {
        best.push(std::move(doc));
      } else if (doc.key < best.top().key) {
        best.pop();
        best.push(std::move(doc));
      }
    }
    if (page.next_cursor.empty()) break;
    scan.cursor = std::move(page.next_cursor);
  }
  ShardPage out;
  out.done = best.size() <= query.limit;
  if (!out.done) best.pop();
  std::vector<Document> sorted;
  sorted.reserve(best.size());
  while (!best.empty()) {
    sorted.push_back(best.top());
    best.pop();
  }
  std::reverse(sorted.begin(), sorted.end());
  for (Document& doc : sorted) {
    SHOAL_ASSIGN_OR_RETURN(ShardDocument d, DecodeShardBody(std::move(doc.key), doc.json));
    out.documents.push_back(std::move(d));
  }
  return out;
}

}  // namespace shoal::clientside
