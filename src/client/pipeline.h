#pragma once

// Pipeline: the asynchronous counterpart of the Coalescer. Single-key gets and writes are
// submitted with a callback instead of a waiting thread, so that one thread can keep many
// operations in flight (what redis-benchmark's clients are: connections on one event loop).
// Per (node, kind) lane, kind = write or get (batch_slots.h):
//   - an operation submitted while fewer than `max_calls_in_flight` calls of its lane are in
//     flight goes out at once (alone, or with what queued before it);
//   - otherwise it queues, and the queue's head goes out as ONE batch call (BatchWriteRequest or
//     BatchGetRequest, within the limits) as soon as a call of the lane returns;
//   - a call takes at most its share of the lane's operations (queued plus in flight, divided by
//     max_calls_in_flight, rounded up), so that N operations in flight settle into calls of about
//     N / max_calls_in_flight that overlap, instead of one large call and one of a single
//     operation;
//   - operations submitted by callbacks while results are being delivered are sent together
//     when the delivery ends, so a closed loop of N operations settles into batches of N rather
//     than a call each.
// Invariants:
//   - every submitted operation's `done` runs exactly once, with exactly Runtime::Call's
//     contract for its own request: kUnavailable only when the request was certainly not sent,
//     kDeadlineExceeded when it may have been handled, kCancelled when the process stopped;
//     WRONG_SHARD slots carry the batch's route (batch_slots.h);
//   - lanes are FIFO up to the batch limits, so no operation starves; an operation still queued
//     when its deadline passes leaves unsent with kUnavailable; a batch's deadline is the
//     earliest of its operations';
//   - deliveries never nest: a `done` that submits, or a call that fails at once, adds to the
//     delivery running on its thread (a trampoline), so a loop that resubmits from its callback
//     never grows the stack;
//   - operations in flight at once are concurrent: they may be applied in any order.
// Where `done` runs: on the thread that completed the call (a transport thread: it must not
// block), or on the submitting thread when the call fails before it is sent.
//
// Thread-safety: Submit may run on many threads at once. The destructor requires that every
// `done` has run (the Client waits for its operations first); it then waits for the calls'
// completions, which may still be finishing their delivery.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/client/batch_slots.h"
#include "src/client/coalescer.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/transport/messages.h"
#include "src/transport/runtime.h"

namespace shoal::client {

struct PipelineOptions {
  CoalescerOptions limits;  // batch limits, as the Coalescer's
  // Calls of one lane in flight at once (>= 1). One measured best at 16 operations in flight
  // (docs/results/network.md): each call then carries all of them.
  size_t max_calls_in_flight = 1;
};

struct PipelineCounters {
  uint64_t single_calls = 0;
  uint64_t batch_calls = 0;
  uint64_t batched_operations = 0;
  uint64_t expired_in_queue = 0;
};

class Pipeline {
 public:
  using Done = std::function<void(StatusOr<transport::Response>)>;

  explicit Pipeline(transport::Runtime& runtime, const PipelineOptions& options = {});
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Sends `request` to `node` (alone or in a batch) and calls `done` with its own response.
  void Submit(NodeId node, transport::Request request, transport::Micros timeout, Done done);

  [[nodiscard]] PipelineCounters counters() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Op {
    transport::Request request;
    Clock::time_point deadline;
    Done done;
  };
  struct Lane {
    size_t in_flight = 0;      // calls
    size_t ops_in_flight = 0;  // operations those calls carry
    std::deque<Op> queue;
  };
  using LaneKey = std::pair<uint32_t, BatchKind>;
  struct Batch {
    NodeId node;
    BatchKind kind;
    std::vector<Op> ops;
  };
  using Result = std::pair<Done, StatusOr<transport::Response>>;
  // The delivery running on a thread (thread_local; see the trampoline invariant).
  struct Delivery;

  // Takes what `lane` may send now, and the queued operations that expired.
  void TakeLocked(const LaneKey& key, Lane& lane, std::vector<Batch>* batches,
                  std::vector<Result>* expired) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends one batch; its results are delivered when the call returns.
  void Send(Batch batch);
  // A call of lane `key` returned with `results`: deliver them, then send what the lane may.
  void Returned(const LaneKey& key, std::vector<Result> results);
  // Runs `results` and then the lanes in `flush` until nothing is left, as the thread's delivery
  // (or hands them to the delivery already running on this thread).
  void Deliver(std::vector<Result> results, std::vector<LaneKey> flush);
  // Sends what lane `key` may send now; expired operations go to `expired`.
  void Flush(const LaneKey& key, std::vector<Result>* expired);
  // Brackets a call from before CallAsync to the end of its completion.
  void CallRunning();
  void CallEnded();

  transport::Runtime& runtime_;
  const PipelineOptions options_;
  mutable absl::Mutex mu_;
  std::map<LaneKey, Lane> lanes_ ABSL_GUARDED_BY(mu_);
  PipelineCounters counters_ ABSL_GUARDED_BY(mu_);
  size_t calls_running_ ABSL_GUARDED_BY(mu_) = 0;
  absl::CondVar idle_;  // calls_running_ became 0
};

}  // namespace shoal::client
