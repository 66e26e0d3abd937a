#pragma once

// MapCommitter: the one writer of the cluster's durable state (the ShardMap, the next move id
// and the collection catalog) and its publisher: LevelDB's LogAndApply role. An edit is built
// against the current map, applied, stored with its move-log record in one metadata Commit
// (the commit point), installed in memory and then published to the observer and every live
// node.
//
// Durable state (MetadataStore keys):
//   cluster/map                  EncodeShardMap of the current map
//   cluster/next_move            the next MoveId (ids are never reused)
//   cluster/collections/<name>   the collection id
//   cluster/id                   the cluster's identity: 16 hex digits, made once by the first
//                                Load, never changed (ClusterState::cluster_id)
//
// Invariants:
//   - edits are serialized (edit_mu_): each is built on the map the previous one stored, and
//     the map in memory is the one last stored by this incarnation;
//   - a Commit that failed with kUnavailable may have been applied: the next edit re-reads the
//     map and next_move before building on them (map_unknown_);
//   - a node that misses a publication learns the epoch from its next heartbeat's answer.
//
// Thread-safety: thread-safe. edit_mu_ is held across the metadata Commit (never across a
// runtime yield); mu_ guards the in-memory state and is never held while calling out.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/cluster/shard_map.h"
#include "src/cluster/shard_map_edit.h"
#include "src/common/status.h"
#include "src/coordinator/membership.h"
#include "src/metadata/metadata_store.h"
#include "src/storage/bucket_values.h"
#include "src/transport/messages.h"
#include "src/transport/runtime.h"

namespace shoal::coordinator {

class MapCommitter {
 public:
  // Called with the state after each committed edit or new collection, on the task that made
  // it (and at once with the current state). It must not block.
  using StateObserver = std::function<void(const transport::ClusterState&)>;
  // Adds the ops of an edit to `edit` against `map`; an error stores nothing.
  using EditBuilder = std::function<Status(const cluster::ShardMap&, cluster::ShardMapEdit*)>;

  MapCommitter(transport::Runtime& runtime, metadata::MetadataStore& store,
               std::shared_ptr<const Membership> membership, transport::Micros call_timeout);

  // Reads the stored map, next move id, collections and cluster id (at open); makes the
  // cluster id if none is stored.
  [[nodiscard]] Status Load();
  // Creates the first map (epoch 1) unless one is stored. min_in_sync 0: a majority of K.
  [[nodiscard]] Status Initialize(const std::vector<NodeId>& nodes, uint32_t bucket_count,
                                  uint32_t replication_factor = 1, uint32_t min_in_sync = 0);

  // Builds an edit with `build` against the current map, applies it and stores the result with
  // `log_key` = `log_value` in one metadata Commit; then publishes the new map. An empty edit
  // stores nothing and returns the current map.
  [[nodiscard]] StatusOr<cluster::ShardMapPtr> CommitEdit(
      const EditBuilder& build, std::optional<std::string> log_key = std::nullopt,
      std::string log_value = {});
  // The collection `name`, recorded and published if it does not exist. A name that breaks
  // storage::ValidateCollectionName is kInvalidArgument and records nothing.
  [[nodiscard]] StatusOr<storage::CollectionSpec> CreateCollection(std::string_view name);

  [[nodiscard]] cluster::ShardMapPtr map() const;
  [[nodiscard]] transport::ClusterState State() const;
  [[nodiscard]] uint64_t cluster_id() const;
  // The id the next BEGIN takes; call from an EditBuilder (edits are serialized).
  [[nodiscard]] MoveId NextMoveId() const;
  void SetObserver(StateObserver observer);

 private:
  [[nodiscard]] Status ReloadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(edit_mu_);
  void Publish(const cluster::ShardMapPtr& map);

  transport::Runtime& runtime_;
  metadata::MetadataStore& store_;
  const std::shared_ptr<const Membership> membership_;
  const transport::Micros call_timeout_;

  absl::Mutex edit_mu_;  // serializes edits and collection creation
  bool map_unknown_ ABSL_GUARDED_BY(edit_mu_) = false;

  mutable absl::Mutex mu_ ABSL_ACQUIRED_AFTER(edit_mu_);
  cluster::ShardMapPtr map_ ABSL_GUARDED_BY(mu_);
  uint64_t map_version_ ABSL_GUARDED_BY(mu_) = 0;  // metadata version of cluster/map
  uint64_t next_move_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t cluster_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<storage::CollectionSpec> collections_ ABSL_GUARDED_BY(mu_);
  StateObserver observer_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal::coordinator
