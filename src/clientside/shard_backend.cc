#include "src/clientside/shard_backend.h"

#include <fmt/format.h>

namespace shoal::clientside {

std::string ShardDocument::DebugString() const {
  std::string shown = body.size() > 40 ? body.substr(0, 40) + "..." : body;
  return fmt::format("{{pk={} v={}{} {}}}", primary_key, version.value(),
                     tombstone ? " TOMBSTONE" : "", shown);
}

bool ShardCondition::Holds(const ShardDocument& stored) const {
  if (tombstone.has_value() && *tombstone != stored.tombstone) return false;
  if (version.has_value() && *version != stored.version) return false;
  return true;
}

ShardDocument ShadowRow(std::string primary_key, MapVersion version) {
  return ShardDocument{
      .primary_key = std::move(primary_key), .body = {}, .version = version, .tombstone = true};
}

}  // namespace shoal::clientside
