// FromRocks (errors.h): kept apart so the pure part of the layer does not link the engine.

#include <fmt/format.h>
#include <rocksdb/status.h>

#include <string>

#include "src/storage/errors.h"

namespace shoal::storage {

Status FromRocks(const rocksdb::Status& status, std::string_view context) {
  if (status.ok()) return OkStatus();
  const std::string message = fmt::format("{}: {}", context, status.ToString());
  if (status.IsCorruption()) return StorageError(ErrorReason::kCorruption, message);
  if (status.IsBusy() || status.IsTryAgain() || status.IsIncomplete()) {
    return StorageError(ErrorReason::kUnavailable, message);
  }
  return StorageError(ErrorReason::kIo, message);
}

}  // namespace shoal::storage
