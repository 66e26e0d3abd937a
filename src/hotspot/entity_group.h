#pragma once

// EntityGroups: entity-group sharding (paper 003 §2.3). The members of one document's group
// (e.g. the responses to a question) are spread over `shards` sub-group documents instead of
// one, so that concurrent additions to a hot group rarely touch the same document; a read is
// the union of the sub-groups.
//
// A member lives in exactly one sub-group, chosen by a hash of its key, so that replacing or
// removing it touches one document. Each change is a read and a CompareAndSet of that
// sub-group, retried on conflict: atomic per member. Across members there is no atomicity (the
// paper's trade-off: "at the cost of making certain atomic updates impossible"), and a read
// collects the sub-groups one by one (the same guarantee as ReadMode::kLatest of sharded
// fields). Limits: member keys are UTF-8, 1 to kMaxMemberKeyBytes bytes; a sub-group is one
// document, so its members together stay under the 1 MiB body limit.
//
// Thread-safety: thread-safe; calls must come from runtime tasks (any thread on ThreadRuntime).

#include <cstdint>
#include <string>
#include <string_view>

#include "src/client/client.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/hotspot/field_spec.h"
#include "src/hotspot/sharded_field.h"

namespace shoal::hotspot {

inline constexpr size_t kMaxMemberKeyBytes = 1024;

class EntityGroups {
 public:
  EntityGroups(client::Client& client, CollectionId cells) : client_(client), cells_(cells) {}

  // Adds or replaces `member` (a JSON object) in `pk`'s group `spec.field`.
  [[nodiscard]] Status Put(const FieldSpec& spec, std::string_view pk, std::string_view member,
                           const Value& document);
  // kNotFound if the group has no such member.
  [[nodiscard]] Status Remove(const FieldSpec& spec, std::string_view pk, std::string_view member);
  // The union of the sub-groups: an object from member key to member document.
  [[nodiscard]] StatusOr<Value> Read(const FieldSpec& spec, std::string_view pk);
  [[nodiscard]] Status Reset(const FieldSpec& spec, std::string_view pk);
  [[nodiscard]] StatusOr<FieldLayout> Describe(const FieldSpec& spec, std::string_view pk);

 private:
  // Read-modify-write of the sub-group that holds `member`; `edit` returns whether it changed.
  [[nodiscard]] Status Edit(const FieldSpec& spec, std::string_view pk, std::string_view member,
                            const std::function<StatusOr<bool>(Value& members)>& edit);

  client::Client& client_;
  const CollectionId cells_;
};

// The key of sub-group `index` of `pk`'s group `field` in the hidden collection.
[[nodiscard]] std::string GroupKey(std::string_view pk, std::string_view field, uint32_t index);

}  // namespace shoal::hotspot
