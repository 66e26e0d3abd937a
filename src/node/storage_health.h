#pragma once

// StorageHealth: whether a node's store can still be trusted with writes, for the node's
// process to stop itself when it cannot (fail-stop). A node whose disk failed must not stay a
// primary that refuses every write, or a backup that holds up its primaries until it is
// removed, and it must not go on acknowledging writes into files that are gone: once its
// process stops, the cluster fails its buckets over to their other copies (K > 1,
// docs/design/replication.md §4.2) and the process that restarts it recovers what the disk
// still holds or is rebuilt (§4.6).
//
// The store cannot be trusted once
//   - its engine stopped after an I/O error other than a full disk, or cannot resume from a
//     full disk in place (storage::BucketStore::EngineFailure): PostgreSQL's fsync lesson, a
//     disk that failed a write is not retried;
//   - a WAL sync, or every engine write in flight, has not returned for `max_sync_duration`
//     (a stalled disk; CockroachDB stops a node after its storage.max_sync_duration, 20 s by
//     default): every write waits on it;
//   - its directory was removed or replaced (storage::BucketStore::CheckDirectory).
// A full disk is not a failure: the store refuses writes above its reserve and resumes in place
// (docs/design/storage.md, "A full disk").
//
// Thread-safety: the functions only read the store's thread-safe state.

#include <chrono>
#include <cstdint>
#include <optional>

#include "src/common/status.h"
#include "src/storage/bucket_store.h"

namespace shoal::node {

struct StorageHealthOptions {
  // A WAL sync, or engine writes, still waiting after this long mean the disk stalled; 0 =
  // never.
  std::chrono::milliseconds max_sync_duration{20'000};
};

// Why the store can no longer be trusted, from its state alone (no I/O, so that a hung disk
// cannot hold up the check), at `now_nanos` of the steady clock; nullopt while it can.
[[nodiscard]] std::optional<Status> StorageFailure(const storage::BucketStore& store,
                                                   int64_t now_nanos,
                                                   const StorageHealthOptions& options);

// Why the store's directory can no longer be trusted (it was removed or replaced); one stat.
[[nodiscard]] std::optional<Status> StorageDirectoryFailure(const storage::BucketStore& store);

}  // namespace shoal::node
