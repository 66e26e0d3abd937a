// Client::Batch: many writes, grouped by owning node, one BatchWriteRequest per node and round
// (docs/design/cluster.md, "Batch writes").

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "src/client/client.h"
#include "src/common/point.h"

namespace shoal::client {

using transport::RetryAction;

using transport::Address;
using transport::Response;

namespace {

// How often the calling task looks whether the concurrent calls of CallAll have answered.
constexpr transport::Micros kCallAllPoll = 50;

// The answers of CallAll's spawned tasks; shared, so that a task may finish after its caller
// gave up (stopped process).
struct CallAllState {
  explicit CallAllState(size_t calls) : answers(calls) {}

  absl::Mutex mu;
  std::vector<std::optional<StatusOr<Response>>> answers ABSL_GUARDED_BY(mu);
  size_t answered ABSL_GUARDED_BY(mu) = 0;
};

}  // namespace

std::vector<StatusOr<Response>> Client::CallAll(
    std::vector<std::pair<NodeId, transport::Request>> calls) {
  std::vector<StatusOr<Response>> out;
  out.reserve(calls.size());
  if (calls.empty()) return out;
  auto state = std::make_shared<CallAllState>(calls.size());
  transport::Runtime* runtime = &runtime_;
  const transport::Micros timeout = options_.call_timeout;
  for (size_t i = 1; i < calls.size(); ++i) {
    runtime_.Spawn(runtime_.Self(), "client.batch",
                   [state, runtime, timeout, i, to = calls[i].first,
                    request = std::move(calls[i].second)]() mutable {
                     auto answer = runtime->Call(Address::Node(to), std::move(request), timeout);
                     absl::MutexLock lock(&state->mu);
                     state->answers[i] = std::move(answer);
                     ++state->answered;
                   });
  }
  out.push_back(runtime_.Call(Address::Node(calls[0].first), std::move(calls[0].second), timeout));
  // Runtime rule 2: wait by sleeping, never on a condition variable.
  Status slept;
  while (slept.ok()) {
    {
      absl::MutexLock lock(&state->mu);
      if (state->answered + 1 == calls.size()) break;
    }
    slept = runtime_.Sleep(kCallAllPoll);
  }
  absl::MutexLock lock(&state->mu);
  for (size_t i = 1; i < calls.size(); ++i) {
    if (state->answers[i].has_value()) {
      out.push_back(std::move(*state->answers[i]));
    } else {
      out.push_back(slept);  // the caller was stopped (kCancelled)
    }
  }
  return out;
}

StatusOr<std::vector<StatusOr<uint64_t>>> Client::Batch(
    std::vector<transport::WriteRequest> writes) {
  SHOAL_RETURN_IF_ERROR(transport::ValidateBatch(writes));
  std::vector<std::optional<StatusOr<uint64_t>>> results(writes.size());
  std::vector<size_t> pending(writes.size());
  for (size_t i = 0; i < writes.size(); ++i) pending[i] = i;
  std::vector<Point> points;
  points.reserve(writes.size());
  for (const auto& write : writes) points.push_back(PointOf(write.collection, write.primary_key));

  Status last;
  const transport::Micros started = runtime_.Now();
  int attempt = 0;
  for (; MayRetry(attempt, started) && !pending.empty(); ++attempt) {
    SHOAL_ASSIGN_OR_RETURN(cluster::ShardMapPtr map, CurrentMap());
    // Group by owner, keeping each group in input order (two writes to one key stay ordered).
    std::map<NodeId, std::vector<size_t>> groups;
    for (size_t index : pending) groups[OwnerOf(map->Lookup(points[index]))].push_back(index);
    std::vector<std::vector<size_t>> slots;
    std::vector<std::pair<NodeId, transport::Request>> calls;
    for (auto& [node, indexes] : groups) {
      transport::BatchWriteRequest request{.epoch = map->epoch(), .writes = {}};
      request.writes.reserve(indexes.size());
      for (size_t index : indexes) request.writes.push_back(writes[index]);
      calls.emplace_back(node, std::move(request));
      slots.push_back(std::move(indexes));
    }
    std::vector<StatusOr<Response>> answers = CallAll(std::move(calls));

    std::vector<size_t> retry;
    cluster::ShardMapPtr route;
    bool wrong_shard = false;
    bool back_off = false;
    for (size_t g = 0; g < answers.size(); ++g) {
      const std::vector<size_t>& group = slots[g];
      auto settle_all = [&](const Status& status) {
        for (size_t index : group) results[index] = status;
      };
      // What to do with every write of the group (Classify), or with one slot.
      auto settle = [&](const Status& status, transport::StatusOrigin origin,
                        const std::vector<size_t>& indexes) {
        switch (transport::Classify(status, origin, /*idempotent=*/false)) {
          case RetryAction::kDone:
            return;
          case RetryAction::kLearnRoute:
            wrong_shard = true;
            retry.insert(retry.end(), indexes.begin(), indexes.end());
            return;
          case RetryAction::kResend:
          case RetryAction::kBackOff:
            back_off = true;
            retry.insert(retry.end(), indexes.begin(), indexes.end());
            return;
          case RetryAction::kUnknownOutcome:
            // Some of these writes may have been applied: never resend them blindly.
            for (size_t index : indexes) results[index] = transport::OutcomeUnknown(status);
            return;
          case RetryAction::kGiveUp:
            for (size_t index : indexes) results[index] = status;
            return;
        }
      };
      if (!answers[g].ok()) {
        last = answers[g].status();
        if (last.code() == StatusCode::kCancelled) return last;
        settle(last, transport::StatusOrigin::kCall, group);
        continue;
      }
      Response& response = *answers[g];
      if (response.route != nullptr) route = response.route;
      if (!response.status.ok()) {
        // The whole request was refused before any write.
        last = response.status;
        settle(last, transport::StatusOrigin::kAnswer, group);
        continue;
      }
      auto* body = std::get_if<transport::BatchWriteResponse>(&response.body);
      if (body == nullptr || body->results.size() != group.size()) {
        // Cannot tell which writes were applied.
        settle_all(transport::OutcomeUnknown(InternalError("malformed batch response")));
        continue;
      }
      for (size_t k = 0; k < group.size(); ++k) {
        transport::BatchWriteResult& result = body->results[k];
        const size_t index = group[k];
        if (result.status.ok()) {
          results[index] = result.version;
          continue;
        }
        last = result.status;
        settle(result.status, transport::StatusOrigin::kAnswer, {index});
      }
    }
    // Resend in input order, so that two writes to one key keep their order across rounds.
    std::sort(retry.begin(), retry.end());
    pending = std::move(retry);
    if (pending.empty()) break;
    if (wrong_shard) LearnRoute(route);
    if (back_off) {
      if (!route) (void)Refresh();
      SHOAL_RETURN_IF_ERROR(Backoff(attempt));
    }
  }
  std::vector<StatusOr<uint64_t>> out;
  out.reserve(writes.size());
  for (auto& result : results) {
    if (result.has_value()) {
      out.push_back(std::move(*result));
    } else {
      out.push_back(GaveUp(last, attempt, started));
    }
  }
  return out;
}

}  // namespace shoal::client
