#pragma once

// ReplicationFloor: the floor (min_in_sync) an operator asked for that no bucket can meet yet.
// Raising K (`shoal replicas --set K`) leaves every bucket with its old number of copies until
// the balancer has built the new ones, and a floor above a bucket's copies refuses its writes
// (NOT_ENOUGH_REPLICAS) for the whole rebuild. So the change commits the floor the buckets can
// meet now (the fewest copies a bucket will have) and records the floor asked for; the
// coordinator's loop commits that floor as soon as every bucket has as many copies and nothing
// moves, whether or not the operator's command still waits, and after a coordinator failover.
//
// Durable state (MetadataStore key, written in the same metadata commit as the map edit):
//   cluster/replication_floor   "<K> <min_in_sync>" while a floor is pending, "" otherwise
//
// Invariants:
//   - a floor below the one asked for is never committed without the record that raises it
//     (one commit holds both);
//   - a record whose K is not the map's (a later change superseded it) is dropped, never
//     applied;
//   - the floor is raised only on a map where every bucket has at least that many copies and
//     none moves: raising it refuses no write.
//
// Thread-safety: thread-safe; mu_ is never held while calling out.

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/common/status.h"
#include "src/coordinator/map_committer.h"
#include "src/metadata/metadata_store.h"

namespace shoal::coordinator {

class ReplicationFloor {
 public:
  struct Setting {
    uint32_t replication_factor = 0;  // K
    uint32_t min_in_sync = 0;         // 1..K (resolved: never 0)
    friend bool operator==(const Setting&, const Setting&) = default;
  };

  ReplicationFloor(metadata::MetadataStore& store, std::shared_ptr<MapCommitter> committer);

  // Reads the stored record (at open).
  [[nodiscard]] Status Load();
  // Sets K and the floor (0: a majority of K) in one map edit: the floor asked for if every
  // bucket can meet it on the new map, else the fewest copies a bucket will have, with the
  // floor asked for recorded as pending. The caller holds the buckets (no move in flight).
  // kAborted while an ApplyIfReady runs: try again.
  [[nodiscard]] Status Commit(uint32_t replication_factor, uint32_t min_in_sync);
  // Commits the pending floor if the current map allows it (see the invariants); drops a
  // superseded record. Called by the coordinator's loop every round; does nothing while a
  // Commit runs.
  [[nodiscard]] Status ApplyIfReady();
  // The floor asked for that `map` does not have yet, if any: the record, unless another K
  // superseded it or the floor is in force (ApplyIfReady drops such a record).
  [[nodiscard]] std::optional<Setting> PendingOn(const cluster::ShardMap& map) const;

 private:
  // Whether the record `asked` still waits on `map`: same K, a floor above the map's.
  [[nodiscard]] static bool Waits(const Setting& asked, const cluster::ShardMap& map);
  [[nodiscard]] std::optional<Setting> pending() const;
  [[nodiscard]] static uint32_t FloorNow(const cluster::ShardMap& map, const Setting& asked);

  metadata::MetadataStore& store_;
  const std::shared_ptr<MapCommitter> committer_;
  // Taken without waiting (TryBegin): a map edit publishes the map, which yields to the
  // runtime, so no lock is held across it.
  [[nodiscard]] bool TryBegin();
  void End();

  mutable absl::Mutex mu_;
  // Orders Commit and ApplyIfReady, each a map edit with its record, so that the record in
  // memory is the one stored last.
  bool busy_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<Setting> pending_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal::coordinator
