#include "src/node/request_rates.h"

#include <cmath>

#include "fmt/format.h"
#include "src/cluster/bootstrap_planner.h"

namespace shoal::node {

RequestRates::RequestRates(transport::Micros start, transport::Micros half_life)
    : half_life_(half_life > 0 ? half_life : kDefaultHalfLife), last_fold_(start) {}

void RequestRates::Record(BucketId bucket, uint64_t requests) { counts_[bucket] += requests; }

void RequestRates::Fold(transport::Micros now, const absl::flat_hash_set<BucketId>& served) {
  // Buckets no longer served take nothing further: a rate reappears from 0 if the bucket returns.
  absl::erase_if(counts_, [&](const auto& entry) { return !served.contains(entry.first); });
  absl::erase_if(rates_, [&](const auto& entry) { return !served.contains(entry.first); });
  if (now <= last_fold_) return;
  const double seconds = static_cast<double>(now - last_fold_) / 1e6;
  const double alpha =
      1.0 - std::exp2(-static_cast<double>(now - last_fold_) / static_cast<double>(half_life_));
  last_fold_ = now;
  for (auto& [bucket, rate] : rates_) {
    if (!counts_.contains(bucket)) rate = cluster::EmaUpdate(rate, 0.0, alpha);
  }
  for (const auto& [bucket, requests] : counts_) {
    double& rate = rates_[bucket];
    rate = cluster::EmaUpdate(rate, static_cast<double>(requests) / seconds, alpha);
  }
  counts_.clear();
}

double RequestRates::PerSecond(BucketId bucket) const {
  auto it = rates_.find(bucket);
  return it == rates_.end() ? 0.0 : it->second;
}

Status RequestRates::CheckInvariants() const {
  if (half_life_ <= 0) return InternalError(fmt::format("half-life {} us", half_life_));
  for (const auto& [bucket, rate] : rates_) {
    if (!std::isfinite(rate) || rate < 0.0) {
      return InternalError(fmt::format("{} at {} requests per second", bucket.DebugString(), rate));
    }
  }
  return OkStatus();
}

}  // namespace shoal::node
