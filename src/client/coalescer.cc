#include "src/client/coalescer.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <optional>
#include <variant>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace shoal::client {

using transport::Address;
using transport::Request;
using transport::Response;
using Clock = std::chrono::steady_clock;

namespace {

// How often a queued caller looks whether its process was stopped (Runtime rule 3).
constexpr std::chrono::milliseconds kAlivePoll(20);

CoalescerOptions Clamped(CoalescerOptions options) {
  options.max_batch_writes =
      std::clamp<size_t>(options.max_batch_writes, 1, transport::kMaxBatchWrites);
  options.max_batch_bytes = std::min(options.max_batch_bytes, transport::kMaxBatchBytes);
  options.max_batch_gets = std::clamp<size_t>(options.max_batch_gets, 1, transport::kMaxBatchGets);
  return options;
}

}  // namespace

struct Coalescer::Op {
  Request request;
  Clock::time_point deadline;
  absl::CondVar wake;
  bool leader = false;  // this operation's thread sends the lane's next call
  bool sent = false;    // taken into a call
  std::optional<StatusOr<Response>> result;
};

struct Coalescer::Lane {
  bool busy = false;  // a call is in flight, or a leader was chosen to send the next one
  std::deque<std::shared_ptr<Op>> queue;
};

Coalescer::Coalescer(transport::Runtime& runtime, const CoalescerOptions& options)
    : runtime_(runtime), options_(Clamped(options)) {}

Coalescer::~Coalescer() = default;

CoalescerCounters Coalescer::counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
}

StatusOr<Response> Coalescer::Call(NodeId node, Request request, transport::Micros timeout) {
  const std::optional<BatchKind> kind = BatchKindOf(request);
  if (!kind.has_value()) return runtime_.Call(Address::Node(node), std::move(request), timeout);

  absl::MutexLock lock(&mu_);
  // std::map: the reference stays valid while other lanes are added.
  Lane& lane = lanes_[LaneKey(node.value(), *kind)];
  if (!lane.busy) {
    // Nothing in flight: go at once, alone.
    lane.busy = true;
    ++counters_.single_calls;
    mu_.Unlock();
    StatusOr<Response> result = runtime_.Call(Address::Node(node), std::move(request), timeout);
    mu_.Lock();
    PassOnLocked(lane);
    return result;
  }
  auto op = std::make_shared<Op>();
  op->request = std::move(request);
  op->deadline = Clock::now() + std::chrono::microseconds(std::max<transport::Micros>(timeout, 0));
  lane.queue.push_back(op);
  ++counters_.queued;
  while (true) {
    if (op->result.has_value()) return std::move(*op->result);
    const auto now = Clock::now();
    if (!op->sent) {
      const bool expired = now >= op->deadline;
      const bool stopped = !runtime_.Alive();
      if (expired || stopped) {
        // Never sent: leave the queue, and hand the turn on if it was ours.
        lane.queue.erase(std::find(lane.queue.begin(), lane.queue.end(), op));
        --counters_.queued;
        if (op->leader) PassOnLocked(lane);
        if (stopped) return CancelledError("process stopped");
        ++counters_.expired_in_queue;
        return UnavailableError(
            fmt::format("not sent to n{}: the call ahead of it did not return within {} us",
                        node.value(), timeout));
      }
      if (op->leader) break;
    } else if (now >= op->deadline) {
      return DeadlineExceededError(
          fmt::format("no response from n{} within {} us (batched)", node.value(), timeout));
    }
    const Clock::duration wait = std::min(op->deadline, now + kAlivePoll) - now;
    op->wake.WaitWithTimeout(
        &mu_, absl::FromChrono(std::chrono::duration_cast<std::chrono::nanoseconds>(wait)));
  }

  // Our turn: send the head of the queue (starting with this operation) as one call.
  std::vector<std::shared_ptr<Op>> batch = TakeBatchLocked(lane, *kind);
  counters_.queued -= batch.size();
  if (batch.size() == 1) {
    ++counters_.single_calls;
  } else {
    ++counters_.batch_calls;
    counters_.batched_operations += batch.size();
  }
  mu_.Unlock();
  std::vector<StatusOr<Response>> results = Send(node, *kind, batch);
  mu_.Lock();
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i]->result = std::move(results[i]);
    if (batch[i] != op) batch[i]->wake.Signal();
  }
  PassOnLocked(lane);
  return std::move(*op->result);
}

void Coalescer::PassOnLocked(Lane& lane) {
  lane.busy = !lane.queue.empty();
  if (lane.busy) {
    lane.queue.front()->leader = true;
    lane.queue.front()->wake.Signal();
  }
}

std::vector<std::shared_ptr<Coalescer::Op>> Coalescer::TakeBatchLocked(Lane& lane,
                                                                       BatchKind kind) const {
  const size_t max_ops =
      kind == BatchKind::kWrite ? options_.max_batch_writes : options_.max_batch_gets;
  std::vector<std::shared_ptr<Op>> batch;
  size_t bytes = 0;
  while (!lane.queue.empty() && batch.size() < max_ops) {
    const std::shared_ptr<Op>& next = lane.queue.front();
    const size_t size = BatchBytesOf(next->request);
    if (!batch.empty() && bytes + size > options_.max_batch_bytes) break;
    bytes += size;
    next->sent = true;
    batch.push_back(next);
    lane.queue.pop_front();
  }
  return batch;
}

std::vector<StatusOr<Response>> Coalescer::Send(NodeId node, BatchKind kind,
                                                const std::vector<std::shared_ptr<Op>>& ops) {
  // The batch may not outlive the earliest deadline of its operations.
  Clock::time_point deadline = ops.front()->deadline;
  for (const auto& op : ops) deadline = std::min(deadline, op->deadline);
  const auto timeout = std::max<transport::Micros>(
      1, std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now()).count());
  std::vector<StatusOr<Response>> out;
  out.reserve(ops.size());
  if (ops.size() == 1) {
    out.push_back(runtime_.Call(Address::Node(node), std::move(ops.front()->request), timeout));
    return out;
  }

  std::vector<Request> requests;
  requests.reserve(ops.size());
  for (const auto& op : ops) requests.push_back(std::move(op->request));
  return SplitBatchAnswer(
      kind, ops.size(),
      runtime_.Call(Address::Node(node), MakeBatchRequest(kind, std::move(requests)), timeout));
}

}  // namespace shoal::client
