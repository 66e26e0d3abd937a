#include "src/coordinator/resizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "src/common/log.h"
#include "src/coordinator/coordinator_internal.h"

namespace shoal::coordinator {

using cluster::ShardMap;
using cluster::ShardMapEdit;
using cluster::ShardMapPtr;
using transport::Address;

Resizer::Resizer(transport::Runtime& runtime, std::shared_ptr<MapCommitter> committer,
                 transport::Micros call_timeout)
    : runtime_(runtime), committer_(std::move(committer)), call_timeout_(call_timeout) {}

Status Resizer::Split(BucketId bucket, std::optional<uint64_t> at) {
  return Resize({bucket}, internal::SplitBucketEdit(bucket, at));
}

Status Resizer::Merge(BucketId left, BucketId right) {
  return Resize({left, right}, internal::MergeBucketsEdit(left, right));
}

StatusOr<ShardMapPtr> Resizer::KnownMap() {
  // An edit that changes nothing commits nothing; CommitEdit reloads a map it does not know.
  return committer_->CommitEdit([](const ShardMap&, ShardMapEdit*) { return OkStatus(); });
}

Status Resizer::Resize(const std::vector<BucketId>& buckets,
                       const MapCommitter::EditBuilder& build) {
  const ShardMapPtr map = committer_->map();
  if (map == nullptr) return FailedPreconditionError("the cluster is not initialized");
  if (map->replication_factor() <= 1) return committer_->CommitEdit(build).status();
  // Refused now rather than after a quiesce: the edit must apply to the map as it is.
  {
    ShardMapEdit dry(map->epoch());
    SHOAL_RETURN_IF_ERROR(build(*map, &dry));
    SHOAL_RETURN_IF_ERROR(cluster::Apply(*map, dry).status());
  }
  const MapEpoch epoch = map->epoch();
  const NodeId primary = map->Find(buckets.front())->replicas.front();
  uint64_t token = 0;
  {
    absl::MutexLock lock(&mu_);
    for (BucketId bucket : buckets) {
      if (resizing_.contains(bucket)) {
        return UnavailableError(
            fmt::format("{} is being split or merged already", bucket.DebugString()));
      }
    }
    resizing_.insert(buckets.begin(), buckets.end());
    token = std::max(last_token_ + 1, static_cast<uint64_t>(std::max<int64_t>(runtime_.Now(), 0)));
    last_token_ = token;
    active_tokens_.insert(token);
  }
  const auto quiesce = [&](bool release) {
    return runtime_.Call(
        Address::Node(primary),
        transport::QuiesceRequest{
            .epoch = epoch, .buckets = buckets, .token = token, .release = release},
        call_timeout_);
  };
  Status result = OkStatus();
  auto quiesced = quiesce(/*release=*/false);
  if (!quiesced.ok()) {
    result = quiesced.status();
  } else if (!quiesced->status.ok()) {
    result = quiesced->status;
  } else if (Status s = runtime_.Failpoint("coordinator.after_quiesce"); !s.ok()) {
    result = s;
  } else {
    result = committer_
                 ->CommitEdit([&](const ShardMap& current, ShardMapEdit* edit) {
                   if (current.epoch() != epoch) {
                     return AbortedError(
                         fmt::format("the map changed from {} while n{} was quiesced; retry",
                                     epoch.DebugString(), primary.value()));
                   }
                   return build(current, edit);
                 })
                 .status();
  }
  bool release = false;
  if (!result.ok()) {
    // The commit's outcome is settled before the quiesce is let go.
    auto known = KnownMap();
    release = known.ok() && (*known)->epoch() == epoch;
  }
  {
    absl::MutexLock lock(&mu_);
    for (BucketId bucket : buckets) resizing_.erase(bucket);
    active_tokens_.erase(token);
  }
  if (release) (void)quiesce(/*release=*/true);
  if (!result.ok()) {
    log::Info("resize.failed", {{"buckets", buckets.front().value()},
                                {"primary", primary.value()},
                                {"epoch", epoch.value()},
                                {"error", result.ToString()}});
  }
  return result;
}

std::vector<transport::QuiescedBucket> Resizer::Release(
    MapEpoch epoch, const std::vector<transport::QuiescedBucket>& quiesced) {
  if (quiesced.empty()) return {};
  std::vector<transport::QuiescedBucket> released;
  // Decided under the committer's edit lock, on the stored map: a resize's commit is either
  // before (its token is active, or the map is past `epoch`) or never (see QUIESCED RESIZE).
  auto known = committer_->CommitEdit([&](const ShardMap& current, ShardMapEdit*) {
    if (current.epoch() != epoch) return OkStatus();  // the node learns the newer map first
    absl::MutexLock lock(&mu_);
    for (const transport::QuiescedBucket& q : quiesced) {
      if (!active_tokens_.contains(q.token)) released.push_back(q);
    }
    return OkStatus();
  });
  if (!known.ok()) return {};
  return released;
}

}  // namespace shoal::coordinator
