#pragma once

// ReplicaStreamQueue: the writes a primary sends to one backup, in order, over one stream per
// (primary, backup) pair (docs/design/replication.md §3 step 4). WINDOW 1: one message is in
// flight at a time; meanwhile the queue grows, so the next message carries every entry queued
// since, of every bucket the two nodes share, up to the limits, and the batch size follows the
// load. A message that failed is sent again from its first entry (the backup skips what it
// already holds: one (term, rseq) is one write). Entries of one bucket keep their order.
//
// Thread-safe (one mutex); the sender polls.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/storage/replica_position.h"

namespace shoal::node {

struct StreamLimits {
  size_t max_writes = 1000;      // entries per message
  size_t max_bytes = 16u << 20;  // document bytes per message (the first entry always goes)
};

// Key and body bytes of an entry, as a message carries them.
[[nodiscard]] size_t EntryBytes(const storage::ReplicatedEntry& entry);

class ReplicaStreamQueue {
 public:
  explicit ReplicaStreamQueue(StreamLimits limits = {}) : limits_(limits) {}

  void Push(storage::ReplicatedEntry entry);
  // The entries of the next message, now marked in flight and sent at `now`; none while a
  // message is in flight, or while nothing is queued unless `keepalive` (an empty message).
  [[nodiscard]] std::optional<std::vector<storage::ReplicatedEntry>> Take(int64_t now,
                                                                          bool keepalive = false);
  // The message in flight was answered: its entries leave the queue.
  void Delivered();
  // The message in flight was not answered: its entries go back to the front, in order.
  void Failed();
  // Drops every entry of `bucket`, queued or in flight (the backup left its configuration).
  void DropBucket(BucketId bucket);

  [[nodiscard]] size_t queued() const;
  [[nodiscard]] bool in_flight() const;

  // The backup answered a message at `now`.
  void Answered(int64_t now);
  // The backup answered the message in flight with an error (a full disk, say): it is alive but
  // takes nothing; a later answer clears it. Call Failed() too.
  void Refused(Status why);
  // The backup's refusal since its last answer, if any: why it counts as silent.
  [[nodiscard]] std::optional<Status> refusal() const;
  // When the latest message was sent, and when the backup last answered one (`start` until it
  // answers the first): the sender's keepalive and silence clocks.
  [[nodiscard]] int64_t last_sent() const;
  [[nodiscard]] int64_t last_answer(int64_t start) const;

 private:
  const StreamLimits limits_;
  mutable absl::Mutex mu_;
  std::deque<storage::ReplicatedEntry> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<storage::ReplicatedEntry> flight_ ABSL_GUARDED_BY(mu_);
  bool in_flight_ ABSL_GUARDED_BY(mu_) = false;
  int64_t last_sent_ ABSL_GUARDED_BY(mu_) = INT64_MIN / 2;
  std::optional<int64_t> last_answer_ ABSL_GUARDED_BY(mu_);
  std::optional<Status> refusal_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal::node
