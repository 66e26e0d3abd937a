#pragma once

// The rule for collection names, checked wherever a name enters the cluster: the coordinator
// before it records a collection (metadata key cluster/collections/<name>), the client before it
// sends a name, and the store before it registers one.
//
// A name has 1 to kMaxCollectionNameBytes bytes of ASCII letters, digits, '_', '.' and '-', and
// starts with a letter, a digit or '_'. Names are case-sensitive. So a name is printable, fits a
// file name and a metadata key, and never reads as a command-line option or a path step ("..").

#include <cstddef>
#include <string_view>

#include "src/common/status.h"

namespace shoal::storage {

inline constexpr size_t kMaxCollectionNameBytes = 256;

// OK, or kInvalidArgument (code kInvalidArgument) showing the name and stating the rule.
[[nodiscard]] Status ValidateCollectionName(std::string_view name);

}  // namespace shoal::storage
