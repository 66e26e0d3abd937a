#include "src/hotspot/hot_collection.h"

#include <fmt/format.h>

#include <algorithm>

#include "src/storage/collection_name.h"
#include "src/storage/errors.h"
#include "src/storage/predicate.h"

namespace shoal::hotspot {
namespace {

constexpr int kMaxSchemaAttempts = 32;
constexpr size_t kMaxActivityKeys = 4096;

[[nodiscard]] StatusOr<Value> ParseJson(std::string_view json, std::string_view what) {
  Value parsed = Value::parse(json, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return InvalidArgumentError(fmt::format("{} is not valid JSON", what));
  return parsed;
}

// The top-level member a condition path names ("votes" of "votes.x").
[[nodiscard]] std::string_view TopField(std::string_view path) {
  return path.substr(0, path.find('.'));
}

// A system collection, found before it is created: a user with the read role may not create a
// collection (docs/security.md), but reads through the ones a writer made.
[[nodiscard]] StatusOr<CollectionId> FindOrCreate(client::Client& client, std::string_view name) {
  StatusOr<CollectionId> found = client.FindCollection(name);
  if (!found.ok() && storage::Is(found.status(), storage::ErrorReason::kUnknownCollection)) {
    return client.OpenCollection(name);
  }
  return found;
}

}  // namespace

StatusOr<std::string> HiddenCollectionName(std::string_view collection) {
  std::string name = fmt::format("{}hot.{}", kSystemPrefix, collection);
  if (name.size() > storage::kMaxCollectionNameBytes) {
    return InvalidArgumentError(
        fmt::format("a collection with sharded fields has a name of at most {} bytes",
                    storage::kMaxCollectionNameBytes - (name.size() - collection.size())));
  }
  return name;
}

StatusOr<CollectionSchema> LoadSchema(client::Client& client, CollectionId schemas,
                                      std::string_view collection) {
  auto doc = client.Get(schemas, collection);
  if (doc.status().code() == StatusCode::kNotFound) return CollectionSchema();
  if (!doc.ok()) return doc.status();
  SHOAL_ASSIGN_OR_RETURN(Value stored, ParseJson(doc->body, "a stored schema"));
  if (!stored.contains("fields")) return CollectionSchema();
  auto schema = CollectionSchema::FromJson(stored["fields"], FoldRegistry::Global());
  if (!schema.ok()) {
    // A fold registered in another process but not in this one.
    return FailedPreconditionError(
        fmt::format("schema of {}: {} (register custom folds before "
                    "opening the collection)",
                    collection, MessageOf(schema.status())));
  }
  return schema;
}

StatusOr<CollectionSchema> DeclareSchema(client::Client& client, CollectionId schemas,
                                         std::string_view collection,
                                         const CollectionSchema& declaration) {
  for (int attempt = 0; attempt < kMaxSchemaAttempts; ++attempt) {
    auto doc = client.Get(schemas, collection);
    if (!doc.ok() && doc.status().code() != StatusCode::kNotFound) return doc.status();
    CollectionSchema schema;
    if (doc.ok()) {
      SHOAL_ASSIGN_OR_RETURN(schema, LoadSchema(client, schemas, collection));
    }
    SHOAL_RETURN_IF_ERROR(schema.Merge(declaration));
    const std::string body = Value{{"fields", schema.ToJson()}}.dump();
    Status written = doc.ok()
                         ? client.CompareAndSet(schemas, collection, doc->version, body).status()
                         : client.Insert(schemas, collection, body).status();
    if (written.ok()) return schema;
    if (written.code() != StatusCode::kFailedPrecondition &&
        written.code() != StatusCode::kAlreadyExists && written.code() != StatusCode::kUnknown) {
      return written;
    }
  }
  return UnavailableError(
      fmt::format("schema of {}: too many concurrent declarations", collection));
}

HotCollection::HotCollection(client::Client& client, std::string name, CollectionId main,
                             std::function<transport::Micros()> clock, uint64_t seed)
    : client_(client), name_(std::move(name)), main_(main), clock_(std::move(clock)), seed_(seed) {}

Status HotCollection::EnsureHidden() {
  {
    std::lock_guard lock(mu_);
    if (fields_ != nullptr) return OkStatus();
  }
  SHOAL_ASSIGN_OR_RETURN(std::string hidden_name, HiddenCollectionName(name_));
  SHOAL_ASSIGN_OR_RETURN(CollectionId hidden, FindOrCreate(client_, hidden_name));
  std::lock_guard lock(mu_);
  if (fields_ == nullptr) {
    fields_ = std::make_unique<ShardedFields>(client_, hidden, seed_);
    groups_ = std::make_unique<EntityGroups>(client_, hidden);
  }
  return OkStatus();
}

StatusOr<std::optional<CollectionId>> HotCollection::SchemaCollection(bool create) {
  {
    std::lock_guard lock(mu_);
    if (schemas_.has_value()) return schemas_;
  }
  StatusOr<CollectionId> id = FindOrCreate(client_, kSchemaCollection);
  if (!create && id.status().code() == StatusCode::kPermissionDenied) {
    return std::optional<CollectionId>();
  }
  if (!id.ok()) return id.status();
  std::lock_guard lock(mu_);
  schemas_ = *id;
  return schemas_;
}

StatusOr<std::shared_ptr<const CollectionSchema>> HotCollection::CurrentSchema() {
  const transport::Micros now = clock_();
  uint64_t installs_seen = 0;
  {
    std::lock_guard lock(mu_);
    if (schema_ != nullptr && now - schema_loaded_at_ < kSchemaRefresh) {
      refresh_claimed_ = false;  // a KnownPlain caller found it fresh
      return schema_;
    }
    installs_seen = schema_installs_;
  }
  auto schemas = SchemaCollection(/*create=*/false);
  auto loaded = !schemas.ok()           ? StatusOr<CollectionSchema>(schemas.status())
                : !schemas->has_value() ? StatusOr<CollectionSchema>(CollectionSchema())
                                        : LoadSchema(client_, **schemas, name_);
  if (!loaded.ok()) {
    // A refresh that fails (the schema's bucket is moving, the coordinator restarts) must not
    // fail every write of the collection: the last schema read stays in force meanwhile.
    {
      std::lock_guard lock(mu_);
      refresh_claimed_ = false;
      if (schema_ != nullptr) return schema_;
    }
    // No schema read yet (a new handle): one unavailable bucket, the one holding the schema,
    // must not make every key of the collection unavailable. Declare creates the hidden
    // collection before it stores a schema, so without a hidden collection nothing is declared.
    // A name too long for a hidden collection never had fields declared either.
    const StatusOr<std::string> hidden = HiddenCollectionName(name_);
    const StatusOr<CollectionId> found =
        hidden.ok() ? client_.FindCollection(*hidden) : StatusOr<CollectionId>(hidden.status());
    if (!hidden.ok() ||
        (!found.ok() && storage::Is(found.status(), storage::ErrorReason::kUnknownCollection))) {
      loaded = CollectionSchema();
    } else {
      return Prefixed(loaded.status(),
                      fmt::format("collection {} declares sharded fields, and its schema cannot "
                                  "be read now",
                                  name_));
    }
  }
  auto schema = std::make_shared<const CollectionSchema>(std::move(*loaded));
  if (!schema->empty()) {
    SHOAL_RETURN_IF_ERROR(EnsureHidden());
  }
  std::lock_guard lock(mu_);
  refresh_claimed_ = false;
  if (schema_installs_ != installs_seen) return schema_;  // newer than what this read saw
  ++schema_installs_;
  schema_ = schema;
  schema_loaded_at_ = now;
  return schema;
}

StatusOr<FieldSpec> HotCollection::SpecOf(std::string_view field) {
  SHOAL_ASSIGN_OR_RETURN(auto schema, CurrentSchema());
  const FieldSpec* spec = schema->Find(field);
  if (spec == nullptr) {
    return InvalidArgumentError(
        fmt::format("field \"{}\" of collection {} is not declared sharded", field, name_));
  }
  return *spec;
}

Status HotCollection::Declare(std::string_view schema_json) {
  SHOAL_ASSIGN_OR_RETURN(CollectionSchema declaration,
                         CollectionSchema::Parse(schema_json, FoldRegistry::Global()));
  // The hidden collection first: its absence means that no schema was ever stored
  // (CurrentSchema relies on it when the schema's bucket is unavailable).
  SHOAL_RETURN_IF_ERROR(EnsureHidden());
  SHOAL_ASSIGN_OR_RETURN(std::optional<CollectionId> schemas, SchemaCollection(/*create=*/true));
  SHOAL_ASSIGN_OR_RETURN(CollectionSchema merged,
                         DeclareSchema(client_, schemas.value(), name_, declaration));
  std::lock_guard lock(mu_);
  ++schema_installs_;
  schema_ = std::make_shared<const CollectionSchema>(std::move(merged));
  schema_loaded_at_ = clock_();
  return OkStatus();
}

StatusOr<CollectionSchema> HotCollection::Schema() {
  SHOAL_ASSIGN_OR_RETURN(auto schema, CurrentSchema());
  return *schema;
}

bool HotCollection::KnownPlain() {
  const transport::Micros now = clock_();
  std::lock_guard lock(mu_);
  if (schema_ == nullptr || !schema_->empty()) return false;
  if (now - schema_loaded_at_ < kSchemaRefresh) return true;
  // Stale: one caller at a time takes the synchronous path, which reads the schema again; the
  // others go on with the one read at most two periods ago.
  if (!refresh_claimed_) {
    refresh_claimed_ = true;
    return false;
  }
  return now - schema_loaded_at_ < 2 * kSchemaRefresh;
}

Status HotCollection::CheckWrite(std::string_view json) {
  SHOAL_ASSIGN_OR_RETURN(auto schema, CurrentSchema());
  if (schema->empty()) return OkStatus();
  // A malformed body is the store's to refuse, with its own message.
  const Value body = Value::parse(json, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object()) return OkStatus();
  for (const auto& [field, spec] : schema->fields()) {
    if (body.contains(field)) {
      return InvalidArgumentError(
          fmt::format("field \"{}\" of collection {} is {}: change it with {}", field, name_,
                      ToString(spec.kind),
                      spec.kind == FieldKind::kEntityGroup ? "PutMember/RemoveMember" : "Apply"));
    }
  }
  return OkStatus();
}

Status HotCollection::FoldInto(const CollectionSchema& schema, std::string_view pk, ReadMode mode,
                               Value& body) {
  for (const auto& [field, spec] : schema.fields()) {
    if (spec.kind == FieldKind::kEntityGroup) {
      SHOAL_ASSIGN_OR_RETURN(Value members, groups_->Read(spec, pk));
      // Members stored in the main document before the declaration stay visible.
      if (body.contains(field) && body[field].is_object()) {
        for (auto& [name, member] : members.items()) body[field][name] = std::move(member);
      } else {
        body[field] = std::move(members);
      }
      continue;
    }
    SHOAL_ASSIGN_OR_RETURN(Value folded, fields_->Read(spec, pk, mode));
    // A value written before the declaration is the field's starting point (paper 003 §2.1:
    // "the first shard stores the original value").
    if (body.contains(field)) {
      auto combined = spec.fold->Combine(body[field], folded);
      if (combined.ok()) folded = std::move(*combined);
    }
    body[field] = std::move(folded);
  }
  return OkStatus();
}

StatusOr<storage::Document> HotCollection::Get(std::string_view pk, ReadMode mode,
                                               bool any_replica) {
  SHOAL_ASSIGN_OR_RETURN(storage::Document doc,
                         any_replica ? client_.GetAnyReplica(main_, pk) : client_.Get(main_, pk));
  SHOAL_ASSIGN_OR_RETURN(auto schema, CurrentSchema());
  if (schema->empty()) return doc;
  SHOAL_ASSIGN_OR_RETURN(Value body, ParseJson(doc.body, "a stored document"));
  SHOAL_RETURN_IF_ERROR(FoldInto(*schema, pk, mode, body));
  doc.body = body.dump();
  return doc;
}

StatusOr<storage::DocumentFilter> HotCollection::SplitFilter(const CollectionSchema& schema,
                                                             client::QueryOptions& options) {
  // Conditions on declared fields are evaluated after folding; the rest by the nodes.
  storage::DocumentFilter local;
  storage::DocumentFilter remote;
  for (auto& predicate : options.filter.all_of) {
    (schema.Find(TopField(predicate.path)) != nullptr ? local : remote)
        .all_of.push_back(std::move(predicate));
  }
  SHOAL_RETURN_IF_ERROR(storage::ValidateFilter(local));
  options.filter = std::move(remote);
  return local;
}

StatusOr<bool> HotCollection::FoldAndMatch(const CollectionSchema& schema,
                                           const storage::DocumentFilter& local,
                                           storage::FilterEvaluator& evaluator,
                                           storage::Document& doc) {
  SHOAL_ASSIGN_OR_RETURN(Value body, ParseJson(doc.body, "a stored document"));
  SHOAL_RETURN_IF_ERROR(FoldInto(schema, doc.primary_key, ReadMode::kLatest, body));
  doc.body = body.dump();
  if (local.empty()) return true;
  return evaluator.Matches(doc.body);
}

StatusOr<client::QueryPage> HotCollection::Query(client::QueryOptions options) {
  SHOAL_ASSIGN_OR_RETURN(auto schema, CurrentSchema());
  if (schema->empty()) return client_.Query(options);
  SHOAL_ASSIGN_OR_RETURN(const storage::DocumentFilter local, SplitFilter(*schema, options));
  storage::FilterEvaluator evaluator(local);
  client::QueryPage out;
  // Pages whose documents all fail the local conditions are skipped, so that a page with a
  // cursor has at least one document unless the scan ends.
  while (true) {
    SHOAL_ASSIGN_OR_RETURN(client::QueryPage page, client_.Query(options));
    for (auto& doc : page.documents) {
      SHOAL_ASSIGN_OR_RETURN(bool matches, FoldAndMatch(*schema, local, evaluator, doc));
      if (matches) out.documents.push_back(std::move(doc));
    }
    out.next_cursor = page.next_cursor;
    if (!out.documents.empty() || page.next_cursor.empty()) break;
    options.cursor = std::move(page.next_cursor);
  }
  return out;
}

Status HotCollection::QueryStream(client::QueryOptions options,
                                  const std::function<Status(storage::Document)>& fn) {
  SHOAL_ASSIGN_OR_RETURN(auto schema, CurrentSchema());
  if (schema->empty()) return client_.QueryStream(options, fn);
  SHOAL_ASSIGN_OR_RETURN(const storage::DocumentFilter local, SplitFilter(*schema, options));
  storage::FilterEvaluator evaluator(local);
  return client_.QueryStream(options, [&](storage::Document doc) -> Status {
    SHOAL_ASSIGN_OR_RETURN(bool matches, FoldAndMatch(*schema, local, evaluator, doc));
    return matches ? fn(std::move(doc)) : OkStatus();
  });
}

Status HotCollection::AfterDelete(std::string_view pk) {
  SHOAL_ASSIGN_OR_RETURN(auto schema, CurrentSchema());
  for (const auto& [field, spec] : schema->fields()) {
    if (spec.kind == FieldKind::kEntityGroup) {
      SHOAL_RETURN_IF_ERROR(groups_->Reset(spec, pk));
    } else {
      SHOAL_RETURN_IF_ERROR(fields_->Reset(spec, pk));
    }
  }
  return OkStatus();
}

StatusOr<ApplyOutcome> HotCollection::Apply(std::string_view pk, std::string_view field,
                                            std::string_view operand_json,
                                            const ApplyOptions& options) {
  // The hot path: no copy of the spec (the schema is shared and immutable).
  SHOAL_ASSIGN_OR_RETURN(auto schema, CurrentSchema());
  const FieldSpec* found = schema->Find(field);
  if (found == nullptr) return SpecOf(field).status();
  const FieldSpec& spec = *found;
  SHOAL_ASSIGN_OR_RETURN(Value operand, ParseJson(operand_json, "the operand"));
  auto outcome = fields_->Apply(spec, pk, operand, options);
  if (outcome.ok()) {
    NoteWrite(spec, pk, *outcome);
  } else if (outcome.status().code() == StatusCode::kAborted) {
    NoteWrite(spec, pk, ApplyOutcome{.conflicts = 1});
  }
  return outcome;
}

void HotCollection::NoteWrite(const FieldSpec& spec, std::string_view pk,
                              const ApplyOutcome& outcome) {
  if (spec.kind != FieldKind::kAuto && spec.kind != FieldKind::kDynamic) return;
  const transport::Micros now = clock_();
  bool grow = false;
  {
    std::lock_guard lock(mu_);
    if (activity_.size() > kMaxActivityKeys) activity_.clear();
    KeyActivity& a = activity_[{spec.field, std::string(pk)}];
    a.last_write = now;
    a.dirty = true;
    // Contention: conflicts with other writers, and (combine) waiting behind this process's
    // writes of the field, which would have been conflicts without the combiner.
    const uint32_t contended = outcome.conflicts + (outcome.queued ? 1 : 0);
    a.conflicts_since_sample += contended;
    if (now - a.window_start >= kAutoWindow) {
      a.window_start = now;
      a.window_conflicts = 0;
    }
    a.window_conflicts += contended;
    const double per_second = static_cast<double>(a.window_conflicts) * 1e6 /
                              static_cast<double>(std::max<transport::Micros>(kAutoWindow, 1));
    if (spec.kind == FieldKind::kAuto && !a.resizing &&
        per_second > spec.policy.grow_conflicts_per_s) {
      a.resizing = true;
      a.window_conflicts = 0;
      grow = true;
    }
  }
  if (!grow) return;
  // Paper 003 §6 (future work): the shard count follows the contention. This updater pays for
  // the growth; the others keep updating the old cells meanwhile.
  auto cells = fields_->CellCount(spec, pk);
  if (cells.ok() && *cells < spec.policy.max_shards) {
    const uint32_t target = std::min(spec.policy.max_shards, *cells * 2);
    (void)fields_->Resize(spec, pk, target);
  }
  std::lock_guard lock(mu_);
  KeyActivity& a = activity_[{spec.field, std::string(pk)}];
  a.resizing = false;
  a.last_grow = clock_();
  a.sampled_at = 0;  // the cells changed: sample the counters afresh
}

StatusOr<bool> HotCollection::MaybeShrink(const FieldSpec& spec, const std::string& pk,
                                          transport::Micros now) {
  SHOAL_ASSIGN_OR_RETURN(ShardedFields::UpdateCount count, fields_->CountUpdates(spec, pk));
  uint32_t conflicts = 0;
  transport::Micros last_sample = 0;
  uint64_t last_updates = 0;
  bool comparable = false;
  {
    std::lock_guard lock(mu_);
    KeyActivity& a = activity_[{spec.field, pk}];
    comparable = a.sampled_at != 0 && a.sampled_tokens == count.tokens;
    last_sample = a.sampled_at;
    last_updates = a.sampled_updates;
    conflicts = a.conflicts_since_sample;
    if (a.resizing || now - a.last_grow < kAutoCooldown) return false;
    a.sampled_at = now;
    a.sampled_updates = count.updates;
    a.sampled_tokens = count.tokens;
    a.conflicts_since_sample = 0;
  }
  const auto cells = static_cast<uint32_t>(count.tokens.size());
  if (!comparable || cells <= spec.policy.min_shards || now <= last_sample) return false;
  const double seconds = static_cast<double>(now - last_sample) / 1e6;
  const double updates_per_cell =
      static_cast<double>(count.updates - std::min(count.updates, last_updates)) / seconds / cells;
  const double conflicts_per_second = static_cast<double>(conflicts) / seconds;
  if (updates_per_cell >= spec.policy.shrink_updates_per_s ||
      conflicts_per_second * 4 >= spec.policy.grow_conflicts_per_s) {
    return false;
  }
  SHOAL_RETURN_IF_ERROR(fields_->Resize(spec, pk, std::max(spec.policy.min_shards, cells / 2)));
  std::lock_guard lock(mu_);
  activity_[{spec.field, pk}].sampled_at = 0;
  return true;
}

StatusOr<uint32_t> HotCollection::AdoptGrownKeys(const CollectionSchema& schema,
                                                 transport::Micros now) {
  bool any_auto = false;
  for (const auto& [name, spec] : schema.fields()) any_auto |= spec.kind == FieldKind::kAuto;
  if (!any_auto) return 0;
  SHOAL_RETURN_IF_ERROR(EnsureHidden());
  // Roots are the hidden documents with a "seq"; cells and entity-group members have none.
  client::QueryOptions query{
      .collection = fields_->collection(),
      .filter = {.all_of = {storage::FieldPredicate{
                     .path = "seq", .op = storage::CompareOp::kGe, .value = int64_t{0}}}},
      .limit = 1000,
      .cursor = {}};
  uint32_t adopted = 0;
  do {
    SHOAL_ASSIGN_OR_RETURN(client::QueryPage page, client_.Query(query));
    for (const auto& doc : page.documents) {
      // The key is pk \0 field \0 "root" (sharded_field.cc).
      const std::string& key = doc.primary_key;
      const size_t second = key.rfind('\0');
      const size_t first = second == std::string::npos || second == 0 ? std::string::npos
                                                                      : key.rfind('\0', second - 1);
      if (first == std::string::npos) continue;
      const std::string pk = key.substr(0, first);
      const std::string field = key.substr(first + 1, second - first - 1);
      const FieldSpec* spec = schema.Find(field);
      if (spec == nullptr || spec->kind != FieldKind::kAuto) continue;
      auto root = FieldRoot::Decode(doc.body);
      if (!root.ok() || root->ActiveTokens().size() <= spec->policy.min_shards) continue;
      std::lock_guard lock(mu_);
      if (activity_.size() >= kMaxActivityKeys) return adopted;
      auto [it, added] = activity_.try_emplace({field, pk});
      if (added) {
        it->second.last_write = now;
        ++adopted;
      }
    }
    query.cursor = page.next_cursor;
  } while (!query.cursor.empty());
  return adopted;
}

StatusOr<MaintainStats> HotCollection::Maintain() {
  MaintainStats stats;
  SHOAL_ASSIGN_OR_RETURN(auto schema, CurrentSchema());
  if (schema->empty()) return stats;
  const transport::Micros now = clock_();
  bool adopt = false;
  {
    std::lock_guard lock(mu_);
    adopt = !adopted_at_.has_value() || now - *adopted_at_ >= kAdoptEvery;
    if (adopt) adopted_at_ = now;
  }
  if (adopt) {
    auto adopted = AdoptGrownKeys(*schema, now);
    if (adopted.ok()) stats.adopted = *adopted;
  }
  std::vector<std::pair<std::string, std::string>> keys;
  {
    std::lock_guard lock(mu_);
    for (auto it = activity_.begin(); it != activity_.end();) {
      if (now - it->second.last_write > kMaintainFor) {
        it = activity_.erase(it);
      } else {
        keys.push_back(it->first);
        ++it;
      }
    }
  }
  Status first_error;
  for (const auto& [field, pk] : keys) {
    const FieldSpec* spec = schema->Find(field);
    if (spec == nullptr) continue;
    if (spec->kind == FieldKind::kDynamic) {
      {
        std::lock_guard lock(mu_);
        auto& a = activity_[{field, pk}];
        if (!a.dirty) continue;
        a.dirty = false;
      }
      Status compacted = fields_->Compact(*spec, pk);
      if (compacted.ok()) {
        ++stats.compacted;
      } else if (first_error.ok()) {
        first_error = compacted;
      }
    } else if (spec->kind == FieldKind::kAuto) {
      auto shrunk = MaybeShrink(*spec, pk, now);
      if (shrunk.ok() && *shrunk) ++stats.shrunk;
      if (!shrunk.ok() && first_error.ok()) first_error = shrunk.status();
    }
  }
  if (!first_error.ok()) return first_error;
  return stats;
}

Status HotCollection::PutMember(std::string_view pk, std::string_view field,
                                std::string_view member, std::string_view json) {
  SHOAL_ASSIGN_OR_RETURN(FieldSpec spec, SpecOf(field));
  SHOAL_ASSIGN_OR_RETURN(Value document, ParseJson(json, "the member"));
  return groups_->Put(spec, pk, member, document);
}

Status HotCollection::RemoveMember(std::string_view pk, std::string_view field,
                                   std::string_view member) {
  SHOAL_ASSIGN_OR_RETURN(FieldSpec spec, SpecOf(field));
  return groups_->Remove(spec, pk, member);
}

StatusOr<std::pair<FieldKind, FieldLayout>> HotCollection::Describe(std::string_view pk,
                                                                    std::string_view field) {
  SHOAL_ASSIGN_OR_RETURN(FieldSpec spec, SpecOf(field));
  if (spec.kind == FieldKind::kEntityGroup) {
    SHOAL_ASSIGN_OR_RETURN(FieldLayout layout, groups_->Describe(spec, pk));
    return std::make_pair(spec.kind, layout);
  }
  SHOAL_ASSIGN_OR_RETURN(FieldLayout layout, fields_->Describe(spec, pk));
  return std::make_pair(spec.kind, layout);
}

Status HotCollection::Reshard(std::string_view pk, std::string_view field, uint32_t shards) {
  SHOAL_ASSIGN_OR_RETURN(FieldSpec spec, SpecOf(field));
  return fields_->Resize(spec, pk, shards);
}

Status HotCollection::Compact(std::string_view pk) {
  SHOAL_ASSIGN_OR_RETURN(auto schema, CurrentSchema());
  for (const auto& [field, spec] : schema->fields()) {
    if (spec.kind == FieldKind::kEntityGroup) continue;
    SHOAL_RETURN_IF_ERROR(fields_->Compact(spec, pk));
  }
  return OkStatus();
}

}  // namespace shoal::hotspot
