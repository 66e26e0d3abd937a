// StorageNode's batch writes (transport::BatchWriteRequest; docs/design/cluster.md, "Batch
// writes"). Invariants:
//   - a batch outside the limits of transport::ValidateBatch is refused whole, before any write;
//   - each slot's result is the one the same write would have had alone, at the batch's epoch,
//     applied in the request's order (two writes to one key in a batch take effect in that
//     order); one slot's error never stops the others (not atomic);
//   - AT ONCE (the common case): when every write's bucket is served here right now (kServe:
//     no fence, no queue, no switch-then-copy forwarding, a known collection, the client not
//     ahead of the node's map, for a replicated primary an open term with enough replicas), all
//     the admissions are taken together under mu_, without any wait, and the writes go to the
//     store as one BucketStore::ApplyEach (one MultiGet, one WriteBatch); each bucket's
//     in-flight count covers the write, so a Fence that comes after the admissions waits for it
//     and reports a sequence that includes it. Without replicated buckets nothing waits while
//     admissions are held, so a fence is delayed by one engine write at most;
//   - REPLICATED (AT ONCE with buckets this node is the replicated primary of): each such
//     bucket's writes are ordered as one entry (ApplyEachStamped) and sent to its backups, the
//     WAL is synced once, and the batch waits for every entry to commit, holding the admissions
//     as a single replicated write does (storage_node_replica.cc): one stream message per backup
//     and one sync for the whole batch instead of one per write. Each slot's answer is the one
//     its single write would get: unknown when its entry did not commit, and a refusal that
//     reveals the state (a duplicate, a failed condition) only once what it read is committed;
//   - ONE BY ONE (otherwise): every write goes through HandleWrite at the batch's epoch, so
//     admission, fencing, switch-then-copy forwarding and the storage limits are exactly those
//     of a single write; once a write to a key was not handled here (WRONG_SHARD, NOT_SERVING),
//     the later writes to that key in the batch are not handled either (NOT_SERVING): the
//     client resends them all, in order, so they never overtake the earlier one;
//   - when any slot is WRONG_SHARD the response carries the node's map as the route;
//   - DURABILITY: every write is applied without a WAL sync (WalSync::kDeferred), and the WAL is
//     synced once, after the last write and before the response, when the store syncs every
//     write (SyncPolicy::kEveryWrite). So no write is acknowledged before its WAL record is
//     durable, but another client may read a batch's write before it is (a machine crash in
//     that window loses a write that was read; a process crash does not: the record is in the
//     OS page cache). A failed sync turns every written slot into "outcome unknown". A write
//     forwarded to a switch-then-copy source is synced there (a single write) before the source
//     answers, and its local copy is covered by this batch's sync.

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "src/common/point.h"
#include "src/node/storage_node.h"
#include "src/node/write_mutation.h"
#include "src/storage/errors.h"

