#include "src/storage/collection_name.h"

#include <fmt/format.h>

#include "src/storage/errors.h"

namespace shoal::storage {
namespace {

// A refused name is shown up to this many bytes.
constexpr size_t kShownNameBytes = 64;

bool IsLetterOrDigit(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool MayStart(char c) { return IsLetterOrDigit(c) || c == '_'; }

bool MayFollow(char c) { return IsLetterOrDigit(c) || c == '_' || c == '.' || c == '-'; }

}  // namespace

Status ValidateCollectionName(std::string_view name) {
  bool valid = !name.empty() && name.size() <= kMaxCollectionNameBytes && MayStart(name.front());
  for (size_t i = 1; valid && i < name.size(); ++i) valid = MayFollow(name[i]);
  if (valid) return OkStatus();
  const std::string_view shown = name.substr(0, kShownNameBytes);
  return StorageError(ErrorReason::kInvalidArgument,
                      fmt::format("invalid collection name {:?}{} ({} bytes): a name has 1 to {} "
                                  "bytes of letters, digits, '_', '.' and '-', and starts with a "
                                  "letter, a digit or '_' (docs/limits.md)",
                                  shown, shown.size() < name.size() ? "..." : "", name.size(),
                                  kMaxCollectionNameBytes));
}

}  // namespace shoal::storage
