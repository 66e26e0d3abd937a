#include "src/hotspot/field_spec.h"

#include <fmt/format.h>

#include <set>

namespace shoal::hotspot {
namespace {

[[nodiscard]] Status Bad(std::string_view field, std::string_view what) {
  return InvalidArgumentError(fmt::format("sharded field \"{}\": {}", field, what));
}

[[nodiscard]] StatusOr<uint32_t> CountIn(const Value& v, std::string_view field,
                                         std::string_view name, uint32_t max) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
    return Bad(field, fmt::format("\"{}\" must be an integer from 1 to {}", name, max));
  }
  const uint64_t n = v.get<uint64_t>();
  if (n < 1 || n > max) {
    return Bad(field, fmt::format("\"{}\" must be an integer from 1 to {}", name, max));
  }
  return static_cast<uint32_t>(n);
}

[[nodiscard]] StatusOr<double> RateIn(const Value& v, std::string_view field,
                                      std::string_view name) {
  if (!v.is_number() || v.get<double>() < 0) {
    return Bad(field, fmt::format("\"{}\" must be a number >= 0", name));
  }
  return v.get<double>();
}

StatusOr<FieldSpec> ParseField(const std::string& field, const Value& decl,
                               const FoldRegistry& registry) {
  if (field.empty() || field.size() > 256) return Bad(field, "a name has 1 to 256 bytes");
  if (!decl.is_object()) return Bad(field, "the declaration must be an object");
  static const std::set<std::string, std::less<>> kKnown = {"fold",
                                                            "neutral",
                                                            "shards",
                                                            "min_shards",
                                                            "max_shards",
                                                            "grow_conflicts_per_s",
                                                            "shrink_updates_per_s",
                                                            "group"};
  for (const auto& [key, value] : decl.items()) {
    if (!kKnown.contains(key)) return Bad(field, fmt::format("unknown option \"{}\"", key));
  }
  FieldSpec spec;
  spec.field = field;
  if (decl.contains("group")) {
    if (decl.size() != 1) return Bad(field, "an entity group takes only \"group\"");
    spec.kind = FieldKind::kEntityGroup;
    SHOAL_ASSIGN_OR_RETURN(spec.shards, CountIn(decl["group"], field, "group", kMaxGroups));
    return spec;
  }
  if (!decl.contains("fold") || !decl["fold"].is_string()) {
    return Bad(field, "\"fold\" (a fold name) is required");
  }
  SHOAL_ASSIGN_OR_RETURN(spec.fold, registry.Find(decl["fold"].get<std::string>()));
  spec.neutral = decl.contains("neutral") ? decl["neutral"] : spec.fold->neutral();
  // The declared neutral must be the fold's identity on itself and on the fold's own neutral.
  SHOAL_ASSIGN_OR_RETURN(Value twice, spec.fold->Combine(spec.neutral, spec.neutral));
  SHOAL_ASSIGN_OR_RETURN(Value with_own, spec.fold->Combine(spec.neutral, spec.fold->neutral()));
  if (twice != spec.neutral || with_own != spec.fold->neutral()) {
    return Bad(field, fmt::format("{} is not a neutral element of fold {}", spec.neutral.dump(),
                                  spec.fold->name()));
  }
  if (!decl.contains("shards")) {
    spec.kind = FieldKind::kDynamic;
    spec.shards = 0;
  } else if (decl["shards"] == "auto") {
    spec.kind = FieldKind::kAuto;
    if (decl.contains("min_shards")) {
      SHOAL_ASSIGN_OR_RETURN(spec.policy.min_shards,
                             CountIn(decl["min_shards"], field, "min_shards", kMaxShards));
    }
    if (decl.contains("max_shards")) {
      SHOAL_ASSIGN_OR_RETURN(spec.policy.max_shards,
                             CountIn(decl["max_shards"], field, "max_shards", kMaxShards));
    }
    if (spec.policy.min_shards > spec.policy.max_shards) {
      return Bad(field, "min_shards must not exceed max_shards");
    }
    if (decl.contains("grow_conflicts_per_s")) {
      SHOAL_ASSIGN_OR_RETURN(spec.policy.grow_conflicts_per_s,
                             RateIn(decl["grow_conflicts_per_s"], field, "grow_conflicts_per_s"));
    }
    if (decl.contains("shrink_updates_per_s")) {
      SHOAL_ASSIGN_OR_RETURN(spec.policy.shrink_updates_per_s,
                             RateIn(decl["shrink_updates_per_s"], field, "shrink_updates_per_s"));
    }
    spec.shards = spec.policy.min_shards;
  } else {
    SHOAL_ASSIGN_OR_RETURN(spec.shards, CountIn(decl["shards"], field, "shards", kMaxShards));
    spec.kind = FieldKind::kStatic;
  }
  if (spec.kind != FieldKind::kAuto &&
      (decl.contains("min_shards") || decl.contains("max_shards") ||
       decl.contains("grow_conflicts_per_s") || decl.contains("shrink_updates_per_s"))) {
    return Bad(field, "bounds and thresholds need \"shards\": \"auto\"");
  }
  return spec;
}

}  // namespace

