#pragma once

// Coalescer: sends the single-key gets and writes that concurrent threads of one Client address
// to one node as batches, so that under load one RPC carries many operations (adaptive batching,
// like a group commit: no timer, no linger). docs/design/network.md, "Coalescing".
//
// Per (node, kind) lane, kind = write or get:
//   - an operation that finds no call of its lane in flight goes out at once as an ordinary
//     single call (no added latency at low load);
//   - while a call is in flight, later operations queue; when it returns, the oldest queued
//     operation's thread sends the queue's head as ONE batch (BatchWriteRequest or
//     BatchGetRequest, within `options` and the limits of transport::ValidateBatch /
//     ValidateBatchGet), at the largest epoch of its operations, and hands each waiting thread
//     the result of its own slot as the Response a single call would have returned (WRONG_SHARD
//     slots carry the batch's route); a batch of one is sent as a single call.
// Invariants:
//   - at most one call per lane is in flight; every queued operation is sent by the first
//     call that follows the one it queued behind (FIFO up to the batch limits), so none starves;
//   - the caller sees exactly Runtime::Call's contract for its own request: kUnavailable only
//     when the request was certainly not sent, kDeadlineExceeded when it may have been handled,
//     kCancelled when the process stopped; a transport error of a batch is the error of each of
//     its operations;
//   - no operation waits longer than `timeout` after its Call began: one still queued then
//     leaves the queue unsent (kUnavailable); one in a batch in flight returns
//     kDeadlineExceeded; a batch's own deadline is the earliest of its operations';
//   - a thread has at most one operation here (Call blocks), so one thread's operations are
//     never reordered; operations of different threads are concurrent and may go in any order;
//   - requests other than a WriteRequest or GetRequest without via_move (and, for a get,
//     without include_tombstones) are passed to Runtime::Call unchanged.
//
// Thread-safety: Call may run on many threads at once. A queued caller blocks its thread on a
// condition variable, which Runtime rule 2 forbids in the deterministic simulation: use the
// Coalescer only on runtimes whose tasks are OS threads (GrpcRuntime, ThreadRuntime).

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/client/batch_slots.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/transport/messages.h"
#include "src/transport/runtime.h"

namespace shoal::client {

// Batch limits, each clamped to the transport's (kMaxBatchWrites, kMaxBatchBytes,
// kMaxBatchGets); at least one operation always goes, whatever its size.
struct CoalescerOptions {
  size_t max_batch_writes = transport::kMaxBatchWrites;
  size_t max_batch_bytes = transport::kMaxBatchBytes;  // keys plus bodies of a write batch
  size_t max_batch_gets = transport::kMaxBatchGets;
};

struct CoalescerCounters {
  uint64_t single_calls = 0;        // calls that carried one operation
  uint64_t batch_calls = 0;         // calls that carried several
  uint64_t batched_operations = 0;  // operations carried by batch_calls
  uint64_t expired_in_queue = 0;    // operations whose deadline passed before they were sent
  uint64_t queued = 0;              // operations waiting in a queue now (a gauge)
};

class Coalescer {
 public:
  explicit Coalescer(transport::Runtime& runtime, const CoalescerOptions& options = {});
  ~Coalescer();
  Coalescer(const Coalescer&) = delete;
  Coalescer& operator=(const Coalescer&) = delete;

  // Sends `request` to `node` (alone or in a batch) and returns its own response, under
  // Runtime::Call's contract (above).
  [[nodiscard]] StatusOr<transport::Response> Call(NodeId node, transport::Request request,
                                                   transport::Micros timeout);

  [[nodiscard]] CoalescerCounters counters() const;

 private:
  struct Op;
  struct Lane;
  using LaneKey = std::pair<uint32_t, BatchKind>;

  // Sends `ops` (taken from one lane, sent = true) as one call and returns each one's result.
  [[nodiscard]] std::vector<StatusOr<transport::Response>> Send(
      NodeId node, BatchKind kind, const std::vector<std::shared_ptr<Op>>& ops);
  // The lane's call ended: the oldest queued operation's thread sends next.
  void PassOnLocked(Lane& lane) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the batch at the head of `lane`.
  [[nodiscard]] std::vector<std::shared_ptr<Op>> TakeBatchLocked(Lane& lane, BatchKind kind) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  transport::Runtime& runtime_;
  const CoalescerOptions options_;
  // Guards lanes_ and counters_, and the fields of every Op and Lane they hold.
  mutable absl::Mutex mu_;
  std::map<LaneKey, Lane> lanes_ ABSL_GUARDED_BY(mu_);
  CoalescerCounters counters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal::client
