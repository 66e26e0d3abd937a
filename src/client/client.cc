#include "src/client/client.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "src/common/point.h"
#include "src/storage/collection_name.h"
#include "src/storage/errors.h"
#include "src/transport/point_ranges.h"

namespace shoal::client {

using transport::Address;
using transport::RetryAction;
using transport::StatusOrigin;

namespace {

// A coordinator request (each is safe to repeat): resend when the call failed in transit.
bool IsTransportFailure(const Status& status) {
  return transport::Classify(status, transport::StatusOrigin::kCall, /*idempotent=*/true) ==
         transport::RetryAction::kResend;
}

// Query cursor: [1 byte: 1][8 bytes: point BE][node scan cursor].
std::string EncodeQueryCursor(uint64_t point, std::string_view scan_cursor) {
  std::string out(1, '\x01');
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>(point >> shift));
  out.append(scan_cursor);
  return out;
}

Status DecodeQueryCursor(std::string_view cursor, uint64_t* point, std::string* scan_cursor) {
  if (cursor.size() < 9 || cursor[0] != '\x01') {
    return InvalidArgumentError("malformed query cursor");
  }
  uint64_t p = 0;
  for (int i = 1; i <= 8; ++i) p = (p << 8) | static_cast<uint8_t>(cursor[i]);
  *point = p;
  *scan_cursor = std::string(cursor.substr(9));
  return OkStatus();
}

// The point a node scan cursor resumes at: its stored key starts with the point (big-endian).
uint64_t PointOfScanCursor(std::string_view scan_cursor) {
  uint64_t p = 0;
  for (int i = 1; i <= 8; ++i) p = (p << 8) | static_cast<uint8_t>(scan_cursor[i]);
  return p;
}

// The rest of the bucket that holds `point` in `map`: [point, end of the bucket).
storage::PointRange RestOfBucket(const cluster::BucketPlacement& bucket, uint64_t point) {
  return transport::RestOf(bucket.range, point);
}

}  // namespace

Client::Client(transport::Runtime& runtime, const ClientOptions& options)
    : runtime_(runtime),
      options_(options),
      coalescer_(options.coalesce ? std::make_unique<Coalescer>(runtime) : nullptr),
      pipeline_(std::make_unique<Pipeline>(
          runtime,
          PipelineOptions{.limits = {}, .max_calls_in_flight = options.async_calls_in_flight})) {}

cluster::ShardMapPtr Client::map() const {
  absl::MutexLock lock(&mu_);
  return map_;
}

ClientCounters Client::counters() const {
  ClientCounters out;
  {
    absl::MutexLock lock(&mu_);
    out = counters_;
  }
  if (coalescer_ != nullptr) out.coalescer = coalescer_->counters();
  out.pipeline = pipeline_->counters();
  return out;
}

StatusOr<transport::ClusterState> Client::FetchState() {
  SHOAL_ASSIGN_OR_RETURN(
      auto response,
      runtime_.Call(Address::Coordinator(), transport::GetMapRequest{}, options_.call_timeout));
  SHOAL_ASSIGN_OR_RETURN(auto body, transport::BodyAs<transport::GetMapResponse>(response));
  absl::MutexLock lock(&mu_);
  ++counters_.map_refreshes;
  if (body.state.map != nullptr && (map_ == nullptr || body.state.map->epoch() > map_->epoch())) {
    map_ = body.state.map;
  }
  return std::move(body.state);
}

Status Client::Refresh() { return FetchState().status(); }

bool Client::Adopt(const cluster::ShardMapPtr& map) {
  absl::MutexLock lock(&mu_);
  if (map == nullptr || (map_ != nullptr && map->epoch() <= map_->epoch())) return false;
  map_ = map;
  ++counters_.maps_adopted;
  return true;
}

StatusOr<cluster::ShardMapPtr> Client::CurrentMap() {
  if (auto m = map(); m != nullptr) return m;
  SHOAL_RETURN_IF_ERROR(Refresh());
  if (auto m = map(); m != nullptr) return m;
  return UnavailableError("the cluster has no map yet");
}

