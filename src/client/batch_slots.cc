#include "src/client/batch_slots.h"

#include <algorithm>
#include <utility>
#include <variant>

namespace shoal::client {

using transport::Request;
using transport::Response;

namespace {

// A slot's own Response, as a single call would have had it: WRONG_SHARD carries the route.
Response SlotResponse(Status status, transport::ResponseBody body,
                      const cluster::ShardMapPtr& route) {
  if (status.ok()) return Response::Ok(std::move(body));
  const bool wrong_shard =
      transport::ClusterErrorOf(status) == transport::ClusterError::kWrongShard;
  return Response::Error(std::move(status), wrong_shard ? route : nullptr);
}

}  // namespace

std::optional<BatchKind> BatchKindOf(const Request& request) {
  if (const auto* write = std::get_if<transport::WriteRequest>(&request)) {
    if (!write->via_move.has_value()) return BatchKind::kWrite;
  } else if (const auto* get = std::get_if<transport::GetRequest>(&request)) {
    if (!get->via_move.has_value() && !get->include_tombstones) return BatchKind::kGet;
  }
  return std::nullopt;
}

size_t BatchBytesOf(const Request& request) {
  if (const auto* write = std::get_if<transport::WriteRequest>(&request)) {
    return write->primary_key.size() + write->body.size();
  }
  return 0;
}

Request MakeBatchRequest(BatchKind kind, std::vector<Request> requests) {
  switch (kind) {
    case BatchKind::kWrite: {
      transport::BatchWriteRequest batch{.epoch = {}, .writes = {}};
      batch.writes.reserve(requests.size());
      for (auto& request : requests) {
        auto& write = std::get<transport::WriteRequest>(request);
        batch.epoch = std::max(batch.epoch, write.epoch);
        batch.writes.push_back(std::move(write));
      }
      return batch;
    }
    case BatchKind::kGet: {
      transport::BatchGetRequest batch{.epoch = {}, .gets = {}};
      batch.gets.reserve(requests.size());
      for (auto& request : requests) {
        auto& get = std::get<transport::GetRequest>(request);
        batch.epoch = std::max(batch.epoch, get.epoch);
        batch.gets.push_back(std::move(get));
      }
      return batch;
    }
  }
  return transport::BatchGetRequest{};
}

std::vector<StatusOr<Response>> SplitBatchAnswer(BatchKind kind, size_t slots,
                                                 StatusOr<Response> answer) {
  std::vector<StatusOr<Response>> out;
  out.reserve(slots);
  if (!answer.ok()) {
    // The transport's verdict holds for every operation of the call.
    out.assign(slots, answer.status());
    return out;
  }
  Response& response = *answer;
  if (!response.status.ok()) {
    // Refused whole, before any operation.
    for (size_t i = 0; i < slots; ++i) {
      out.push_back(Response::Error(response.status, response.route));
    }
    return out;
  }
  switch (kind) {
    case BatchKind::kWrite: {
      auto* body = std::get_if<transport::BatchWriteResponse>(&response.body);
      if (body == nullptr || body->results.size() != slots) {
        out.assign(slots, DeadlineExceededError("malformed batch write response"));
        return out;
      }
      for (auto& result : body->results) {
        out.push_back(SlotResponse(std::move(result.status),
                                   transport::WriteResponse{.version = result.version},
                                   response.route));
      }
      return out;
    }
    case BatchKind::kGet: {
      auto* body = std::get_if<transport::BatchGetResponse>(&response.body);
      if (body == nullptr || body->results.size() != slots) {
        out.assign(slots, Response::Error(InternalError("malformed batch get response")));
        return out;
      }
      for (auto& result : body->results) {
        out.push_back(SlotResponse(std::move(result.status),
                                   transport::GetResponse{.document = std::move(result.document)},
                                   response.route));
      }
      return out;
    }
  }
  return out;
}

}  // namespace shoal::client
