#include "src/client/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace shoal::client {

using transport::Address;
using transport::Request;
using transport::Response;

struct Pipeline::Delivery {
  Pipeline* pipeline;
  std::deque<Result> results;
  std::vector<LaneKey> flush;
};

namespace {

// The delivery running on this thread, if any (Pipeline's trampoline). Opaque here: only
// Pipeline's members look inside.
thread_local void* t_delivery = nullptr;

PipelineOptions Clamped(PipelineOptions options) {
  options.limits.max_batch_writes =
      std::clamp<size_t>(options.limits.max_batch_writes, 1, transport::kMaxBatchWrites);
  options.limits.max_batch_bytes =
      std::min(options.limits.max_batch_bytes, transport::kMaxBatchBytes);
  options.limits.max_batch_gets =
      std::clamp<size_t>(options.limits.max_batch_gets, 1, transport::kMaxBatchGets);
  options.max_calls_in_flight = std::max<size_t>(options.max_calls_in_flight, 1);
  return options;
}

}  // namespace

Pipeline::Pipeline(transport::Runtime& runtime, const PipelineOptions& options)
    : runtime_(runtime), options_(Clamped(options)) {}

Pipeline::~Pipeline() {
  // A call's completion may still be delivering or flushing after the last `done` returned.
  absl::MutexLock lock(&mu_);
  while (calls_running_ != 0) idle_.Wait(&mu_);
}

void Pipeline::CallRunning() {
  absl::MutexLock lock(&mu_);
  ++calls_running_;
}

void Pipeline::CallEnded() {
  absl::MutexLock lock(&mu_);
  if (--calls_running_ == 0) idle_.SignalAll();
  // Nothing of the pipeline is touched after the lock is released: the destructor may run.
}

PipelineCounters Pipeline::counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
}

void Pipeline::Submit(NodeId node, Request request, transport::Micros timeout, Done done) {
  const std::optional<BatchKind> kind = BatchKindOf(request);
  if (!kind.has_value()) {
    CallRunning();
    runtime_.CallAsync(Address::Node(node), std::move(request), timeout,
                       [this, done = std::move(done)](StatusOr<Response> answer) {
                         std::vector<Result> results;
                         results.emplace_back(done, std::move(answer));
                         Deliver(std::move(results), {});
                         CallEnded();
                       });
    return;
  }
  const LaneKey key(node.value(), *kind);
  std::vector<Batch> batches;
  std::vector<Result> expired;
  {
    absl::MutexLock lock(&mu_);
    // std::map: the reference stays valid while other lanes are added.
    Lane& lane = lanes_[key];
    lane.queue.push_back(Op{.request = std::move(request),
                            .deadline = Clock::now() + std::chrono::microseconds(
                                                           std::max<transport::Micros>(timeout, 0)),
                            .done = std::move(done)});
    auto* delivery = static_cast<Delivery*>(t_delivery);
    if (delivery != nullptr && delivery->pipeline == this) {
      // Submitted by a callback: goes out with the others when the delivery ends.
      delivery->flush.push_back(key);
      return;
    }
    TakeLocked(key, lane, &batches, &expired);
  }
  for (Batch& batch : batches) Send(std::move(batch));
  if (!expired.empty()) Deliver(std::move(expired), {});
}

void Pipeline::TakeLocked(const LaneKey& key, Lane& lane, std::vector<Batch>* batches,
                          std::vector<Result>* expired) {
  const auto now = Clock::now();
  for (auto it = lane.queue.begin(); it != lane.queue.end();) {
    if (it->deadline > now) {
      ++it;
      continue;
    }
    ++counters_.expired_in_queue;
    expired->emplace_back(
        std::move(it->done),
        UnavailableError(fmt::format(
            "not sent to n{}: the calls ahead of it did not return in time", key.first)));
    it = lane.queue.erase(it);
  }
  const size_t limit = key.second == BatchKind::kWrite ? options_.limits.max_batch_writes
                                                       : options_.limits.max_batch_gets;
  // Each call's share of what the lane holds, so that the calls in flight are of like size.
  const size_t calls = options_.max_calls_in_flight;
  const size_t share = (lane.queue.size() + lane.ops_in_flight + calls - 1) / calls;
  const size_t max_ops = std::clamp<size_t>(share, 1, limit);
  while (lane.in_flight < options_.max_calls_in_flight && !lane.queue.empty()) {
    Batch batch{.node = NodeId(key.first), .kind = key.second, .ops = {}};
    size_t bytes = 0;
    while (!lane.queue.empty() && batch.ops.size() < max_ops) {
      const size_t size = BatchBytesOf(lane.queue.front().request);
      if (!batch.ops.empty() && bytes + size > options_.limits.max_batch_bytes) break;
      bytes += size;
      batch.ops.push_back(std::move(lane.queue.front()));
      lane.queue.pop_front();
    }
    ++lane.in_flight;
    lane.ops_in_flight += batch.ops.size();
    if (batch.ops.size() == 1) {
      ++counters_.single_calls;
    } else {
      ++counters_.batch_calls;
      counters_.batched_operations += batch.ops.size();
    }
    batches->push_back(std::move(batch));
  }
}

