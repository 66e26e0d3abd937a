#include "src/hotspot/entity_group.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "src/common/point.h"

namespace shoal::hotspot {
namespace {

constexpr int kMaxAttempts = 256;
constexpr uint64_t kGroupHashSeed = 0x9e3779b97f4a7c15ull;

[[nodiscard]] Status CheckMember(std::string_view member) {
  if (member.empty() || member.size() > kMaxMemberKeyBytes ||
      !simdjson::validate_utf8(member.data(), member.size())) {
    return InvalidArgumentError(
        fmt::format("a group member key is UTF-8 of 1 to {} bytes", kMaxMemberKeyBytes));
  }
  return OkStatus();
}

[[nodiscard]] Status CheckGroup(const FieldSpec& spec) {
  if (spec.kind != FieldKind::kEntityGroup) {
    return InvalidArgumentError(fmt::format("field \"{}\" is not an entity group", spec.field));
  }
  return OkStatus();
}

[[nodiscard]] uint32_t GroupOf(const FieldSpec& spec, std::string_view member) {
  return static_cast<uint32_t>(Hash64(member, kGroupHashSeed) % spec.shards);
}

}  // namespace

std::string GroupKey(std::string_view pk, std::string_view field, uint32_t index) {
  std::string key(pk);
  key += '\0';
  key += field;
  key += '\0';
  key += fmt::format("g{}", index);
  return key;
}

Status EntityGroups::Edit(const FieldSpec& spec, std::string_view pk, std::string_view member,
                          const std::function<StatusOr<bool>(Value& members)>& edit) {
  SHOAL_RETURN_IF_ERROR(CheckGroup(spec));
  SHOAL_RETURN_IF_ERROR(CheckMember(member));
  const std::string key = GroupKey(pk, spec.field, GroupOf(spec, member));
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    auto doc = client_.Get(cells_, key);
    Value body = Value::object();
    uint64_t version = 0;
    if (doc.ok()) {
      body = Value::parse(doc->body, nullptr, /*allow_exceptions=*/false);
      if (body.is_discarded() || !body.is_object()) {
        return MakeStatus(StatusCode::kDataLoss, "an entity sub-group is not a JSON object");
      }
      version = doc->version;
    } else if (doc.status().code() != StatusCode::kNotFound) {
      return doc.status();
    }
    if (!body.contains("members") || !body["members"].is_object()) {
      body["members"] = Value::object();
    }
    SHOAL_ASSIGN_OR_RETURN(bool changed, edit(body["members"]));
    if (!changed) return OkStatus();
    Status written = version == 0
                         ? client_.Insert(cells_, key, body.dump()).status()
                         : client_.CompareAndSet(cells_, key, version, body.dump()).status();
    if (written.ok()) return OkStatus();
    // Someone else changed the sub-group first: read it again.
    if (written.code() != StatusCode::kFailedPrecondition &&
        written.code() != StatusCode::kAlreadyExists && written.code() != StatusCode::kNotFound) {
      return written;
    }
  }
  return UnavailableError(fmt::format("entity group {} of {:?}: {} conflicting attempts",
                                      spec.field, pk, kMaxAttempts));
}

Status EntityGroups::Put(const FieldSpec& spec, std::string_view pk, std::string_view member,
                         const Value& document) {
  if (!document.is_object()) return InvalidArgumentError("a group member must be a JSON object");
  return Edit(spec, pk, member, [&](Value& members) -> StatusOr<bool> {
    const std::string name(member);
    if (members.contains(name) && members[name] == document) return false;
    members[name] = document;
    return true;
  });
}

Status EntityGroups::Remove(const FieldSpec& spec, std::string_view pk, std::string_view member) {
  bool found = false;
  SHOAL_RETURN_IF_ERROR(Edit(spec, pk, member, [&](Value& members) -> StatusOr<bool> {
    found = members.erase(std::string(member)) > 0;
    return found;
  }));
  if (!found) {
    return NotFoundError(
        fmt::format("group {} of {:?} has no member {:?}", spec.field, pk, member));
  }
  return OkStatus();
}

StatusOr<Value> EntityGroups::Read(const FieldSpec& spec, std::string_view pk) {
  SHOAL_RETURN_IF_ERROR(CheckGroup(spec));
  Value all = Value::object();
  for (uint32_t g = 0; g < spec.shards; ++g) {
    auto doc = client_.Get(cells_, GroupKey(pk, spec.field, g));
    if (doc.status().code() == StatusCode::kNotFound) continue;
    if (!doc.ok()) return doc.status();
    Value body = Value::parse(doc->body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded() || !body.contains("members") || !body["members"].is_object()) {
      return MakeStatus(StatusCode::kDataLoss, "an entity sub-group lacks its members");
    }
    // Members are disjoint across sub-groups (one home each), so the union is a merge.
    for (auto& [name, member] : body["members"].items()) all[name] = std::move(member);
  }
  return all;
}

Status EntityGroups::Reset(const FieldSpec& spec, std::string_view pk) {
  SHOAL_RETURN_IF_ERROR(CheckGroup(spec));
  for (uint32_t g = 0; g < spec.shards; ++g) {
    Status gone = client_.Delete(cells_, GroupKey(pk, spec.field, g)).status();
    if (!gone.ok() && gone.code() != StatusCode::kNotFound) return gone;
  }
  return OkStatus();
}

StatusOr<FieldLayout> EntityGroups::Describe(const FieldSpec& spec, std::string_view pk) {
  SHOAL_RETURN_IF_ERROR(CheckGroup(spec));
  FieldLayout layout;
  layout.active_cells = spec.shards;
  std::vector<std::string> keys;
  for (uint32_t g = 0; g < spec.shards; ++g) keys.push_back(GroupKey(pk, spec.field, g));
  CountPlacement(client_, cells_, keys, layout);
  return layout;
}

}  // namespace shoal::hotspot