namespace shoal::node {

using cluster::BucketPlacement;
using transport::Response;

Response StorageNode::HandleBatchWrite(const transport::BatchWriteRequest& request) {
  if (Status s = transport::ValidateBatch(request.writes); !s.ok()) return Response::Error(s);
  bool synced = false;
  std::optional<Response> at_once = ApplyBatchAtOnce(request, &synced);
  Response response = at_once.has_value() ? *std::move(at_once) : ApplyBatchOneByOne(request);
  if (!response.status.ok()) return response;
  auto* out = std::get_if<transport::BatchWriteResponse>(&response.body);
  if (out == nullptr) return Response::Error(InternalError("batch write without results"));
  const bool wrote =
      std::any_of(out->results.begin(), out->results.end(),
                  [](const transport::BatchWriteResult& r) { return r.status.ok(); });
  if (wrote && !synced && store_->options().sync == storage::SyncPolicy::kEveryWrite) {
    if (Status synced = store_->SyncWal(); !synced.ok()) {
      for (transport::BatchWriteResult& result : out->results) {
        if (!result.status.ok()) continue;
        result.status =
            MakeStatus(StatusCode::kUnknown, fmt::format("outcome unknown: written, but the WAL "
                                                         "sync failed: {}",
                                                         synced.ToString()));
      }
    }
  }
  return response;
}

bool StorageNode::AdmittedAtOnce::AnyReplicated() const {
  return std::find(replicated.begin(), replicated.end(), true) != replicated.end();
}

std::optional<StorageNode::AdmittedAtOnce> StorageNode::AdmitAtOnce(
    MapEpoch epoch, std::span<const storage::DocumentKey> keys, Access access) {
  AdmittedAtOnce out;
  out.buckets.reserve(keys.size());
  out.replicated.reserve(keys.size());
  absl::MutexLock lock(&mu_);
  if (map_ == nullptr || epoch > map_->epoch()) return std::nullopt;
  for (const storage::DocumentKey& key : keys) {
    if (collections_.count(key.collection) == 0) return std::nullopt;
    const BucketPlacement& bucket = map_->Lookup(PointOf(key.collection, key.primary_key));
    // Includes a replicated primary's gate (an open term, enough replicas): any other answer,
    // or an error, is left to the one-by-one path, which gives each write its own.
    StatusOr<Admitted> admitted = DecideLocked(bucket, std::nullopt, access);
    if (!admitted.ok() || admitted->admission != Admission::kServe) return std::nullopt;
    out.buckets.push_back(bucket.id);
    out.replicated.push_back(admitted->replicated);
  }
  // All admitted together, with no wait in between (see AT ONCE above).
  for (BucketId bucket : out.buckets) ++inflight_writes_[bucket];
  return out;
}

void StorageNode::ReleaseAtOnce(const std::vector<BucketId>& buckets, Access access) {
  absl::MutexLock lock(&mu_);
  for (BucketId bucket : buckets) --inflight_writes_[bucket];
  switch (access) {
    case Access::kWrite:
      counters_.writes += buckets.size();
      ++counters_.batches_at_once;
      for (BucketId bucket : buckets) write_rates_.Record(bucket);
      break;
    case Access::kRead:
    case Access::kReadAnyReplica:
      counters_.reads += buckets.size();
      for (BucketId bucket : buckets) read_rates_.Record(bucket);
      break;
  }
}

std::optional<Response> StorageNode::ApplyBatchAtOnce(const transport::BatchWriteRequest& request,
                                                      bool* synced) {
  // (ValidateBatch refused any write with via_move: forwarding is per write.)
  std::vector<storage::DocumentKey> keys;
  keys.reserve(request.writes.size());
  for (const transport::WriteRequest& write : request.writes) {
    keys.push_back({.collection = write.collection, .primary_key = write.primary_key});
  }
  std::optional<AdmittedAtOnce> admitted = AdmitAtOnce(request.epoch, keys, Access::kWrite);
  if (!admitted.has_value()) return std::nullopt;
  std::vector<storage::Mutation> mutations;
  mutations.reserve(request.writes.size());
  for (const transport::WriteRequest& write : request.writes) {
    mutations.push_back(MutationOf(write));
  }
  std::vector<StatusOr<storage::MutationResult>> results;
  if (admitted->AnyReplicated()) {
    results = ApplyBatchReplicated(mutations, *admitted);
    *synced = true;
  } else {
    StatusOr<std::vector<StatusOr<storage::MutationResult>>> applied =
        store_->ApplyEach(mutations, storage::WalSync::kDeferred);
    if (applied.ok()) {
      results = *std::move(applied);
    } else {
      results.assign(mutations.size(), applied.status());
    }
  }
  ReleaseAtOnce(admitted->buckets, Access::kWrite);
  // A stopped node answers nothing more: the caller sees the call fail, as for one write.
  if (!runtime_.Alive()) return Response::Error(CancelledError("process stopped"));
  transport::BatchWriteResponse out;
  out.results.reserve(request.writes.size());
  for (size_t i = 0; i < request.writes.size(); ++i) {
    StatusOr<storage::MutationResult>& slot = results[i];
    if (!slot.ok()) {
      out.results.push_back(transport::BatchWriteResult{.status = slot.status(), .version = 0});
      continue;
    }
    RecordWrite(request.writes[i].collection, request.writes[i].primary_key);
    out.results.push_back(
        transport::BatchWriteResult{.status = OkStatus(), .version = slot->version});
  }
  // A crash here loses the answer of applied writes, as in HandleWrite.
  if (Status s = runtime_.Failpoint("node.after_write"); !s.ok()) return Response::Error(s);
  return Response::Ok(std::move(out));
}

Response StorageNode::ApplyBatchOneByOne(const transport::BatchWriteRequest& request) {
  {
    absl::MutexLock lock(&mu_);
    ++counters_.batches_one_by_one;
  }
  transport::BatchWriteResponse out;
  out.results.reserve(request.writes.size());
  cluster::ShardMapPtr route;
  // (collection, key) of the writes that were not handled (resent by the client).
  absl::flat_hash_set<std::pair<uint32_t, std::string_view>> deferred;
  for (const transport::WriteRequest& write : request.writes) {
    const std::pair<uint32_t, std::string_view> key(write.collection.value(), write.primary_key);
    if (deferred.contains(key)) {
      out.results.push_back(transport::BatchWriteResult{
          .status = transport::MakeClusterError(
              transport::ClusterError::kNotServing,
              "an earlier write to this key in the batch was not handled; retry"),
          .version = 0});
      continue;
    }
    transport::WriteRequest single = write;
    single.epoch = request.epoch;
    Response response = HandleWrite(single, storage::WalSync::kDeferred);
    if (response.route != nullptr) route = std::move(response.route);
    const auto cluster_error = transport::ClusterErrorOf(response.status);
    if (cluster_error == transport::ClusterError::kWrongShard ||
        cluster_error == transport::ClusterError::kNotServing ||
        storage::Is(response.status, storage::ErrorReason::kUnavailable)) {
      deferred.insert(key);
    }
    uint64_t version = 0;
    if (const auto* body = std::get_if<transport::WriteResponse>(&response.body)) {
      version = body->version;
    }
    out.results.push_back(
        transport::BatchWriteResult{.status = std::move(response.status), .version = version});
    // A stopped node answers nothing more: the caller sees the call fail, as for one write.
    if (!runtime_.Alive()) return Response::Error(CancelledError("process stopped"));
  }
  return Response{.status = OkStatus(), .body = std::move(out), .route = std::move(route)};
}

}  // namespace shoal::node