void Client::LearnRoute(const cluster::ShardMapPtr& route) {
  {
    absl::MutexLock lock(&mu_);
    ++counters_.wrong_shard;
    if (route != nullptr && (map_ == nullptr || route->epoch() > map_->epoch())) {
      map_ = route;
      return;
    }
  }
  (void)Refresh();
}

Status Client::Backoff(int attempt) {
  {
    absl::MutexLock lock(&mu_);
    ++counters_.retries;
  }
  const transport::Micros cap =
      std::min(options_.max_backoff, options_.initial_backoff << std::min(attempt, 20));
  // Full jitter keeps retrying clients from moving in lockstep.
  const auto wait =
      static_cast<transport::Micros>(runtime_.RandomU64() % static_cast<uint64_t>(cap + 1));
  return runtime_.Sleep(wait);
}

StatusOr<CollectionId> Client::OpenCollection(std::string_view name) {
  SHOAL_RETURN_IF_ERROR(storage::ValidateCollectionName(name));
  const transport::Micros started = runtime_.Now();
  for (int attempt = 0;; ++attempt) {
    auto response = runtime_.Call(Address::Coordinator(),
                                  transport::CreateCollectionRequest{.name = std::string(name)},
                                  options_.call_timeout);
    Status status = response.ok() ? response->status : response.status();
    if (status.ok()) {
      auto body = transport::BodyAs<transport::CreateCollectionResponse>(std::move(*response));
      if (!body.ok()) return body.status();
      return body->collection.id;
    }
    if (!IsTransportFailure(status) || !MayRetry(attempt + 1, started)) return status;
    SHOAL_RETURN_IF_ERROR(Backoff(attempt));
  }
}

StatusOr<CollectionId> Client::FindCollection(std::string_view name) {
  SHOAL_RETURN_IF_ERROR(storage::ValidateCollectionName(name));
  const transport::Micros started = runtime_.Now();
  for (int attempt = 0;; ++attempt) {
    auto state = FetchState();
    if (state.ok()) {
      for (const storage::CollectionSpec& spec : state->collections) {
        if (spec.name == name) return spec.id;
      }
      return storage::StorageError(storage::ErrorReason::kUnknownCollection,
                                   fmt::format("no collection named {:?}", name));
    }
    if (!IsTransportFailure(state.status()) || !MayRetry(attempt + 1, started)) {
      return state.status();
    }
    SHOAL_RETURN_IF_ERROR(Backoff(attempt));
  }
}

bool Client::MayRetry(int attempts, transport::Micros started) const {
  return attempts < options_.max_attempts || runtime_.Now() - started < options_.retry_for;
}

Status Client::GaveUp(const Status& last, int attempts, transport::Micros started) const {
  const std::string message = fmt::format("gave up after {} attempts in {} ms: {}", attempts,
                                          (runtime_.Now() - started) / 1000, last.message());
  // The nodes' reason stays readable (ClusterErrorOf), with the same code.
  const auto error = transport::ClusterErrorOf(last);
  if (error == transport::ClusterError::kNotEnoughReplicas ||
      error == transport::ClusterError::kNotServing) {
    return transport::MakeClusterError(*error, message);
  }
  return UnavailableError(message);
}

Client::Attempt Client::Judge(const StatusOr<transport::Response>& response, bool idempotent) {
  const bool answered = response.ok();
  const Status& status = answered ? response->status : response.status();
  const RetryAction action = transport::Classify(
      status, answered ? StatusOrigin::kAnswer : StatusOrigin::kCall, idempotent);
  switch (action) {
    case RetryAction::kUnknownOutcome:
      return {action, transport::OutcomeUnknown(status)};
    case RetryAction::kGiveUp:
      return {action, status};
    case RetryAction::kDone:
    case RetryAction::kLearnRoute:
    case RetryAction::kResend:
    case RetryAction::kBackOff:
      return {action, OkStatus()};
  }
  return {RetryAction::kGiveUp, status};
}

