#pragma once

// RecentEntries: the latest replicated writes of each bucket that this node ordered as a primary
// or applied as a backup, kept in memory so that a backup promoted by a failover can bring the
// other backups to its history: within a term the ordered stream makes every backup a prefix
// of the primary, at most one message (StreamLimits) behind it, so the winner of a failover
// holds what the others lack in its latest entries (docs/design/replication.md §4.2 step 6).
//
// Per bucket: one run of consecutive rseqs, at most kMaxEntries entries and kMaxBytes document
// bytes (the oldest leave first). An entry that does not follow the run's last one starts a new
// run. A backup lagging further behind than the run gets a gap and is rebuilt (§4.3). Lost on a
// restart, like the stream state it complements.
//
// Thread-safe (one mutex).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "src/common/ids.h"
#include "src/storage/replica_position.h"

namespace shoal::node {

class RecentEntries {
 public:
  static constexpr size_t kMaxEntries = 2000;     // two messages' worth
  static constexpr size_t kMaxBytes = 32u << 20;  // two messages' worth

  void Add(const storage::ReplicatedEntry& entry);
  // The entries of `bucket` after rseq `after`, in rseq order.
  [[nodiscard]] std::vector<storage::ReplicatedEntry> After(BucketId bucket, uint64_t after) const;
  // True when every entry of `bucket` in (after, through] is kept and none of them writes the
  // key: a read of the key depends on none of those writes.
  [[nodiscard]] bool NoneWrites(BucketId bucket, uint64_t after, uint64_t through,
                                CollectionId collection, std::string_view pk) const;
  // The lowest rseq kept for `bucket`; 0 when none is.
  [[nodiscard]] uint64_t FirstRseq(BucketId bucket) const;
  void Forget(BucketId bucket);

 private:
  struct Run {
    std::deque<storage::ReplicatedEntry> entries;
    size_t bytes = 0;
  };
  mutable absl::Mutex mu_;
  absl::flat_hash_map<BucketId, Run> runs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal::node