std::string_view ToString(FieldKind kind) {
  switch (kind) {
    case FieldKind::kStatic:
      return "static";
    case FieldKind::kDynamic:
      return "dynamic";
    case FieldKind::kAuto:
      return "auto";
    case FieldKind::kEntityGroup:
      return "entity_group";
  }
  return "?";
}

Value FieldSpec::ToJson() const {
  Value out = Value::object();
  switch (kind) {
    case FieldKind::kEntityGroup:
      out["group"] = shards;
      return out;
    case FieldKind::kStatic:
      out["shards"] = shards;
      break;
    case FieldKind::kDynamic:
      break;
    case FieldKind::kAuto:
      out["shards"] = "auto";
      out["min_shards"] = policy.min_shards;
      out["max_shards"] = policy.max_shards;
      out["grow_conflicts_per_s"] = policy.grow_conflicts_per_s;
      out["shrink_updates_per_s"] = policy.shrink_updates_per_s;
      break;
  }
  out["fold"] = fold->name();
  out["neutral"] = neutral;
  return out;
}

StatusOr<CollectionSchema> CollectionSchema::Parse(std::string_view json,
                                                   const FoldRegistry& registry) {
  Value parsed = Value::parse(json, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return InvalidArgumentError("a schema must be valid JSON");
  return FromJson(parsed, registry);
}

StatusOr<CollectionSchema> CollectionSchema::FromJson(const Value& json,
                                                      const FoldRegistry& registry) {
  if (!json.is_object()) return InvalidArgumentError("a schema must be a JSON object");
  if (json.size() > kMaxSchemaFields) {
    return InvalidArgumentError(
        fmt::format("a schema declares at most {} fields", kMaxSchemaFields));
  }
  CollectionSchema schema;
  for (const auto& [field, decl] : json.items()) {
    SHOAL_ASSIGN_OR_RETURN(FieldSpec spec, ParseField(field, decl, registry));
    schema.fields_.emplace(field, std::move(spec));
  }
  return schema;
}

const FieldSpec* CollectionSchema::Find(std::string_view field) const {
  auto it = fields_.find(field);
  return it == fields_.end() ? nullptr : &it->second;
}

Value CollectionSchema::ToJson() const {
  Value out = Value::object();
  for (const auto& [field, spec] : fields_) out[field] = spec.ToJson();
  return out;
}

Status CollectionSchema::Merge(const CollectionSchema& other) {
  for (const auto& [field, spec] : other.fields_) {
    if (const FieldSpec* old = Find(field); old != nullptr) {
      const bool in_place = [](FieldKind k) {
        return k == FieldKind::kStatic || k == FieldKind::kAuto;
      }(old->kind) && (spec.kind == FieldKind::kStatic || spec.kind == FieldKind::kAuto);
      const bool same_kind = old->kind == spec.kind || in_place;
      const bool same_fold = (old->fold == nullptr) == (spec.fold == nullptr) &&
                             (old->fold == nullptr || old->fold->name() == spec.fold->name());
      const bool same_groups = old->kind != FieldKind::kEntityGroup || old->shards == spec.shards;
      if (!same_kind || !same_fold || !same_groups || old->neutral != spec.neutral) {
        return FailedPreconditionError(fmt::format(
            "field \"{}\" is declared {} with fold {}: its kind, fold, neutral and group count "
            "cannot change",
            field, ToString(old->kind), old->fold ? old->fold->name() : "none"));
      }
    }
  }
  auto merged = fields_;
  for (const auto& [field, spec] : other.fields_) merged[field] = spec;
  if (merged.size() > kMaxSchemaFields) {
    return InvalidArgumentError(
        fmt::format("a schema declares at most {} fields", kMaxSchemaFields));
  }
  fields_ = std::move(merged);
  return OkStatus();
}

}  // namespace shoal::hotspot
