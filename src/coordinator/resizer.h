#pragma once

// Resizer: splits and merges buckets (paper 004 §3, dynamic bucketing; docs/design/replication.md
// §7 for replicated maps).
//
// In an unreplicated map (K = 1) a split or merge is one map edit: the bucket's only copy holds
// all its data, whatever the map says of its range.
//
// In a replicated map every replica of the bucket must be equal when the edit changes its
// range. The protocol, for the buckets B (one for a split, both for a merge, which requires
// equal replica lists, so one primary P):
//   1. Claim B (one resize per bucket in this process) and take a fresh token T.
//   2. Quiesce P at the map's epoch E with T (storage_node_quiesce.cc): P queues B's writes and
//      answers once every write it ordered is on every replica.
//   3. Commit the edit, built only if the map is still at E and T was not released.
//   4. On a failure, once the stored map is known again (a commit whose outcome is unknown is
//      settled by reloading it): release T at P (best effort).
// Invariant (QUIESCED RESIZE): a split or merge of a replicated bucket commits only at the epoch
// at which its primary was quiesced, while that quiesce holds. P lifts a quiesce only for a map
// after E, at which the edit can no longer commit, or for a release of T. This class grants one
// (Release, or step 4) only while the stored map, reloaded if unknown, is still at E, and only
// for a token with no attempt in flight, both checked under the committer's edit lock: T's
// attempt is then over without a commit, and no later attempt uses T (tokens are fresh per
// attempt); a coordinator deposed under ZooKeeper can no longer commit.
//
// A coordinator that dies between 2 and 3 leaves P quiesced; P reports it in its heartbeats once
// it is older than its fence timeout, and Release lets it go.
//
// Thread-safe.

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/coordinator/map_committer.h"
#include "src/transport/messages.h"
#include "src/transport/runtime.h"

namespace shoal::coordinator {

class Resizer {
 public:
  Resizer(transport::Runtime& runtime, std::shared_ptr<MapCommitter> committer,
          transport::Micros call_timeout);

  // Splits `bucket` at `at` (default: its midpoint). kNotFound, kFailedPrecondition (moving),
  // kAborted (the map changed meanwhile: retry), kUnavailable (the primary did not quiesce).
  [[nodiscard]] Status Split(BucketId bucket, std::optional<uint64_t> at = std::nullopt);
  // Merges `left` with its right neighbour `right` (equal replica lists).
  [[nodiscard]] Status Merge(BucketId left, BucketId right);
  // Of the quiesces a node at map `epoch` reports (HeartbeatRequest::quiesced), those it may
  // lift: none while the stored map is past `epoch` (the node learns it first).
  [[nodiscard]] std::vector<transport::QuiescedBucket> Release(
      MapEpoch epoch, const std::vector<transport::QuiescedBucket>& quiesced);

 private:
  [[nodiscard]] Status Resize(const std::vector<BucketId>& buckets,
                              const MapCommitter::EditBuilder& build);
  // The stored map, reloaded if the last commit's outcome is unknown, under the edit lock.
  [[nodiscard]] StatusOr<cluster::ShardMapPtr> KnownMap();

  transport::Runtime& runtime_;
  const std::shared_ptr<MapCommitter> committer_;
  const transport::Micros call_timeout_;

  absl::Mutex mu_;
  std::set<BucketId> resizing_ ABSL_GUARDED_BY(mu_);
  std::set<uint64_t> active_tokens_ ABSL_GUARDED_BY(mu_);  // of the resizes in flight
  uint64_t last_token_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shoal::coordinator