StatusOr<transport::Response> Client::CallOwner(
    Point point, const std::function<transport::Request(MapEpoch)>& make_request, bool idempotent) {
  Status last;
  const transport::Micros started = runtime_.Now();
  int attempt = 0;
  for (; MayRetry(attempt, started); ++attempt) {
    SHOAL_ASSIGN_OR_RETURN(cluster::ShardMapPtr map, CurrentMap());
    const NodeId owner = OwnerOf(map->Lookup(point));
    auto response = coalescer_ != nullptr
                        ? coalescer_->Call(owner, make_request(map->epoch()), options_.call_timeout)
                        : runtime_.Call(Address::Node(owner), make_request(map->epoch()),
                                        options_.call_timeout);
    last = response.ok() ? response->status : response.status();
    const Attempt judged = Judge(response, idempotent);
    switch (judged.action) {
      case RetryAction::kDone:
        return response;
      case RetryAction::kUnknownOutcome:
      case RetryAction::kGiveUp:
        return judged.error;
      case RetryAction::kLearnRoute:
        LearnRoute(response->route);
        continue;
      case RetryAction::kResend:
        (void)Refresh();
        SHOAL_RETURN_IF_ERROR(Backoff(attempt));
        continue;
      case RetryAction::kBackOff:
        SHOAL_RETURN_IF_ERROR(Backoff(attempt));
        continue;
    }
  }
  return GaveUp(last, attempt, started);
}

StatusOr<uint64_t> Client::Write(transport::WriteRequest request) {
  const Point point = PointOf(request.collection, request.primary_key);
  SHOAL_ASSIGN_OR_RETURN(transport::Response response,
                         CallOwner(
                             point,
                             [&request](MapEpoch epoch) -> transport::Request {
                               request.epoch = epoch;
                               return request;
                             },
                             /*idempotent=*/false));
  SHOAL_ASSIGN_OR_RETURN(auto body, transport::BodyAs<transport::WriteResponse>(response));
  return body.version;
}

StatusOr<uint64_t> Client::Insert(CollectionId c, std::string_view pk, std::string_view json) {
  return Write({.op = transport::WriteOp::kInsert,
                .collection = c,
                .primary_key = std::string(pk),
                .body = std::string(json)});
}
StatusOr<uint64_t> Client::Update(CollectionId c, std::string_view pk, std::string_view json) {
  return Write({.op = transport::WriteOp::kUpdate,
                .collection = c,
                .primary_key = std::string(pk),
                .body = std::string(json)});
}
StatusOr<uint64_t> Client::Upsert(CollectionId c, std::string_view pk, std::string_view json) {
  return Write({.op = transport::WriteOp::kUpsert,
                .collection = c,
                .primary_key = std::string(pk),
                .body = std::string(json)});
}
StatusOr<uint64_t> Client::Delete(CollectionId c, std::string_view pk) {
  return Write(
      {.op = transport::WriteOp::kDelete, .collection = c, .primary_key = std::string(pk)});
}
StatusOr<uint64_t> Client::CompareAndSet(CollectionId c, std::string_view pk,
                                         uint64_t expected_version, std::string_view json) {
  return Write({.op = transport::WriteOp::kCompareAndSet,
                .collection = c,
                .primary_key = std::string(pk),
                .body = std::string(json),
                .expected_version = expected_version});
}

StatusOr<storage::Document> Client::Get(CollectionId c, std::string_view pk) {
  SHOAL_ASSIGN_OR_RETURN(transport::Response response,
                         CallOwner(
                             PointOf(c, pk),
                             [&](MapEpoch epoch) -> transport::Request {
                               return transport::GetRequest{
                                   .epoch = epoch, .collection = c, .primary_key = std::string(pk)};
                             },
                             /*idempotent=*/true));
  SHOAL_ASSIGN_OR_RETURN(auto body, transport::BodyAs<transport::GetResponse>(response));
  return std::move(body.document);
}

