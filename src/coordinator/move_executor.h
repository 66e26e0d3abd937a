#pragma once

// MoveExecutor: runs bucket moves, one task per move, and resolves the transitions no task
// runs (recovery after a restart, orphans). ARCHITECTURE.md §3, docs/design/cluster.md.
//
// Move log (MetadataStore keys moves/<id, 20 digits>): BEGIN, SWITCH, SEAL, COMMIT, DONE or
// ABORT with the bucket, source and destination, written in the same Commit as the map (BEGIN
// also on its own, so that the record exists even if nothing else is ever written).
//
// Protocols (move_executor.cc, move_switch_then_copy.cc):
//   copy-then-switch (the default; paper 004 §5): BEGIN (map: transition kCopy) -> the source
//   exports a snapshot -> the destination ingests it -> kCatchUp: the destination pulls the
//   source's later writes -> kPrepare (durable) -> the source fences and reports its last
//   sequence -> the destination catches up to it -> COMMIT (map) -> kCleanup -> the source drops
//   the range -> DONE (map without the transition).
//   switch-then-copy (pre-bootstrap of a joining node, paper 002 §5.3-5.4, paper 001 §4.2):
//   BEGIN (map: kPrepare) -> the destination takes that map -> the source fences and drains ->
//   SWITCH (map: kCopy; the destination serves through the source) -> the destination transfers
//   the bucket (apply-if-newer) -> SEAL (map: kCatchUp; the source refuses the destination's
//   writes and drains them) -> the destination catches up with the source's log since the
//   switch (or transfers again) -> COMMIT -> kCleanup -> the source drops the range -> DONE.
//
// Invariants:
//   - a destination must have checked in (Membership::CheckIn) before BEGIN;
//   - a failure of any step before COMMIT (or SWITCH) aborts the move (ABORT, the destination
//     drops its staged data); a switched move rolls forward instead, unless its destination is
//     down before the commit: then it is rolled back to its source, which holds every write
//     (cluster::CanAbort);
//   - recovery (paper 004 §5.4 cases 1-6) resolves each transition found in the map the same
//     way: finish a committed one, abort one that aborts on failure, roll a switched one
//     forward;
//   - orphans: every transition in the map is either run by a task of this incarnation (its
//     bucket is claimed) or resolved by ResolveOrphans, which the balancer loop calls every
//     round, until its outcome is stored. So a move across a metadata outage ends committed or
//     aborted once the store answers again, never half-way.
//
// Thread-safety: thread-safe; each move runs on the task that called Run or Resolve. mu_
// guards the claimed buckets only and is never held while calling out.

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/cluster/shard_map.h"
#include "src/cluster/transition.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/coordinator/coordinator_options.h"
#include "src/coordinator/map_committer.h"
#include "src/coordinator/membership.h"
#include "src/coordinator/move_progress.h"
#include "src/metadata/metadata_store.h"
#include "src/transport/messages.h"
#include "src/transport/runtime.h"

namespace shoal::coordinator {

class MoveExecutor {
 public:
  MoveExecutor(transport::Runtime& runtime, metadata::MetadataStore& store,
               std::shared_ptr<MapCommitter> committer, std::shared_ptr<Membership> membership,
               std::shared_ptr<ProgressCounters> progress, const CoordinatorOptions& options);

  // Claims `bucket` for a task of this incarnation; false when one runs it already, or when
  // `max_claims` > 0 moves run already.
  [[nodiscard]] bool Claim(BucketId bucket, size_t max_claims = 0);
  void Release(BucketId bucket);
  [[nodiscard]] size_t Claimed() const;
  [[nodiscard]] bool IsClaimed(BucketId bucket) const;

  // BEGIN, then the protocol of `mode`, to completion (or abort), on the calling task. The
  // caller holds the claim of `bucket`. `planned_bytes`: the bucket's size as planned (progress
  // only; 0 if unknown).
  [[nodiscard]] Status Run(BucketId bucket, NodeId destination, cluster::TransitionMode mode,
                           uint64_t planned_bytes);
  // The same towards `target`, the bucket's replica list after the move (primary first). With
  // K > 1 the move keeps the primary and changes one copy (docs/design/replication.md §6-7):
  // it adds a copy or replaces a backup, with the primary as the data source, always
  // copy-then-switch; handing the primary over is refused (not built). Run(destination) at
  // K > 1 adds a copy on `destination` to a bucket with fewer than K.
  [[nodiscard]] Status RunTo(BucketId bucket, std::vector<NodeId> target,
                             cluster::TransitionMode mode, uint64_t planned_bytes);
  // What recovery does with a transition found in the map: finish a committed one, abort one
  // that aborts on failure (the ABORT record says `why`), roll a switched one forward.
  [[nodiscard]] Status Resolve(BucketId bucket, const cluster::BucketTransition& transition,
                               std::string_view why);
  // Resolves every transition of the map that no task of this incarnation runs.
  [[nodiscard]] Status ResolveOrphans();

  // A call to `node`, retried `attempts` times while it fails in transit; `timeout` per
  // attempt (0: options.call_timeout).
  [[nodiscard]] StatusOr<transport::Response> CallNode(NodeId node, transport::Request request,
                                                       int attempts, transport::Micros timeout = 0);

  [[nodiscard]] transport::Runtime& runtime() { return runtime_; }
  [[nodiscard]] MapCommitter& committer() { return *committer_; }
  [[nodiscard]] const Membership& membership() const { return *membership_; }
  [[nodiscard]] ProgressCounters& progress() { return *progress_; }
  [[nodiscard]] const CoordinatorOptions& options() const { return options_; }

 private:
  transport::Runtime& runtime_;
  metadata::MetadataStore& store_;
  const std::shared_ptr<MapCommitter> committer_;
  const std::shared_ptr<Membership> membership_;
  const std::shared_ptr<ProgressCounters> progress_;
  const CoordinatorOptions options_;

  mutable absl::Mutex mu_;
  std::set<BucketId> claimed_ ABSL_GUARDED_BY(mu_);  // moves run by tasks of this incarnation
};

}  // namespace shoal::coordinator
