#pragma once

// RequestRates: how many requests per second a node serves of each bucket (one instance counts
// reads, another writes), as a decayed rate — paper 001's EMA of a partition's hits (Equation 3,
// cluster::EmaUpdate) over the intervals between load reports, which the balancer uses to place
// primaries by the requests they carry (docs/design/replication.md §7, "Primaries by requests").
//
// Invariants (CheckInvariants):
//   - every rate is finite and >= 0;
//   - requests are folded only over a positive interval: those counted at the instant of the last
//     fold wait for the next one, so no count is lost or divided by zero;
//   - a fold over an interval of length dt with c requests moves a bucket's rate r to
//     a * c/dt + (1 - a) * r with a = 1 - 2^(-dt / half_life): the weight of a request halves every
//     half_life whatever the report interval, and a bucket with none decays toward 0.
//
// Not thread-safe: the owner serializes every call (StorageNode holds mu_).

#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "src/common/ids.h"
#include "src/common/status.h"
#include "src/transport/runtime.h"

namespace shoal::node {

class RequestRates {
 public:
  // Rates decay with this half-life by default: primaries follow a load that lasts
  // minutes, not a burst.
  static constexpr transport::Micros kDefaultHalfLife = 60'000'000;

  // `start`: the instant counting starts (the first fold's interval begins there).
  explicit RequestRates(transport::Micros start, transport::Micros half_life = kDefaultHalfLife);

  // Counts `requests` requests of `bucket`, folded at the next Fold.
  void Record(BucketId bucket, uint64_t requests = 1);
  // Folds the requests counted since the last fold into the rates at time `now`, and forgets the
  // buckets outside `served` (their counts and rates). A `now` not after the last fold folds
  // nothing (the counts wait).
  void Fold(transport::Micros now, const absl::flat_hash_set<BucketId>& served);
  // The rate of `bucket` at the last fold, per second (0 for a bucket never counted).
  [[nodiscard]] double PerSecond(BucketId bucket) const;

  [[nodiscard]] Status CheckInvariants() const;

 private:
  transport::Micros half_life_;
  transport::Micros last_fold_;
  absl::flat_hash_map<BucketId, uint64_t> counts_;  // since last_fold_
  absl::flat_hash_map<BucketId, double> rates_;
};

}  // namespace shoal::node