StatusOr<storage::Document> Client::GetAnyReplica(CollectionId c, std::string_view pk) {
  SHOAL_ASSIGN_OR_RETURN(cluster::ShardMapPtr map, CurrentMap());
  const cluster::BucketPlacement& bucket = map->Lookup(PointOf(c, pk));
  // Spread over the copies in turn; a copy that does not answer with the document or a final
  // error (it moved, lags, or is down) passes the read to the next, and after every copy the
  // primary takes it as a latest read.
  const size_t copies = bucket.replicas.size();
  const uint64_t first = copies > 1 ? next_replica_.fetch_add(1, std::memory_order_relaxed) : 0;
  for (size_t i = 0; copies > 1 && i < copies; ++i) {
    const NodeId replica = bucket.replicas[(first + i) % copies];
    auto response = runtime_.Call(Address::Node(replica),
                                  transport::GetRequest{.epoch = map->epoch(),
                                                        .collection = c,
                                                        .primary_key = std::string(pk),
                                                        .any_replica = true},
                                  options_.call_timeout);
    const Attempt judged = Judge(response, /*idempotent=*/true);
    switch (judged.action) {
      case RetryAction::kDone: {
        SHOAL_ASSIGN_OR_RETURN(auto body, transport::BodyAs<transport::GetResponse>(*response));
        return std::move(body.document);
      }
      case RetryAction::kGiveUp:
        return judged.error;
      case RetryAction::kUnknownOutcome:
      case RetryAction::kLearnRoute:
      case RetryAction::kResend:
      case RetryAction::kBackOff:
        break;
    }
  }
  return Get(c, pk);
}

StatusOr<QueryPage> Client::Query(const QueryOptions& options) {
  if (options.limit == 0) return InvalidArgumentError("query limit must be at least 1");
  SHOAL_RETURN_IF_ERROR(storage::ValidateFilter(options.filter));
  uint64_t point = 0;
  std::string scan_cursor;
  if (!options.cursor.empty()) {
    SHOAL_RETURN_IF_ERROR(DecodeQueryCursor(options.cursor, &point, &scan_cursor));
  }
  QueryPage page;
  ScanRetries retries;
  while (page.documents.size() < options.limit) {
    SHOAL_ASSIGN_OR_RETURN(cluster::ShardMapPtr map, CurrentMap());
    const cluster::BucketPlacement& bucket = map->Lookup(Point(point));
    // From the current position to the end of the bucket that holds it in this map.
    storage::PointRange range = RestOfBucket(bucket, point);
    transport::ScanRequest request{
        .epoch = map->epoch(),
        .bucket = bucket.id,
        .range = range,
        .collection = options.collection,
        .filter = options.filter,
        .cursor = scan_cursor,
        .max_documents = static_cast<uint32_t>(options.limit - page.documents.size())};
    auto response = runtime_.Call(Address::Node(OwnerOf(bucket)), request, options_.call_timeout);
    Status status = response.ok() ? response->status : response.status();
    if (!status.ok()) {
      SHOAL_RETURN_IF_ERROR(AfterScanFailure(
          status, response.ok() ? StatusOrigin::kAnswer : StatusOrigin::kCall,
          response.ok() ? response->route : nullptr, /*delivered=*/false, &retries));
      continue;
    }
    retries = {};
    auto body = transport::BodyAs<transport::ScanResponse>(std::move(*response));
    if (!body.ok()) return body.status();
    for (auto& document : body->documents) page.documents.push_back(std::move(document));
    if (!body->next_cursor.empty()) {
      scan_cursor = std::move(body->next_cursor);
      // The cursor's stored key starts with its point: resume there, whoever owns it then.
      point = PointOfScanCursor(scan_cursor);
      continue;
    }
    scan_cursor.clear();
    if (bucket.range.end_is_max()) {
      return page;  // the whole hash space is done
    }
    point = bucket.range.end();
  }
  page.next_cursor = EncodeQueryCursor(point, scan_cursor);
  return page;
}

