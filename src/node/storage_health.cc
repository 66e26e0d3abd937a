#include "src/node/storage_health.h"

#include <fmt/format.h>

#include <string_view>

#include "src/storage/errors.h"

namespace shoal::node {

std::optional<Status> StorageFailure(const storage::BucketStore& store, int64_t now_nanos,
                                     const StorageHealthOptions& options) {
  if (std::optional<Status> failure = store.EngineFailure(); failure.has_value()) return failure;
  const int64_t limit =
      std::chrono::duration_cast<std::chrono::nanoseconds>(options.max_sync_duration).count();
  if (limit <= 0) return std::nullopt;
  const auto stalled = [&](int64_t since, std::string_view what) -> std::optional<Status> {
    if (since == 0 || now_nanos - since < limit) return std::nullopt;
    return storage::StorageError(
        storage::ErrorReason::kIo,
        fmt::format("{} under {} has not returned for {} ms (the disk stalled; the limit is {} "
                    "ms)",
                    what, store.options().path, (now_nanos - since) / 1'000'000,
                    options.max_sync_duration.count()));
  };
  if (auto failure = stalled(store.sync_running_since_nanos(), "a WAL sync")) return failure;
  return stalled(store.write_waiting_since_nanos(), "a write");
}

std::optional<Status> StorageDirectoryFailure(const storage::BucketStore& store) {
  Status status = store.CheckDirectory();
  if (status.ok()) return std::nullopt;
  return status;
}

}  // namespace shoal::node
