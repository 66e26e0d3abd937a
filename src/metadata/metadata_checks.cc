#include "src/metadata/metadata_checks.h"

#include <fmt/format.h>

#include "src/metadata/metadata_store.h"

namespace shoal::metadata {

Status CheckKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxKeyBytes) {
    return InvalidArgumentError(
        fmt::format("metadata store: key of {} bytes; keys are 1 to {}", key.size(), kMaxKeyBytes));
  }
  return OkStatus();
}

Status CheckValue(std::string_view key, std::string_view value) {
  if (value.size() > kMaxValueBytes) {
    return ResourceExhaustedError(
        fmt::format("metadata store: value of {:?} has {} bytes; the limit is {}", key,
                    value.size(), kMaxValueBytes));
  }
  return OkStatus();
}

std::string ExpectedName(uint64_t expected) {
  if (expected == kAnyVersion) return "any";
  if (expected == kMustNotExist) return "absent";
  return fmt::format("version {}", expected);
}

}  // namespace shoal::metadata
