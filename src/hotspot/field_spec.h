#pragma once

// The declaration of a collection's sharded fields and entity groups (paper 003 §2, §3).
//
// A collection's schema is a JSON object, one member per declared field:
//   {"votes":     {"fold": "sum", "neutral": 0, "shards": 10},      static property sharding
//    "visitors":  {"fold": "count"},                                 dynamic (a cell per update)
//    "likes":     {"fold": "sum", "shards": "auto"},                 automatic shard count
//    "responses": {"group": 8}}                                      entity group over 8 groups
// "auto" takes optional bounds and thresholds:
//   {"fold": "sum", "shards": "auto", "min_shards": 1, "max_shards": 64,
//    "grow_conflicts_per_s": 5, "shrink_updates_per_s": 50}
// Field names are top-level members of the document. Limits: kMaxShards cells, kMaxGroups groups,
// kMaxSchemaFields fields per collection.
//
// Value types; thread-compatible.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "src/common/status.h"
#include "src/hotspot/fold.h"

namespace shoal::hotspot {

inline constexpr uint32_t kMaxShards = 64;
inline constexpr uint32_t kMaxGroups = 64;
inline constexpr size_t kMaxSchemaFields = 32;

enum class FieldKind : uint8_t {
  kStatic,       // a fixed number of cells, updated in place (paper 003 §2.1)
  kDynamic,      // every update inserts a new cell; a compactor folds them (paper 003 §2.2)
  kAuto,         // in-place cells whose number follows the contention (paper 003 §6)
  kEntityGroup,  // members of a group spread over several sub-groups (paper 003 §2.3)
};

[[nodiscard]] std::string_view ToString(FieldKind kind);

struct AutoPolicy {
  uint32_t min_shards = 1;
  uint32_t max_shards = kMaxShards;
  // Grow (double) when one client sees more conflicting updates per second than this.
  double grow_conflicts_per_s = 5;
  // Shrink (halve) when the field takes fewer updates per second per cell than this.
  double shrink_updates_per_s = 50;
};

struct FieldSpec {
  std::string field;
  FieldKind kind = FieldKind::kStatic;
  FoldPtr fold;         // null for kEntityGroup
  Value neutral;        // the fold's neutral unless declared
  uint32_t shards = 1;  // cells (static; initial for auto) or groups (entity group)
  AutoPolicy policy{};  // kAuto only

  [[nodiscard]] Value ToJson() const;
};

// The declared fields of one collection.
class CollectionSchema {
 public:
  // Parses a declaration (see the file comment); folds are looked up in `registry`.
  [[nodiscard]] static StatusOr<CollectionSchema> Parse(std::string_view json,
                                                        const FoldRegistry& registry);
  [[nodiscard]] static StatusOr<CollectionSchema> FromJson(const Value& json,
                                                           const FoldRegistry& registry);

  [[nodiscard]] const FieldSpec* Find(std::string_view field) const;
  [[nodiscard]] const std::map<std::string, FieldSpec, std::less<>>& fields() const {
    return fields_;
  }
  [[nodiscard]] bool empty() const { return fields_.empty(); }
  [[nodiscard]] Value ToJson() const;
  // Adds or replaces the declarations of `other`'s fields. A field's kind or fold cannot change
  // once declared (the stored cells depend on them): kFailedPrecondition.
  [[nodiscard]] Status Merge(const CollectionSchema& other);

 private:
  std::map<std::string, FieldSpec, std::less<>> fields_;
};

}  // namespace shoal::hotspot