Status Client::AfterScanFailure(const Status& status, transport::StatusOrigin origin,
                                const cluster::ShardMapPtr& route, bool delivered,
                                ScanRetries* retries) {
  const RetryAction action = transport::Classify(status, origin, /*idempotent=*/true);
  if (!transport::BacksOff(action) && action != RetryAction::kLearnRoute) return status;
  // A stream that delivered pages before it broke made progress: its retries start afresh.
  if (delivered || retries->attempts == 0) *retries = {.attempts = 0, .started = runtime_.Now()};
  if (!MayRetry(++retries->attempts, retries->started)) return status;
  if (action == RetryAction::kLearnRoute) {
    LearnRoute(route);
    return OkStatus();
  }
  if (action == RetryAction::kResend) (void)Refresh();
  return Backoff(retries->attempts);
}

Status Client::QueryStream(const QueryOptions& options,
                           const std::function<Status(storage::Document)>& fn) {
  if (options.limit == 0) return InvalidArgumentError("query limit must be at least 1");
  SHOAL_RETURN_IF_ERROR(storage::ValidateFilter(options.filter));
  uint64_t point = 0;
  std::string scan_cursor;
  if (!options.cursor.empty()) {
    SHOAL_RETURN_IF_ERROR(DecodeQueryCursor(options.cursor, &point, &scan_cursor));
  }
  ScanRetries retries;
  while (true) {
    SHOAL_ASSIGN_OR_RETURN(cluster::ShardMapPtr map, CurrentMap());
    const cluster::BucketPlacement& bucket = map->Lookup(Point(point));
    transport::ScanRequest request{.epoch = map->epoch(),
                                   .bucket = bucket.id,
                                   .range = RestOfBucket(bucket, point),
                                   .collection = options.collection,
                                   .filter = options.filter,
                                   .cursor = scan_cursor,
                                   .max_documents = options.limit,
                                   .via_move = std::nullopt,
                                   .include_tombstones = false,
                                   .max_bytes = 0};
    bool delivered = false;  // a page arrived on this stream
    bool exhausted = false;  // the bucket's rest was read to its end
    Status refused;          // an error page: WRONG_SHARD, NOT_SERVING...
    cluster::ShardMapPtr route;
    Status stopped;  // fn's error
    Status status = runtime_.StreamScan(
        Address::Node(OwnerOf(bucket)), std::move(request), options_.stream_timeout,
        [&](transport::Response response) -> Status {
          if (!response.status.ok()) {
            refused = std::move(response.status);
            route = std::move(response.route);
            return OkStatus();
          }
          auto body = transport::BodyAs<transport::ScanResponse>(std::move(response));
          if (!body.ok()) return body.status();
          for (auto& document : body->documents) {
            stopped = fn(std::move(document));
            if (!stopped.ok()) return stopped;
          }
          delivered = true;
          // The cursor moves only after the page's documents were all handed over.
          if (body->next_cursor.empty()) {
            exhausted = true;
          } else {
            scan_cursor = std::move(body->next_cursor);
            point = PointOfScanCursor(scan_cursor);
          }
          return OkStatus();
        });
    if (!stopped.ok()) return stopped;
    StatusOrigin origin = StatusOrigin::kCall;
    if (status.ok() && !refused.ok()) {
      status = refused;
      origin = StatusOrigin::kAnswer;
    }
    if (!status.ok()) {
      SHOAL_RETURN_IF_ERROR(AfterScanFailure(status, origin, route, delivered, &retries));
      continue;
    }
    if (!exhausted) {
      // The stream ended before its range did, without an error: reopen it from the cursor.
      if (!delivered) {
        if (retries.attempts == 0) retries.started = runtime_.Now();
        if (!MayRetry(++retries.attempts, retries.started)) {
          return UnavailableError("scan streams keep ending before their range");
        }
      }
      continue;
    }
    retries = {};
    scan_cursor.clear();
    if (bucket.range.end_is_max()) return OkStatus();  // the whole hash space is done
    point = bucket.range.end();
  }
}

}  // namespace shoal::client
