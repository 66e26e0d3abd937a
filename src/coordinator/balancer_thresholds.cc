// The balancer's split and merge thresholds: validation, storage and the admin setter.

#include <fmt/format.h>

#include <charconv>
#include <string>

#include "src/coordinator/balancer_loop.h"

namespace shoal::coordinator {
namespace {

constexpr char kThresholdsKey[] = "cluster/thresholds";

Status CheckBounds(std::string_view name, uint64_t bytes) {
  if (bytes == 0 || (bytes >= kMinThresholdBytes && bytes <= kMaxThresholdBytes)) {
    return OkStatus();
  }
  return InvalidArgumentError(fmt::format("{} = {} is outside [{}, {}] (0 turns it off)",
                                          std::string(name), bytes, kMinThresholdBytes,
                                          kMaxThresholdBytes));
}

std::string EncodeThresholds(const Thresholds& thresholds) {
  return fmt::format("{} {}", thresholds.split_bytes, thresholds.merge_bytes);
}

StatusOr<Thresholds> DecodeThresholds(std::string_view text) {
  Thresholds out;
  const char* end = text.data() + text.size();
  auto split = std::from_chars(text.data(), end, out.split_bytes);
  if (split.ec != std::errc() || split.ptr == end || *split.ptr != ' ') {
    return InternalError(fmt::format("corrupt {}: '{}'", kThresholdsKey, std::string(text)));
  }
  auto merge = std::from_chars(split.ptr + 1, end, out.merge_bytes);
  if (merge.ec != std::errc() || merge.ptr != end) {
    return InternalError(fmt::format("corrupt {}: '{}'", kThresholdsKey, std::string(text)));
  }
  return out;
}

}  // namespace

Status ValidateThresholds(const Thresholds& thresholds) {
  SHOAL_RETURN_IF_ERROR(CheckBounds("split_bytes", thresholds.split_bytes));
  SHOAL_RETURN_IF_ERROR(CheckBounds("merge_bytes", thresholds.merge_bytes));
  if (thresholds.split_bytes != 0 && thresholds.merge_bytes != 0 &&
      thresholds.merge_bytes * 2 >= thresholds.split_bytes) {  // bounded: no overflow
    return InvalidArgumentError(
        fmt::format("merge_bytes = {} must be below half of split_bytes = {}, or a bucket "
                    "could split and merge again and again",
                    thresholds.merge_bytes, thresholds.split_bytes));
  }
  return OkStatus();
}

Status BalancerLoop::LoadThresholds() {
  auto stored = store_.Get(kThresholdsKey);
  if (!stored.ok()) {
    return stored.status().code() == StatusCode::kNotFound ? OkStatus() : stored.status();
  }
  SHOAL_ASSIGN_OR_RETURN(Thresholds thresholds, DecodeThresholds(stored->value));
  absl::MutexLock lock(&mu_);
  thresholds_ = thresholds;
  return OkStatus();
}

Thresholds BalancerLoop::thresholds() const {
  absl::MutexLock lock(&mu_);
  return thresholds_;
}

Status BalancerLoop::SetThresholds(std::optional<uint64_t> split_bytes,
                                   std::optional<uint64_t> merge_bytes) {
  absl::MutexLock setter_lock(&set_thresholds_mu_);
  Thresholds next = thresholds();
  if (split_bytes.has_value()) next.split_bytes = *split_bytes;
  if (merge_bytes.has_value()) next.merge_bytes = *merge_bytes;
  SHOAL_RETURN_IF_ERROR(ValidateThresholds(next));
  SHOAL_RETURN_IF_ERROR(
      store_.Put(kThresholdsKey, EncodeThresholds(next), metadata::kAnyVersion).status());
  absl::MutexLock lock(&mu_);
  thresholds_ = next;
  idle_at_.reset();
  ++admin_generation_;  // the loop starts its next round now
  return OkStatus();
}

}  // namespace shoal::coordinator