void Pipeline::Send(Batch batch) {
  // The call may not outlive the earliest deadline of its operations.
  Clock::time_point deadline = batch.ops.front().deadline;
  for (const Op& op : batch.ops) deadline = std::min(deadline, op.deadline);
  const auto timeout = std::max<transport::Micros>(
      1, std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now()).count());
  const LaneKey key(batch.node.value(), batch.kind);
  // Shared so that the completion (a std::function) stays copyable.
  auto dones = std::make_shared<std::vector<Done>>();
  dones->reserve(batch.ops.size());
  std::vector<Request> requests;
  requests.reserve(batch.ops.size());
  for (Op& op : batch.ops) {
    dones->push_back(std::move(op.done));
    requests.push_back(std::move(op.request));
  }
  const Address to = Address::Node(batch.node);
  CallRunning();
  if (requests.size() == 1) {
    runtime_.CallAsync(to, std::move(requests.front()), timeout,
                       [this, key, dones](StatusOr<Response> answer) {
                         std::vector<Result> results;
                         results.emplace_back(std::move(dones->front()), std::move(answer));
                         Returned(key, std::move(results));
                         CallEnded();
                       });
    return;
  }
  const BatchKind kind = batch.kind;
  runtime_.CallAsync(to, MakeBatchRequest(kind, std::move(requests)), timeout,
                     [this, key, kind, dones](StatusOr<Response> answer) {
                       std::vector<StatusOr<Response>> slots =
                           SplitBatchAnswer(kind, dones->size(), std::move(answer));
                       std::vector<Result> results;
                       results.reserve(slots.size());
                       for (size_t i = 0; i < slots.size(); ++i) {
                         results.emplace_back(std::move((*dones)[i]), std::move(slots[i]));
                       }
                       Returned(key, std::move(results));
                       CallEnded();
                     });
}

void Pipeline::Returned(const LaneKey& key, std::vector<Result> results) {
  {
    absl::MutexLock lock(&mu_);
    Lane& lane = lanes_[key];
    --lane.in_flight;
    lane.ops_in_flight -= results.size();
  }
  Deliver(std::move(results), {key});
}

void Pipeline::Deliver(std::vector<Result> results, std::vector<LaneKey> flush) {
  if (auto* running = static_cast<Delivery*>(t_delivery);
      running != nullptr && running->pipeline == this) {
    for (Result& result : results) running->results.push_back(std::move(result));
    running->flush.insert(running->flush.end(), flush.begin(), flush.end());
    return;
  }
  Delivery delivery{.pipeline = this, .results = {}, .flush = std::move(flush)};
  for (Result& result : results) delivery.results.push_back(std::move(result));
  void* const outer = t_delivery;  // another pipeline's delivery, whose callback got here
  t_delivery = &delivery;
  while (!delivery.results.empty() || !delivery.flush.empty()) {
    while (!delivery.results.empty()) {
      Result result = std::move(delivery.results.front());
      delivery.results.pop_front();
      result.first(std::move(result.second));
    }
    std::vector<LaneKey> keys;
    keys.swap(delivery.flush);
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    for (const LaneKey& key : keys) {
      std::vector<Result> expired;
      Flush(key, &expired);
      for (Result& result : expired) delivery.results.push_back(std::move(result));
    }
  }
  t_delivery = outer;
}

void Pipeline::Flush(const LaneKey& key, std::vector<Result>* expired) {
  std::vector<Batch> batches;
  {
    absl::MutexLock lock(&mu_);
    TakeLocked(key, lanes_[key], &batches, expired);
  }
  for (Batch& batch : batches) Send(std::move(batch));
}

}  // namespace shoal::client
