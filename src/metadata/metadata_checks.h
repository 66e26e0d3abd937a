#pragma once

// The argument checks and error wording every MetadataStore implementation shares, so that the
// embedded and the ZooKeeper store refuse the same calls with the same messages (the limits are
// in metadata_store.h). Stateless; thread-safe.

#include <cstdint>
#include <string>
#include <string_view>

#include "src/common/status.h"

namespace shoal::metadata {

// kInvalidArgument unless the key has 1 to kMaxKeyBytes bytes.
[[nodiscard]] Status CheckKey(std::string_view key);
// kResourceExhausted if the value has more than kMaxValueBytes bytes.
[[nodiscard]] Status CheckValue(std::string_view key, std::string_view value);
// An expected version as error messages name it: "any", "absent" or "version N".
[[nodiscard]] std::string ExpectedName(uint64_t expected);

}  // namespace shoal::metadata
