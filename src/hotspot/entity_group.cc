#include "src/hotspot/entity_group.h"

#include <fmt/format.h>

#include <set>

#include "src/common/point.h"

namespace shoal::hotspot {
namespace {

constexpr int kMaxAttempts = 256;
constexpr uint64_t kGroupHashSeed = 0x9e3779b97f4a7c15ull;

// RFC 3629 well-formedness (no overlongs, no surrogates, at most U+10FFFF): member keys become
// JSON object keys.
[[nodiscard]] bool IsUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t extra = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      extra = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + extra >= s.size()) return false;
    for (size_t k = 1; k <= extra; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += extra + 1;
  }
  return true;
}

[[nodiscard]] Status CheckMember(std::string_view member) {
  if (member.empty() || member.size() > kMaxMemberKeyBytes || !IsUtf8(member)) {
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
  if (const cluster::ShardMapPtr map = client_.map(); map != nullptr) {
    std::set<BucketId> buckets;
    std::set<NodeId> nodes;
    for (uint32_t g = 0; g < spec.shards; ++g) {
      const auto& bucket = map->Lookup(PointOf(cells_, GroupKey(pk, spec.field, g)));
      buckets.insert(bucket.id);
      nodes.insert(client::OwnerOf(bucket));
    }
    layout.distinct_buckets = static_cast<uint32_t>(buckets.size());
    layout.distinct_nodes = static_cast<uint32_t>(nodes.size());
  }
  return layout;
}

}  // namespace shoal::hotspot
